"""What an operator waits for: a command that does not crawl, and the dashboard's run page.

1. ``sitesync status`` and ``sitesync show 1``, each run ``--runs`` times as a user runs
   them (a new interpreter each time, bytecode cached), on a SQLite store with one run:
   start-up (imports) and one store read.
2. The run page (``Overview.detail``, what ``GET /api/runs/ID`` and the dashboard read) of a
   run with ``--hosts`` hosts, each with two pending tasks, an adaptive pace and a domain
   row: every per-host read the page makes has something to find. SQLite, and PostgreSQL
   in a schema of its own (dropped after) when ``--pg-dsn`` is given.

    python benchmarks/operator_waits.py [--hosts 500] [--runs 15] [--pg-dsn postgresql://...]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from fleet_stats import latency_summary
from fleet_store import running_run, series
from workers import fresh_store

from sitesync.models import NewTask
from sitesync.readmodel.overview import Overview, OverviewOptions
from sitesync.store import open_store


def command_start(db: Path, runs: int) -> None:
    env = {**os.environ, "SITESYNC_ALLOWED_NETWORKS": "127.0.0.0/8"}
    env.pop("PYTHONDONTWRITEBYTECODE", None)  # as installed: bytecode cached
    queue = ["crawl", "http://127.0.0.2:1/", "--queue", "--db", str(db)]
    subprocess.run([sys.executable, "-m", "sitesync", *queue], env=env, check=True)
    for command in (["status"], ["show", "1"]):
        seconds = []
        for _ in range(runs):
            started = time.perf_counter()
            subprocess.run(
                [sys.executable, "-m", "sitesync", *command, "--db", str(db)],
                env=env, check=True, capture_output=True,
            )  # fmt: skip
            seconds.append(time.perf_counter() - started)
        print(
            f"sitesync {' '.join(command)}: median {statistics.median(seconds) * 1000:.0f} ms, "
            f"fastest {min(seconds) * 1000:.0f} ms ({runs} runs)"
        )


async def run_page(db: str, label: str, hosts: int, samples: int) -> None:
    store = await open_store(db)
    try:
        run_id = await running_run(store)
        names = [f"h{n}.test" for n in range(hosts)]
        tasks = [NewTask(url=f"http://{h}/p{i}", host=h, depth=0) for h in names for i in (1, 2)]
        await store.add_tasks(run_id, tasks)
        for host in names:
            await store.save_host_pace(host, delay=2.0, concurrency=1, reason="429", since=1.0)
            await store.record_root_redirect(host, canonical_host=f"www.{host}", aliases=[])
        overview = Overview(store, OverviewOptions())
        detail = await overview.detail(run_id)
        shown = [h for h in detail.hosts if h.domain is not None and h.pace_reason]
        assert len(shown) == min(hosts, 500), len(shown)  # the page found every row
        summary = latency_summary(await series(lambda: overview.detail(run_id), samples, 1e9))
        print(
            f"run page, {label}, {hosts} hosts: median {summary['p50_ms']:.1f} ms, "
            f"slowest {summary['max_ms']:.1f} ms ({samples} reads)"
        )
    finally:
        await store.close()


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--hosts", type=int, default=500, help="hosts of the run (the page shows 500)")
    p.add_argument("--runs", type=int, default=15, help="runs of each command")
    p.add_argument("--samples", type=int, default=30, help="reads of the run page")
    p.add_argument("--pg-dsn", default=os.environ.get("SITESYNC_BENCH_POSTGRES_DSN"))
    args = p.parse_args()
    with tempfile.TemporaryDirectory(prefix="sitesync-operator-") as tmp_name:
        tmp = Path(tmp_name)
        command_start(tmp / "start.db", args.runs)
        backends = [("sqlite", "SQLite")] + ([("postgres", "PostgreSQL")] if args.pg_dsn else [])
        for backend, label in backends:
            with fresh_store(backend, tmp, args.pg_dsn or "") as db:
                asyncio.run(run_page(db, label, args.hosts, args.samples))


if __name__ == "__main__":
    main()
