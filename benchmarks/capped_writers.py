"""Concurrent writers of one run, with and without ``max_pages`` (issue 13, item 1).

A capped run's admissions spend its budget, held on PostgreSQL in slots that admissions
side by side lock one each (store/postgres/budget.py; until migration 0012 they all locked
the run's row from their insert to their commit); an uncapped run's need no budget. This
measures what the cap costs: ``--writers`` in-process writers, each with its own store
(its own connections), acquire and report the same run as fast as they can, each report
discovering 25 links (half known, half new), first uncapped, then capped (a
``max_pages`` never reached), alternately.

``--near-cap N`` instead sets ``max_pages`` to the initial tasks plus N, so that the writers'
admissions reach the cap while running side by side, and reports how many admissions found
no free budget slot while budget was held by others (PostgreSQL's debug line: new URLs past
their room were turned away) and whether the run still ended at exactly the cap.

    python benchmarks/capped_writers.py [--backend postgres|sqlite] [--pg-dsn DSN]
        [--writers 4] [--tasks 8000] [--rounds 2] [--near-cap N]
"""

from __future__ import annotations

import argparse
import asyncio
import logging
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


class TurnAways(logging.Handler):
    """Counts the budget's "turned away" debug lines (PostgreSQL)."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.count = 0

    def emit(self, record: logging.LogRecord) -> None:
        self.count += "turned away" in record.getMessage()


async def near_cap(db: str, *, writers: int, tasks: int, budget: int) -> str:
    """Writers whose admissions reach a cap of ``tasks + budget`` side by side."""
    counter = TurnAways()
    budget_log = logging.getLogger("sitesync.store.postgres.budget")
    budget_log.setLevel(logging.DEBUG)
    budget_log.addHandler(counter)
    try:
        rate, run_id = await lifecycles_per_second(
            db, cap=tasks + budget, writers=writers, tasks=tasks
        )
    finally:
        budget_log.removeHandler(counter)
    store = await open_store(db)
    try:
        total = (await store.get_run(run_id)).counters.tasks_total
    finally:
        await store.close()
    return (
        f"{rate:,.0f} lifecycles/s; tasks {total:,} of max_pages {tasks + budget:,}; "
        f"{counter.count} admissions found no free slot with budget held elsewhere"
    )


async def lifecycles_per_second(
    db: str, *, cap: int | None, writers: int, tasks: int
) -> tuple[float, int]:
    store = await open_store(db)
    try:
        config = RunConfig(seeds=("http://h0.bench.invalid/",), max_pages=cap)
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
    return done / (time.perf_counter() - started), run.id


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--backend", choices=("postgres", "sqlite"), default="postgres")
    p.add_argument("--pg-dsn", default=DEFAULT_PG)
    p.add_argument("--writers", type=int, default=4)
    p.add_argument("--tasks", type=int, default=8000)
    p.add_argument("--rounds", type=int, default=2)
    p.add_argument("--near-cap", type=int, metavar="N", help="max_pages = tasks + N")
    args = p.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        for _ in range(args.rounds):
            if args.near_cap is not None:
                with fresh_store(args.backend, Path(tmp), args.pg_dsn) as db:
                    outcome = asyncio.run(
                        near_cap(db, writers=args.writers, tasks=args.tasks, budget=args.near_cap)
                    )
                print(f"{args.backend} near the cap, {args.writers} writers: {outcome}")
                continue
            for capped in (False, True):
                with fresh_store(args.backend, Path(tmp), args.pg_dsn) as db:
                    rate, _ = asyncio.run(
                        lifecycles_per_second(
                            db,
                            cap=10**9 if capped else None,
                            writers=args.writers,
                            tasks=args.tasks,
                        )
                    )
                label = "max_pages set" if capped else "uncapped"
                print(
                    f"{args.backend} {label:13s} {args.writers} writers: {rate:,.0f} lifecycles/s"
                )
    return 0


if __name__ == "__main__":
    sys.exit(main())
