"""Fleet benchmark (issue 13): the store and the fleet on SQLite and PostgreSQL.

Four measurements, each skippable (see ``benchmarks/README.md``):

1. lifecycles: store lifecycles/s (add_tasks, acquire, report with 25 links), batched;
2. latency: acquire and claim refresh p50/p99 at 10k, 100k and 1M pending tasks;
3. throughput: one ``sitesync crawl`` process on ``run.py``'s site, politeness off;
4. fleet: 1, 2, 4, 8 processes on a latency-bound site, CPU of workers, database and site.

    python benchmarks/fleet.py [--quick] [--backend sqlite|postgres|both] [--json OUT]
        [--max-pending 100000] [--skip-lifecycles] [--skip-latency] [--skip-throughput]
        [--skip-fleet]
"""

from __future__ import annotations

import argparse
import asyncio
import datetime
import functools
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Coroutine
from dataclasses import asdict
from pathlib import Path
from typing import Any

import fleet_report
import workers
from fleet_crawl import fleet, throughput
from fleet_floor import insert_floor
from fleet_stats import pending_sizes
from fleet_store import acquire_latency, lifecycles
from workers import DEFAULT_PG, check_postgres, fresh_store

HERE = Path(__file__).resolve().parent
# Set in the re-run on a snapshot of src/ (see on_snapshot): where sitesync is imported from,
# and the commit it was copied at.
SNAPSHOT_ENV, COMMIT_ENV = "SITESYNC_BENCH_SRC", "SITESYNC_BENCH_COMMIT"
QUICK = {
    "lifecycle_tasks": 1000,
    "pending": [1000, 10_000],
    "latency_samples": 30,
    "claim_samples": 5,
    "tp_pages_per_host": 50,
    "pages_per_host": 5,
    "workers": [1, 2],
}


def ints(text: str) -> list[int]:
    return [int(n.replace("_", "")) for n in text.split(",")]


def add_step_options(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("lifecycles")
    g.add_argument("--lifecycle-tasks", type=int, default=10_000)
    g.add_argument("--links", type=int, default=25, help="discovered links per report")
    g.add_argument("--lifecycle-hosts", type=int, default=40)
    g.add_argument("--acquire-batch", type=int, default=32, help="the worker's held_limit")
    g.add_argument("--report-batch", type=int, default=256, help="the worker's report_batch")
    g = p.add_argument_group("latency")
    g.add_argument("--pending", type=ints, default=[10_000, 100_000, 1_000_000])
    g.add_argument("--max-pending", type=int, help="skip the sizes above this")
    g.add_argument("--latency-hosts", type=int, default=100)
    g.add_argument("--latency-samples", type=int, default=200)
    g.add_argument("--latency-limit", type=int, default=32)
    g.add_argument("--claim-samples", type=int, default=20)
    g.add_argument(
        "--latency-budget",
        type=float,
        default=60,
        help="seconds per series of calls at one size; at least 10 calls are made",
    )
    g.add_argument(
        "--analyze",
        action="store_true",
        help="PostgreSQL: analyze the store's tables at each size before measuring",
    )
    g = p.add_argument_group("throughput")
    g.add_argument("--tp-hosts", type=int, default=20)
    g.add_argument("--tp-pages-per-host", type=int, default=1000)
    g.add_argument("--tp-concurrency", type=int, default=64)
    g = p.add_argument_group("fleet")
    g.add_argument("--hosts", type=int, default=40)
    g.add_argument("--pages-per-host", type=int, default=50)
    g.add_argument("--delay", type=float, default=0.05, help="seconds per response")
    g.add_argument("--workers", type=ints, default=[1, 2, 4, 8])
    g.add_argument("--concurrency", type=int, default=16, help="per process")


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--quick", action="store_true", help="a smoke run: small sizes everywhere")
    p.add_argument("--backend", choices=("sqlite", "postgres", "both"), default="both")
    dsn = os.environ.get("SITESYNC_BENCH_POSTGRES_DSN") or DEFAULT_PG
    p.add_argument("--pg-dsn", default=dsn, help="default: $SITESYNC_BENCH_POSTGRES_DSN")
    p.add_argument("--json", type=Path, help="default: benchmarks/results/fleet-DATE.json")
    p.add_argument("--timeout", type=float, default=900, help="seconds per crawl or step")
    p.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="extra setting for every sitesync process (repeatable)",
    )
    for step in ("lifecycles", "latency", "throughput", "fleet"):
        p.add_argument(f"--skip-{step}", action="store_true")
    add_step_options(p)
    p.add_argument("--render", type=Path, metavar="JSON", help="print a saved run's tables")
    p.add_argument(
        "--live-src",
        action="store_true",
        help="run src/ as it is on disk instead of a copy taken at the start",
    )
    args = p.parse_args(argv)
    if args.quick:
        for name, value in QUICK.items():
            if getattr(args, name) == p.get_default(name):
                setattr(args, name, value)
    return args


