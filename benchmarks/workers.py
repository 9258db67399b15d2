"""Scaling with worker processes, per store backend (SQLite, PostgreSQL).

Three measurements, each skippable (see ``benchmarks/README.md``):

1. scaling: one ``sitesync crawl`` plus N-1 ``sitesync worker --run 1`` processes on a
   latency-bound site (every response delayed), for N in ``--workers``;
2. store ops: acquire + report throughput of the store API, in-process, without HTTP;
3. flush cost: the same latency-free crawl with per-host counter flushes every 100 pages
   and only at the end.

    python benchmarks/workers.py [--backend sqlite|postgres|both] [--hosts 40]
        [--pages-per-host 50] [--delay 0.05] [--workers 1,2,4] [--concurrency 16]
        [--skip-scaling] [--skip-store-ops] [--skip-flush] [--json OUT]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import random
import secrets
import select
import shutil
import signal
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections import Counter
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import psutil
import psycopg
from psycopg import sql

from sitesync.fetch.base import FetchOutcome

if TYPE_CHECKING:
    from sitesync.models import Lease, NewTask, TaskReport

REPO = Path(__file__).resolve().parent.parent
DEFAULT_PG = "postgresql://postgres@127.0.0.1:5432/postgres"
BACKENDS = ("sqlite", "postgres")
RUN_ID = 1  # every crawl starts on a fresh store, so its run is run 1
STATS_PATH = "/__bench_stats__"
# The built-in plugins, as users run them (the dev extra also installs the test suite's
# example plugin, which would add its records to every page).
PLUGINS = "page,links,navigation,assets"
IMPORT_CHECK = (
    "import sitesync.cli, sitesync.testing, sitesync.store.sqlite.store, "
    "sitesync.store.postgres.store"
)
# Where every process imports sitesync from: a snapshot of src/ taken at the start (see
# snapshot_src), unless --live-src.
src_dir = REPO / "src"


# --- the code under test and the site ----------------------------------------------------------


def base_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("SITESYNC_")}
    env["PYTHONPATH"] = str(src_dir)
    # The site is on loopback, which crawls refuse unless it is opened.
    env["SITESYNC_ALLOWED_NETWORKS"] = "127.0.0.0/8,::1/128"
    # Each process measured is one worker: 'crawl' starts no helper processes of its own.
    env["SITESYNC_PROCESSES"] = "1"
    return env


def snapshot_src(dest: Path, attempts: int = 6) -> Path:
    """Copy src/ so that edits made while the benchmark runs neither change nor break the
    code under test; retry while the copy does not import (someone mid-edit)."""
    problem = ""
    for attempt in range(attempts):
        if attempt:
            time.sleep(5)
        shutil.rmtree(dest, ignore_errors=True)
        shutil.copytree(REPO / "src", dest, ignore=shutil.ignore_patterns("__pycache__"))
        env = {**os.environ, "PYTHONPATH": str(dest)}
        check = subprocess.run(
            [sys.executable, "-c", IMPORT_CHECK],
            env=env,
            capture_output=True,
            text=True,
            timeout=60,
        )
        if check.returncode == 0:
            return dest
        problem = check.stderr.strip()[-1000:]
    raise RuntimeError(f"src/ does not import: {problem}")


class Server:
    """The generated site (``python -m sitesync.testing``) in its own process."""

    def __init__(self, spec: dict[str, Any]) -> None:
        cmd = [sys.executable, "-m", "sitesync.testing", "--port", "0", "--no-log"]
        cmd += ["--stats-path", STATS_PATH]
        for name, value in spec.items():
            cmd += ["--" + name.replace("_", "-"), str(value)]
        # A file, not a pipe, so it can never fill up; closed in stop().
        self.err = tempfile.TemporaryFile("w+")  # noqa: SIM115
        self.proc = subprocess.Popen(
            cmd, stdout=subprocess.PIPE, stderr=self.err, text=True, env=base_env()
        )
        assert self.proc.stdout is not None
        # select before readline: a server that dies or hangs must not hang the harness.
        ready, _, _ = select.select([self.proc.stdout], [], [], 30)
        line = self.proc.stdout.readline() if ready else ""
        if not line.strip():
            self.stop()
            self.err.seek(0)
            raise RuntimeError(f"site server did not start: {self.err.read().strip()[-2000:]}")
        info = json.loads(line)
        self.port: int = info["port"]
        self.root_urls: list[str] = info["root_urls"]
        self.ps = psutil.Process(self.proc.pid)

    def stats(self) -> dict[str, Any]:
        url = self.root_urls[0].rstrip("/") + STATS_PATH
        with urllib.request.urlopen(url, timeout=10) as resp:
            data: dict[str, Any] = json.load(resp)
        return data

    def cpu_seconds(self) -> float:
        times = self.ps.cpu_times()
        return float(times.user + times.system)

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        if self.proc.stdout is not None:
            self.proc.stdout.close()
        self.err.close()


# --- processes -----------------------------------------------------------------------------


@dataclass
class Child:
    """One sitesync process; CPU and peak RSS come from ``os.wait4`` when it is reaped."""

    label: str
    proc: subprocess.Popen[bytes]
    out_path: Path
    err_path: Path
    started: float  # monotonic
    ended: float | None = None
    returncode: int | None = None
    cpu_seconds: float = 0.0
    peak_rss_mb: float = 0.0
    killed: bool = False

    @property
    def done(self) -> bool:
        return self.ended is not None

    def poll(self, *, block: bool = False) -> bool:
        if self.done:
            return True
        pid, status, usage = os.wait4(self.proc.pid, 0 if block else os.WNOHANG)
        if not pid:
            return False
        self.ended = time.monotonic()
        self.returncode = self.proc.returncode = os.waitstatus_to_exitcode(status)
        self.cpu_seconds = usage.ru_utime + usage.ru_stime
        self.peak_rss_mb = usage.ru_maxrss / 1024  # KiB on Linux
        return True

    def kill(self) -> None:
        if not self.done:
            self.killed = True
            with contextlib.suppress(ProcessLookupError):
                self.proc.kill()
            self.poll(block=True)

    def tail(self, chars: int = 1500) -> str:
        text = ""
        for path in (self.err_path, self.out_path):
            with contextlib.suppress(OSError):
                text = path.read_text(errors="replace").strip() or text
            if text:
                break
        return text[-chars:]


def spawn(label: str, cmd: list[str], env: dict[str, str], workdir: Path) -> Child:
    out_path, err_path = workdir / f"{label}.out", workdir / f"{label}.err"
    with out_path.open("wb") as out, err_path.open("wb") as err:
        proc = subprocess.Popen(cmd, stdout=out, stderr=err, env=env, cwd=REPO)
    return Child(label, proc, out_path, err_path, started=time.monotonic())


def sitesync_env(db: str, concurrency: int, workdir: Path, extra: dict[str, str]) -> dict[str, str]:
    """The same settings for every process of a crawl, all through ``SITESYNC_*``."""
    env = base_env()
    env.update(
        {
            # No sitesync.toml from the working directory: only what is set here counts.
            "SITESYNC_CONFIG": str(workdir / "no-such-sitesync.toml"),
            "SITESYNC_DB": db,
            "SITESYNC_CONCURRENCY": str(concurrency),
            "SITESYNC_PER_HOST_CONCURRENCY": "1",
            "SITESYNC_DELAY": "0",
            # A fixed pace, as in run.py and processes.py: adaptive politeness reads the
            # latency of a loaded machine as the site's and slows its hosts down, so with it
            # on these crawls measured the pacing (and swung 2x between runs), not the store.
            "SITESYNC_ADAPTIVE_POLITENESS": "false",
            "SITESYNC_RESPECT_ROBOTS": "false",
            "SITESYNC_SITEMAPS": "false",
            "SITESYNC_PLUGINS": PLUGINS,
            **extra,
        }
    )
    return env


# --- stores --------------------------------------------------------------------------------


def settings_from(pairs: list[str]) -> dict[str, str]:
    """``--set name=value`` pairs as ``SITESYNC_NAME`` variables."""
    env = {}
    for pair in pairs:
        name, sep, value = pair.partition("=")
        if not sep or not name.strip():
            raise SystemExit(f"--set wants NAME=VALUE, got {pair!r}")
        env["SITESYNC_" + name.strip().upper().removeprefix("SITESYNC_")] = value
    return env


def pg_url(dsn: str, schema: str) -> str:
    separator = "&" if "?" in dsn else "?"
    return f"{dsn}{separator}options=-csearch_path%3D{schema}"


@contextlib.contextmanager
def fresh_store(backend: str, tmp: Path, pg_dsn: str) -> Iterator[str]:
    """A new, empty store: a SQLite file in its own directory, or a PostgreSQL schema.

    Both are removed on the way out, failures included.
    """
    if backend == "sqlite":
        where = Path(tempfile.mkdtemp(prefix="store-", dir=tmp))
        try:
            yield str(where / "sitesync.db")
        finally:
            shutil.rmtree(where, ignore_errors=True)
        return
    name = f"bench_{secrets.token_hex(6)}"
    with psycopg.connect(pg_dsn, autocommit=True, connect_timeout=10) as conn:
        conn.execute(sql.SQL("CREATE SCHEMA {}").format(sql.Identifier(name)))
    try:
        yield pg_url(pg_dsn, name)
    finally:
        try:
            with psycopg.connect(pg_dsn, autocommit=True, connect_timeout=10) as conn:
                conn.execute("SET lock_timeout = '30s'")
                conn.execute(
                    sql.SQL("DROP SCHEMA IF EXISTS {} CASCADE").format(sql.Identifier(name))
                )
        except psycopg.Error as exc:
            print(f"warning: could not drop schema {name}: {exc}", file=sys.stderr)


class Probe:
    """Read-only look at a store while processes crawl into it (plain SQL, no sitesync)."""

    def __init__(self, db: str) -> None:
        self.db = db
        self.pg = db.startswith("postgresql://")
        self._conn: Any = None
        # What the samples saw: task ids leased per worker, and claims held per worker.
        self.tasks_seen: dict[str, set[int]] = {}
        self.max_claims: Counter[str] = Counter()
        self.first_claim_at: dict[str, float] = {}  # seconds after the crawl started
        # (seconds after the start, claims per worker id, leases per worker id) per sample
        self.timeline: list[tuple[float, dict[str, int], Counter[str]]] = []
        self.samples = 0

    def _connect(self) -> Any:
        if self._conn is None:
            if self.pg:
                self._conn = psycopg.connect(self.db, autocommit=True, connect_timeout=10)
            elif Path(self.db).exists():
                uri = f"file:{self.db}?mode=ro"
                self._conn = sqlite3.connect(uri, uri=True, timeout=5, isolation_level=None)
        return self._conn

    def query(self, text: str) -> list[tuple[Any, ...]]:
        """Rows, or [] while the store (or its tables) does not exist yet."""
        try:
            conn = self._connect()
            if conn is None:
                return []
            return list(conn.execute(text).fetchall())
        except (sqlite3.Error, psycopg.Error):
            if self.pg and self._conn is not None and self._conn.closed:
                self._conn = None
            return []

    def run_status(self) -> str | None:
        rows = self.query(f"SELECT status FROM runs WHERE id = {RUN_ID}")
        return str(rows[0][0]) if rows else None

    def sample(self, elapsed: float) -> None:
        now = time.time()
        leased = self.query(
            f"SELECT lease_owner, id FROM tasks WHERE run_id = {RUN_ID} AND state = 'assigned'"
        )
        for owner, task_id in leased:
            self.tasks_seen.setdefault(str(owner), set()).add(int(task_id))
        leases = Counter(str(owner) for owner, _ in leased)
        claims = self.query(
            f"SELECT worker_id, count(*) FROM claims WHERE run_id = {RUN_ID} "
            f"AND expires_at > {now} GROUP BY worker_id"
        )
        for worker_id, count in claims:
            self.max_claims[str(worker_id)] = max(self.max_claims[str(worker_id)], int(count))
            self.first_claim_at.setdefault(str(worker_id), elapsed)
        self.timeline.append((elapsed, {str(w): int(n) for w, n in claims}, leases))
        self.samples += 1

    def workers(self) -> dict[int, str]:
        """pid -> worker id of every worker that joined the run."""
        rows = self.query(f"SELECT pid, worker_id FROM workers WHERE run_id = {RUN_ID}")
        return {int(pid): str(worker_id) for pid, worker_id in rows}

    def run_times(self) -> tuple[float | None, float | None]:
        rows = self.query(f"SELECT started_at, ended_at FROM runs WHERE id = {RUN_ID}")
        return (rows[0][0], rows[0][1]) if rows else (None, None)

    def close(self) -> None:
        if self._conn is not None:
            with contextlib.suppress(Exception):
                self._conn.close()
            self._conn = None


# --- one crawl with N processes --------------------------------------------------------------


@dataclass
class CrawlResult:
    backend: str
    workers: int
    flush_interval: int | None = None
    ok: bool = False
    expected: int = 0
    pages: int | None = None
    seconds: float | None = None  # crawl start to the last process exit
    run_seconds: float | None = None  # the run's started_at to ended_at, from the store
    pages_per_second: float | None = None
    run_pages_per_second: float | None = None
    cpu_seconds: float | None = None  # all sitesync processes of the crawl
    server_cpu_seconds: float | None = None
    busy_percent: float | None = None  # all CPUs of the machine during the crawl
    server_200s: int | None = None
    check: str = "n/a"
    processes: list[dict[str, Any]] = field(default_factory=list)
    # One entry per sample: seconds after the start, claims and leases held per process.
    timeline: list[dict[str, Any]] = field(default_factory=list)
    error: str | None = None


def crawl_once(
    server: Server,
    db: str,
    n_workers: int,
    args: argparse.Namespace,
    workdir: Path,
    *,
    backend: str,
    expected: int,
    extra_env: dict[str, str] | None = None,
    sample: bool = True,
) -> CrawlResult:
    result = CrawlResult(backend, n_workers, expected=expected)
    extra = {**settings_from(args.set), **(extra_env or {})}
    if "SITESYNC_DOMAIN_STATS_FLUSH_INTERVAL_PAGES" in extra:
        result.flush_interval = int(extra["SITESYNC_DOMAIN_STATS_FLUSH_INTERVAL_PAGES"])
    workdir.mkdir(parents=True)
    env = sitesync_env(db, args.concurrency, workdir, extra)
    summary = workdir / "summary.json"
    py = sys.executable
    crawl_cmd = [py, "-m", "sitesync", "crawl", *server.root_urls, "--no-progress"]
    crawl_cmd += ["--summary-json", str(summary)]
    worker_cmd = [py, "-m", "sitesync", "worker", "--run", str(RUN_ID)]

    probe = Probe(db)
    before = server.stats()
    server_cpu = server.cpu_seconds()
    cpu_before = psutil.cpu_times()
    started = time.monotonic()
    deadline = started + args.timeout
    children = [spawn("crawl", crawl_cmd, env, workdir)]
    try:
        if n_workers > 1:
            # Workers join once the run is running: earlier, a worker would start it itself
            # and the crawl process's own queued -> running transition would fail.
            while probe.run_status() != "running" and not children[0].poll():
                if time.monotonic() > deadline:
                    raise TimeoutError("the run did not start")
                time.sleep(0.02)
            for k in range(1, n_workers):
                children.append(spawn(f"worker{k}", worker_cmd, env, workdir))
        next_sample = 0.0
        while not all(child.poll() for child in children):
            now = time.monotonic()
            if now > deadline:
                raise TimeoutError(f"crawl still running after {args.timeout:g} s")
            if sample and args.sample_interval > 0 and now >= next_sample:
                probe.sample(now - started)
                next_sample = now + args.sample_interval
            time.sleep(0.01)
    except TimeoutError as exc:
        result.error = str(exc)
    finally:
        for child in children:
            child.kill()  # only stragglers: the ones already reaped are left alone
    ended = max(child.ended or time.monotonic() for child in children)
    cpu_after = psutil.cpu_times()
    after = server.stats()
    result.server_cpu_seconds = server.cpu_seconds() - server_cpu
    # The first stats request (a 200) falls between the two readings.
    result.server_200s = after["status"].get("200", 0) - before["status"].get("200", 0) - 1
    result.seconds = ended - started
    result.cpu_seconds = sum(child.cpu_seconds for child in children)
    idle = ("idle", "iowait")
    total = sum(cpu_after) - sum(cpu_before)
    busy = total - sum(getattr(cpu_after, k, 0) - getattr(cpu_before, k, 0) for k in idle)
    result.busy_percent = 100 * busy / total if total > 0 else None
    run_started, run_ended = probe.run_times()
    if run_started is not None and run_ended is not None:
        result.run_seconds = run_ended - run_started
    result.processes = describe_processes(children, probe, started)
    labels = {p["worker_id"]: p["label"] for p in result.processes if p["worker_id"]}
    result.timeline = [
        {
            "t": round(t, 2),
            "claims": {labels.get(w, w): n for w, n in claims.items()},
            "leases": {labels.get(w, w): n for w, n in leases.items()},
        }
        for t, claims, leases in probe.timeline
    ]
    probe.close()

    failed = [p for p in result.processes if p["killed"] or (p["exit_code"] != 0 and not p["late"])]
    if failed and result.error is None:
        first = next(c for c in children if c.label == failed[0]["label"])
        result.error = f"{first.label} exit code {first.returncode}: {first.tail()}"
    if not summary.exists():
        result.error = result.error or f"no summary JSON: {children[0].tail()}"
        return result
    report = json.loads(summary.read_text())
    result.pages = report.get("completed")
    if result.error is not None or not isinstance(result.pages, int):
        result.error = result.error or f"summary JSON has no page count: {report}"
        return result
    result.ok = True
    result.pages_per_second = result.pages / result.seconds if result.seconds else None
    if result.run_seconds:
        result.run_pages_per_second = result.pages / result.run_seconds
    problems = []
    if report.get("status") != "completed":
        problems.append(f"run ended {report.get('status')}")
    if result.pages != result.expected:
        problems.append(f"{result.pages} pages completed, site has {result.expected}")
    if result.server_200s != result.expected:
        problems.append(f"server sent {result.server_200s} pages, site has {result.expected}")
    result.check = "ok" if not problems else "; ".join(problems)
    return result


def describe_processes(children: list[Child], probe: Probe, t0: float) -> list[dict[str, Any]]:
    by_pid = probe.workers()
    seen_total = sum(len(ids) for ids in probe.tasks_seen.values())
    rows = []
    for child in children:
        worker_id = by_pid.get(child.proc.pid)
        seen = len(probe.tasks_seen.get(worker_id or "", ()))
        tail = "" if child.returncode == 0 else child.tail(300)
        rows.append(
            {
                "label": child.label,
                "pid": child.proc.pid,
                "worker_id": worker_id,
                "started_at": round(child.started - t0, 3),
                "exited_at": round((child.ended or t0) - t0, 3),
                "exit_code": child.returncode,
                "killed": child.killed,
                # Started after the run had ended: it found nothing to join.
                "late": "cannot be resumed" in tail or "no running or queued run" in tail,
                "cpu_seconds": round(child.cpu_seconds, 3),
                "peak_rss_mb": round(child.peak_rss_mb, 1),
                "sampled_tasks": seen,
                "sampled_share": round(seen / seen_total, 3) if seen_total else None,
                "max_claims": probe.max_claims.get(worker_id or "", 0),
                "first_claim_at": probe.first_claim_at.get(worker_id or ""),
            }
        )
    return rows


# --- store operations, in-process --------------------------------------------------------------


@dataclass
class StoreOpsResult:
    backend: str
    links_per_task: int
    ok: bool = False
    tasks: int = 0
    seconds: float | None = None  # acquire + report, all batches
    tasks_per_second: float | None = None
    acquire_ms_per_batch: float | None = None
    report_ms_per_batch: float | None = None
    admit_tasks_per_second: float | None = None  # the initial add_tasks
    tasks_admitted_by_reports: int | None = None
    error: str | None = None


def reports_with_links(
    leases: list[Lease], initial: list[NewTask], links: int, rng: random.Random, fresh: int
) -> tuple[list[TaskReport], int]:
    """A successful report per lease, each with ``links`` discovered URLs: half already
    known (drawn from ``initial``: duplicates the store must drop), half new. Returns the
    reports and the running count of new URLs, which names them uniquely."""
    # Imported here, from src_dir (the snapshot) which main() put first on sys.path.
    from sitesync.models import NewTask, TaskReport

    duplicates = links // 2
    reports = []
    for lease in leases:
        found = [rng.choice(initial) for _ in range(duplicates)]
        for _ in range(links - duplicates):
            fresh += 1
            found.append(NewTask(f"http://{lease.host}/n/{fresh}", lease.host, 2))
        reports.append(
            TaskReport(
                lease=lease,
                ok=True,
                http_status=200,
                bytes_fetched=20_000,
                outcome=FetchOutcome.SUCCESS,
                discovered=tuple(found),
            )
        )
    return reports, fresh


async def store_ops(
    db: str, *, backend: str, tasks: int, batch: int, links: int, hosts: int
) -> StoreOpsResult:
    """Acquire + report ``tasks`` tasks in batches, each report discovering ``links`` links:
    half of them URLs already in the run, half new ones (admitted, left pending)."""
    # Imported here, from src_dir (the snapshot) which main() put first on sys.path.
    from sitesync.models import NewTask, RunConfig, RunStatus
    from sitesync.store import open_store

    result = StoreOpsResult(backend, links)
    store = await open_store(db)
    try:
        run = await store.create_run(RunConfig(seeds=("http://h0.bench.invalid/",)))
        await store.transition_run(run.id, RunStatus.RUNNING)
        await store.mark_seeded(run.id)
        names = [f"h{h}.bench.invalid" for h in range(hosts)]
        initial = [
            NewTask(url=f"http://{names[i % hosts]}/p/{i}", host=names[i % hosts], depth=1)
            for i in range(tasks)
        ]
        t = time.perf_counter()
        for i in range(0, len(initial), 1000):
            await store.add_tasks(run.id, initial[i : i + 1000])
        result.admit_tasks_per_second = tasks / (time.perf_counter() - t)

        rng = random.Random(0)
        fresh = 0
        acquire_s = report_s = 0.0
        batches = 0
        while result.tasks < tasks:
            t = time.perf_counter()
            leases = await store.acquire(
                run.id, worker_id="bench", limit=min(batch, tasks - result.tasks), lease_seconds=60
            )
            acquire_s += time.perf_counter() - t
            if not leases:
                break
            reports, fresh = reports_with_links(leases, initial, links, rng, fresh)
            t = time.perf_counter()
            await store.report(run.id, reports)
            report_s += time.perf_counter() - t
            result.tasks += len(leases)
            batches += 1
        counters = (await store.get_run(run.id)).counters
    finally:
        await store.close()
    result.seconds = acquire_s + report_s
    result.tasks_per_second = result.tasks / result.seconds if result.seconds else None
    result.acquire_ms_per_batch = 1000 * acquire_s / batches if batches else None
    result.report_ms_per_batch = 1000 * report_s / batches if batches else None
    result.tasks_admitted_by_reports = counters.tasks_total - tasks
    problems = []
    if result.tasks != tasks:
        problems.append(f"only {result.tasks} of {tasks} tasks could be acquired")
    if counters.completed != tasks:
        problems.append(f"{counters.completed} completed, expected {tasks}")
    if result.tasks_admitted_by_reports != fresh:
        problems.append(f"reports admitted {result.tasks_admitted_by_reports}, {fresh} were new")
    result.error = "; ".join(problems) or None
    result.ok = not problems
    return result


# --- the three steps ---------------------------------------------------------------------------


def scaling(args: argparse.Namespace, backends: list[str], tmp: Path) -> list[CrawlResult]:
    spec = {
        "hosts": args.hosts,
        "pages_per_host": args.pages_per_host,
        "links_per_page": 25,
        "page_bytes": args.page_bytes,
        "delay": args.delay,
    }
    print(
        f"\n== scaling: {args.hosts} hosts x {args.pages_per_host} pages, {args.delay * 1000:g} ms "
        f"per response, concurrency {args.concurrency} per process, per-host concurrency 1",
        flush=True,
    )
    results = []
    expected = args.hosts * args.pages_per_host
    server = Server(spec)
    try:
        for backend in backends:
            for n in args.workers:
                label = f"scaling-{backend}-{n}"
                print(f"[{label}] running ...", flush=True)
                try:
                    with fresh_store(backend, tmp, args.pg_dsn) as db:
                        r = crawl_once(
                            server, db, n, args, tmp / label, backend=backend, expected=expected
                        )
                except Exception as exc:  # one failed crawl must not lose the others
                    r = CrawlResult(backend, n, error=f"{type(exc).__name__}: {exc}")
                results.append(r)
                print(f"[{label}] {summary_line(r)}", flush=True)
    finally:
        server.stop()
    return results


def store_op_runs(args: argparse.Namespace, backends: list[str], tmp: Path) -> list[Any]:
    print(
        f"\n== store ops: {args.store_tasks} tasks on {args.hosts} hosts, "
        f"batches of {args.store_batch}",
        flush=True,
    )
    results: list[StoreOpsResult] = []
    for backend in backends:
        for links in (0, 25):
            label = f"store-{backend}-{links}"
            print(f"[{label}] running ...", flush=True)
            try:
                with fresh_store(backend, tmp, args.pg_dsn) as db:
                    coro = store_ops(
                        db,
                        backend=backend,
                        tasks=args.store_tasks,
                        batch=args.store_batch,
                        links=links,
                        hosts=args.hosts,
                    )
                    r = asyncio.run(asyncio.wait_for(coro, args.timeout))
            except Exception as exc:
                r = StoreOpsResult(backend, links, error=f"{type(exc).__name__}: {exc}")
            results.append(r)
            done = f"{r.tasks_per_second:.0f} tasks/s" if r.tasks_per_second else "failed"
            print(f"[{label}] {done}", flush=True)
    return results


def flush_cost(args: argparse.Namespace, backends: list[str], tmp: Path) -> list[CrawlResult]:
    spec = {
        "hosts": args.flush_hosts,
        "pages_per_host": args.flush_pages_per_host,
        "links_per_page": 25,
        "page_bytes": args.page_bytes,
    }
    print(
        f"\n== flush cost: {args.flush_hosts} hosts x {args.flush_pages_per_host} pages, "
        f"no delay, 1 process, flush interval 100 vs 0, {args.flush_repeats} repetitions",
        flush=True,
    )
    results = []
    expected = args.flush_hosts * args.flush_pages_per_host
    server = Server(spec)
    try:
        for backend in backends:
            for rep in range(args.flush_repeats):
                # Alternate the order so a drift in machine load hits both settings alike.
                for interval in (100, 0) if rep % 2 == 0 else (0, 100):
                    label = f"flush-{backend}-{interval}-{rep}"
                    print(f"[{label}] running ...", flush=True)
                    env = {"SITESYNC_DOMAIN_STATS_FLUSH_INTERVAL_PAGES": str(interval)}
                    try:
                        with fresh_store(backend, tmp, args.pg_dsn) as db:
                            r = crawl_once(
                                server, db, 1, args, tmp / label, backend=backend,
                                expected=expected, extra_env=env, sample=False,
                            )  # fmt: skip
                    except Exception as exc:
                        r = CrawlResult(backend, 1, flush_interval=interval)
                        r.error = f"{type(exc).__name__}: {exc}"
                    results.append(r)
                    print(f"[{label}] {summary_line(r)}", flush=True)
    finally:
        server.stop()
    return results


def flush_summary(results: list[CrawlResult], backends: list[str]) -> list[dict[str, Any]]:
    rows = []
    for backend in backends:
        row: dict[str, Any] = {"backend": backend}
        for interval in (100, 0):
            runs = [
                r for r in results if r.backend == backend and r.flush_interval == interval and r.ok
            ]
            row[f"runs_{interval}"] = len(runs)
            for key in ("seconds", "run_seconds", "cpu_seconds"):
                values = [getattr(r, key) for r in runs if getattr(r, key) is not None]
                row[f"{key}_{interval}"] = statistics.median(values) if values else None
        for key in ("seconds", "run_seconds", "cpu_seconds"):
            on, off = row[f"{key}_100"], row[f"{key}_0"]
            row[f"{key}_cost_percent"] = 100 * (on - off) / off if on and off else None
        rows.append(row)
    return rows


# --- output ------------------------------------------------------------------------------------


def fmt(value: float | int | None, spec: str) -> str:
    return "-" if value is None else format(value, spec)


def summary_line(r: CrawlResult) -> str:
    if not r.ok:
        return f"FAILED: {r.error}"
    return f"{r.pages} pages in {r.seconds:.2f} s ({r.pages_per_second:.0f} pages/s), {r.check}"


def print_scaling(results: list[CrawlResult]) -> None:
    header = (
        f"{'backend':<9}{'workers':>7}{'pages':>7}{'seconds':>9}{'pages/s':>9}{'run s':>8}"
        f"{'run p/s':>9}{'CPU s':>8}{'srv CPU':>8}{'busy %':>7}  check"
    )
    print("\nscaling (latency-bound site)\n" + header + "\n" + "-" * len(header))
    for r in results:
        print(
            f"{r.backend:<9}{r.workers:>7}{fmt(r.pages, 'd'):>7}{fmt(r.seconds, '.2f'):>9}"
            f"{fmt(r.pages_per_second, '.0f'):>9}{fmt(r.run_seconds, '.2f'):>8}"
            f"{fmt(r.run_pages_per_second, '.0f'):>9}{fmt(r.cpu_seconds, '.2f'):>8}"
            f"{fmt(r.server_cpu_seconds, '.2f'):>8}{fmt(r.busy_percent, '.0f'):>7}  "
            f"{r.check if r.ok else 'FAILED'}"
        )
        for p in r.processes:
            share = fmt(None if p["sampled_share"] is None else 100 * p["sampled_share"], ".0f")
            state = "late" if p["late"] else "killed" if p["killed"] else f"exit {p['exit_code']}"
            first = fmt(p["first_claim_at"], ".2f")
            print(
                f"    {p['label']:<8} up +{p['started_at']:.2f}..+{p['exited_at']:.2f} s, "
                f"CPU {p['cpu_seconds']:.2f} s, RSS {p['peak_rss_mb']:.0f} MB, "
                f"share {share} % of sampled leases, first claim +{first} s, "
                f"max claims {p['max_claims']}, {state}"
            )
    for r in results:
        if r.error:
            print(f"\n[{r.backend} x{r.workers}] FAILED: {r.error}")


def print_store_ops(results: list[StoreOpsResult]) -> None:
    header = (
        f"{'backend':<9}{'links/task':>11}{'tasks':>7}{'seconds':>9}{'tasks/s':>9}"
        f"{'acquire ms':>11}{'report ms':>10}{'admit/s':>9}  check"
    )
    print("\nstore ops (acquire + report, in-process; ms per batch)\n" + header)
    print("-" * len(header))
    for r in results:
        print(
            f"{r.backend:<9}{r.links_per_task:>11}{r.tasks:>7}{fmt(r.seconds, '.2f'):>9}"
            f"{fmt(r.tasks_per_second, '.0f'):>9}{fmt(r.acquire_ms_per_batch, '.1f'):>11}"
            f"{fmt(r.report_ms_per_batch, '.1f'):>10}{fmt(r.admit_tasks_per_second, '.0f'):>9}"
            f"  {'ok' if r.ok else 'FAILED: ' + str(r.error)}"
        )


def print_flush(results: list[CrawlResult], rows: list[dict[str, Any]]) -> None:
    header = (
        f"{'backend':<9}{'every 100 s':>12}{'at end s':>10}{'cost %':>8}"
        f"{'run s cost %':>13}{'CPU cost %':>11}{'runs':>6}"
    )
    print("\nflush cost (median wall seconds; cost = every 100 vs at end; target < 5 %)")
    print(header + "\n" + "-" * len(header))
    for row in rows:
        runs = f"{row['runs_100']}+{row['runs_0']}"
        print(
            f"{row['backend']:<9}{fmt(row['seconds_100'], '.2f'):>12}"
            f"{fmt(row['seconds_0'], '.2f'):>10}{fmt(row['seconds_cost_percent'], '+.1f'):>8}"
            f"{fmt(row['run_seconds_cost_percent'], '+.1f'):>13}"
            f"{fmt(row['cpu_seconds_cost_percent'], '+.1f'):>11}{runs:>6}"
        )
    for r in results:
        if not r.ok or r.check != "ok":
            print(f"\n[flush {r.backend} interval {r.flush_interval}] {r.error or r.check}")


# --- main --------------------------------------------------------------------------------------


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--backend", choices=("sqlite", "postgres", "both"), default="both")
    parser.add_argument("--hosts", type=int, default=40)
    parser.add_argument("--pages-per-host", type=int, default=50)
    parser.add_argument("--delay", type=float, default=0.05, help="seconds per response")
    parser.add_argument("--page-bytes", type=int, default=20_000)
    parser.add_argument(
        "--workers",
        type=lambda s: [int(n) for n in s.split(",")],
        default=[1, 2, 4],
        help="worker process counts, comma-separated (the crawl process counts as one)",
    )
    parser.add_argument("--concurrency", type=int, default=16, help="per process")
    parser.add_argument("--store-tasks", type=int, default=10_000)
    parser.add_argument("--store-batch", type=int, default=64)
    parser.add_argument("--flush-hosts", type=int, default=20)
    parser.add_argument("--flush-pages-per-host", type=int, default=500)
    parser.add_argument("--flush-repeats", type=int, default=2)
    parser.add_argument(
        "--sample-interval",
        type=float,
        default=0.1,
        help="seconds between looks at the store's leases and claims during scaling; 0 = none",
    )
    parser.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="extra setting for every sitesync process, as SITESYNC_NAME (repeatable), "
        "e.g. --set heartbeat_seconds=1",
    )
    parser.add_argument("--pg-dsn", default=DEFAULT_PG)
    parser.add_argument("--timeout", type=float, default=600, help="seconds per crawl")
    parser.add_argument("--skip-scaling", action="store_true")
    parser.add_argument("--skip-store-ops", action="store_true")
    parser.add_argument("--skip-flush", action="store_true")
    parser.add_argument(
        "--live-src",
        action="store_true",
        help="run src/ as it is on disk instead of a snapshot taken at the start",
    )
    parser.add_argument("--json", type=Path, help="also write the results as JSON here")
    return parser.parse_args()


def check_postgres(dsn: str) -> str | None:
    try:
        with psycopg.connect(dsn, autocommit=True, connect_timeout=5) as conn:
            conn.execute("SELECT 1")
    except psycopg.Error as exc:
        return " ".join(str(exc).split())
    return None


def _terminate(signum: int, frame: object) -> None:
    raise KeyboardInterrupt  # so every finally runs: processes killed, stores removed


def main() -> int:
    args = parse_args()
    signal.signal(signal.SIGTERM, _terminate)
    settings_from(args.set)  # a malformed --set fails here, before anything starts
    backends = list(BACKENDS) if args.backend == "both" else [args.backend]
    payload: dict[str, Any] = {"args": {k: str(v) for k, v in vars(args).items()}}
    payload["cpus"] = os.cpu_count()
    ok = True
    if "postgres" in backends and (problem := check_postgres(args.pg_dsn)):
        print(f"PostgreSQL at {args.pg_dsn} unavailable, skipped: {problem}", file=sys.stderr)
        backends.remove("postgres")
        ok = False
        payload["postgres_error"] = problem
    print(f"backends: {', '.join(backends) or 'none'}; {os.cpu_count()} CPUs", flush=True)

    scaled: list[CrawlResult] = []
    ops: list[StoreOpsResult] = []
    flushed: list[CrawlResult] = []
    flush_rows: list[dict[str, Any]] = []
    global src_dir
    with tempfile.TemporaryDirectory(prefix="sitesync-workers-") as tmp_name:
        tmp = Path(tmp_name)
        if not args.live_src:
            src_dir = snapshot_src(tmp / "src")
            print(f"code under test: a snapshot of {REPO / 'src'}", flush=True)
        sys.path.insert(0, str(src_dir))
        if not args.skip_scaling and backends:
            scaled = scaling(args, backends, tmp)
        if not args.skip_store_ops and backends:
            ops = store_op_runs(args, backends, tmp)
        if not args.skip_flush and backends:
            flushed = flush_cost(args, backends, tmp)
            flush_rows = flush_summary(flushed, backends)

    if scaled:
        print_scaling(scaled)
    if ops:
        print_store_ops(ops)
    if flushed:
        print_flush(flushed, flush_rows)
    ok = ok and all(r.ok and r.check == "ok" for r in [*scaled, *flushed])
    ok = ok and all(r.ok for r in ops)
    if args.json:
        payload["scaling"] = [asdict(r) for r in scaled]
        payload["store_ops"] = [asdict(r) for r in ops]
        payload["flush"] = {"runs": [asdict(r) for r in flushed], "summary": flush_rows}
        args.json.write_text(json.dumps(payload, indent=2))
    return 0 if ok else 1


if __name__ == "__main__":
    try:
        sys.exit(main())
    except KeyboardInterrupt:  # Ctrl-C or SIGTERM: processes and stores are already cleaned up
        print("interrupted", file=sys.stderr)
        sys.exit(130)
