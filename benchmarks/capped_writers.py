"""Concurrent writers of one run, with and without ``max_pages`` (issue 13, item 1).

A capped run's admissions spend its budget, held on PostgreSQL in slots that admissions
side by side lock one each (store/postgres/budget.py; until migration 0012 they all locked
the run's row from their insert to their commit); an uncapped run's need no budget. This
measures what the cap costs: ``--writers`` in-process writers, each with its own store
(its own connections), acquire and report the same run as fast as they can, each report
discovering 25 links (half known, half new), first uncapped, then capped (a
``max_pages`` never reached), alternately.

    python benchmarks/capped_writers.py [--backend postgres|sqlite] [--pg-dsn DSN]
        [--writers 4] [--tasks 8000] [--rounds 2]
"""

from __future__ import annotations

import argparse
import asyncio
import random
import sys
import tempfile
import time
from pathlib import Path

from fleet_store import host_tasks
from workers import DEFAULT_PG, fresh_store, reports_with_links

from sitesync.models import NewTask, RunConfig, RunStatus
from sitesync.store import open_store

LINKS, ACQUIRE, REPORT, HOSTS = 25, 32, 256, 40


async def writer(db: str, run_id: int, worker: str, initial: list[NewTask], share: int) -> int:
    """Acquire ``share`` tasks, ``ACQUIRE`` at a time, and report them ``REPORT`` at a time."""
    store = await open_store(db)
    rng, fresh, done = random.Random(worker), 10**7 * (1 + int(worker[1:])), 0
    try:
        while done < share:
            held = []
            while len(held) < REPORT and done + len(held) < share:
                got = await store.acquire(
                    run_id, worker_id=worker, limit=ACQUIRE, lease_seconds=300
                )
                if not got:
                    break
                held += got
            if not held:
                break
            reports, fresh = reports_with_links(held, initial, LINKS, rng, fresh)
            await store.report(run_id, reports)
            done += len(held)
    finally:
        await store.close()
    return done


async def lifecycles_per_second(db: str, *, capped: bool, writers: int, tasks: int) -> float:
    store = await open_store(db)
    try:
        config = RunConfig(seeds=("http://h0.bench.invalid/",), max_pages=10**9 if capped else None)
        run = await store.create_run(config)
        await store.transition_run(run.id, RunStatus.RUNNING)
        await store.mark_seeded(run.id)
        initial = host_tasks(0, tasks, HOSTS)
        for i in range(0, tasks, 1000):
            await store.add_tasks(run.id, initial[i : i + 1000])
    finally:
        await store.close()
    started = time.perf_counter()
    shares = [writer(db, run.id, f"w{k}", initial, tasks // writers) for k in range(writers)]
    done = sum(await asyncio.gather(*shares))
    return done / (time.perf_counter() - started)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--backend", choices=("postgres", "sqlite"), default="postgres")
    p.add_argument("--pg-dsn", default=DEFAULT_PG)
    p.add_argument("--writers", type=int, default=4)
    p.add_argument("--tasks", type=int, default=8000)
    p.add_argument("--rounds", type=int, default=2)
    args = p.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        for _ in range(args.rounds):
            for capped in (False, True):
                with fresh_store(args.backend, Path(tmp), args.pg_dsn) as db:
                    rate = asyncio.run(
                        lifecycles_per_second(
                            db, capped=capped, writers=args.writers, tasks=args.tasks
                        )
                    )
                label = "max_pages set" if capped else "uncapped"
                print(
                    f"{args.backend} {label:13s} {args.writers} writers: {rate:,.0f} lifecycles/s"
                )
    return 0


if __name__ == "__main__":
    sys.exit(main())