def run_lifecycles(args: argparse.Namespace, backends: list[str], tmp: Path) -> list[Any]:
    print(
        f"\n== lifecycles: {args.lifecycle_tasks} tasks on {args.lifecycle_hosts} hosts, "
        f"{args.links} links each, acquire {args.acquire_batch}, report {args.report_batch}",
        flush=True,
    )
    sizes = {
        "tasks": args.lifecycle_tasks, "links": args.links, "hosts": args.lifecycle_hosts,
        "acquire_batch": args.acquire_batch, "report_batch": args.report_batch,
    }  # fmt: skip
    results = []
    for backend in backends:
        load = os.getloadavg()[0]
        measure = functools.partial(
            lifecycles, backend=backend, count=backend == "postgres", **sizes
        )
        r = in_fresh_store(args, backend, tmp, measure)
        r["load_before"], r["load_after"] = load, os.getloadavg()[0]
        rate = r.get("lifecycles_per_second")
        print(f"[lifecycles-{backend}] {f'{rate:.0f}/s' if rate else r['error']}", flush=True)
        # The same rows written by hand in plain SQL (fleet_floor.py): the database's share.
        write_rows = functools.partial(insert_floor, backend=backend, **sizes)
        floor = in_fresh_store(args, backend, tmp, write_rows)
        rate = floor.get("lifecycles_per_second")
        print(f"[floor-{backend}] {f'{rate:.0f}/s' if rate else floor['error']}", flush=True)
        r["floor"] = floor
        # The same statements on a table with nothing but its URL index: a schema's ceiling.
        write_bare = functools.partial(insert_floor, backend=backend, bare=True, **sizes)
        bare = in_fresh_store(args, backend, tmp, write_bare)
        rate = bare.get("lifecycles_per_second")
        print(f"[bare-{backend}] {f'{rate:.0f}/s' if rate else bare['error']}", flush=True)
        r["floor_bare"] = bare
        results.append(r)
    return results


def in_fresh_store(
    args: argparse.Namespace,
    backend: str,
    tmp: Path,
    measure: Callable[[str], Coroutine[Any, Any, Any]],
) -> dict[str, Any]:
    """``measure(db)`` on a fresh store of ``backend``, as a dict (its dataclass); a failure
    as ``ok`` False and the error, so that one step's failure does not end the run."""
    try:
        with fresh_store(backend, tmp, args.pg_dsn) as db:
            return asdict(asyncio.run(asyncio.wait_for(measure(db), args.timeout)))
    except Exception as exc:
        return {"backend": backend, "ok": False, "error": f"{type(exc).__name__}: {exc}"}


def run_latency(args: argparse.Namespace, backends: list[str], tmp: Path) -> list[Any]:
    sizes = pending_sizes(args.pending, args.max_pending)
    print(
        f"\n== acquire latency at {', '.join(map(str, sizes))} pending on "
        f"{args.latency_hosts} hosts, {args.latency_samples} acquires of "
        f"{args.latency_limit}",
        flush=True,
    )

    def progress(point: Any) -> None:
        print(
            f"[latency-{point.backend}] {point.pending} pending (built in "
            f"{point.build_seconds:.0f} s): acquire p50 {point.acquire['p50_ms']:.2f} ms, "
            f"p99 {point.acquire['p99_ms']:.2f} ms; claim refresh p50 "
            f"{point.claim['p50_ms']:.2f} ms; status p50 {point.status['p50_ms']:.2f} ms, "
            f"run page p50 {point.run_page['p50_ms']:.2f} ms; load {point.load_1min:.2f}",
            flush=True,
        )

    results: list[Any] = []
    for backend in backends:
        try:
            with fresh_store(backend, tmp, args.pg_dsn) as db:
                coro = acquire_latency(
                    db,
                    backend=backend,
                    sizes=sizes,
                    hosts=args.latency_hosts,
                    samples=args.latency_samples,
                    limit=args.latency_limit,
                    claim_samples=args.claim_samples,
                    budget=args.latency_budget,
                    analyze=args.analyze,
                    progress=progress,
                )
                results += [asdict(p) for p in asyncio.run(coro)]
        except Exception as exc:
            results.append({"backend": backend, "error": f"{type(exc).__name__}: {exc}"})
            print(f"[latency-{backend}] FAILED: {exc}", flush=True)
    return results


def source_commit() -> str:
    """The checkout's commit, ``+dirty`` when src/ differs from it."""

    def git(*args: str) -> str:
        out = subprocess.run(["git", *args], cwd=HERE, text=True, capture_output=True)
        return out.stdout.strip()

    dirty = git("status", "--porcelain", "--", str(HERE.parent / "src"))
    return git("rev-parse", "--short", "HEAD") + ("+dirty" if dirty else "")


def on_snapshot(argv: list[str]) -> int:
    """Run this script again on a copy of src/ taken now, so that commits, rebases and edits
    made while it runs (for minutes) change nothing it measures, in-process or not."""
    dest = Path(tempfile.mkdtemp(prefix="sitesync-fleet-src-"))
    try:
        commit = source_commit()
        src = workers.snapshot_src(dest / "src")
        env = {**os.environ, SNAPSHOT_ENV: str(src), COMMIT_ENV: commit, "PYTHONPATH": str(src)}
        child = subprocess.Popen([sys.executable, __file__, *argv], env=env)
        try:
            return child.wait()
        except KeyboardInterrupt:  # the child cleans up its processes and schemas
            child.terminate()
            return child.wait()
    finally:
        shutil.rmtree(dest, ignore_errors=True)


def describe_machine(args: argparse.Namespace) -> dict[str, Any]:
    return {
        "date": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        "commit": os.environ.get(COMMIT_ENV) or source_commit(),
        "src": "snapshot" if SNAPSHOT_ENV in os.environ else "live",
        "cpus": os.cpu_count(),
        "nice": os.nice(0),
        "load_at_start": os.getloadavg(),
        "args": {k: str(v) for k, v in vars(args).items() if k != "pg_dsn"},
    }


def _terminate(signum: int, frame: object) -> None:
    raise KeyboardInterrupt  # so every finally runs: processes killed, stores removed


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    args = parse_args(argv)
    if args.render:
        print(fleet_report.render(json.loads(args.render.read_text())))
        return 0
    signal.signal(signal.SIGTERM, _terminate)
    if not args.live_src and SNAPSHOT_ENV not in os.environ:
        return on_snapshot(argv)
    if SNAPSHOT_ENV in os.environ:
        workers.src_dir = Path(os.environ[SNAPSHOT_ENV])  # every process of a crawl, too
    backends = ["sqlite", "postgres"] if args.backend == "both" else [args.backend]
    payload: dict[str, Any] = {"machine": describe_machine(args)}
    ok = True
    if "postgres" in backends and (problem := check_postgres(args.pg_dsn)):
        print(f"PostgreSQL unavailable, skipped: {problem}", file=sys.stderr)
        backends.remove("postgres")
        payload["postgres_error"], ok = problem, False
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="sitesync-fleet-") as tmp_name:
        tmp = Path(tmp_name)
        steps = [
            ("lifecycles", run_lifecycles),
            ("latency", run_latency),
            ("throughput", throughput),
            ("fleet", fleet),
        ]
        for name, step in steps:
            if not getattr(args, f"skip_{name}") and backends:
                payload[name] = step(args, backends, tmp)
    payload["machine"]["seconds"] = time.monotonic() - started
    payload["machine"]["load_at_end"] = os.getloadavg()
    print(fleet_report.render(payload))
    out = args.json or HERE / "results" / (
        f"fleet-{payload['machine']['date'][:10]}{'-quick' if args.quick else ''}.json"
    )
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(payload, indent=2) + "\n")
    print(f"\nJSON: {out}")
    return 0 if ok and fleet_report.all_ok(payload) else 1


if __name__ == "__main__":
    try:
        sys.exit(main())
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        sys.exit(130)
