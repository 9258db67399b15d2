"""The store API in-process, no HTTP: task lifecycles and acquire latency (``fleet.py``).

Only the public store API (``sitesync.store.open_store`` and the ``Store`` protocol) is used,
so the figures stay comparable across redesigns of what is behind it.
"""

from __future__ import annotations

import contextlib
import os
import random
import time
from collections import Counter
from collections.abc import Awaitable, Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import psycopg
from fleet_stats import latency_summary
from psycopg import sql
from workers import reports_with_links

from sitesync.models import Lease, NewTask, RunConfig, RunStatus
from sitesync.readmodel.overview import Overview, OverviewOptions
from sitesync.store import Store, open_store

WORKER = "bench-worker"
CLAIM_SECONDS = 120.0  # the worker's default
LEASE_SECONDS = 60.0


@contextlib.contextmanager
def counting_statements() -> Iterator[Counter[str]]:
    """Count what the PostgreSQL store sends, in this process: ``execute`` calls,
    ``executemany`` calls (one pipelined round trip each) and their rows, transactions.

    It wraps psycopg's async cursor and connection methods for the duration, not sitesync's.
    """
    counts: Counter[str] = Counter()
    cursor, conn = psycopg.AsyncCursor, psycopg.AsyncConnection
    execute, executemany, transaction = cursor.execute, cursor.executemany, conn.transaction

    async def counted_execute(self: Any, *args: Any, **kwargs: Any) -> Any:
        counts["execute"] += 1
        return await execute(self, *args, **kwargs)

    async def counted_executemany(self: Any, query: Any, params_seq: Any, **kwargs: Any) -> Any:
        rows = list(params_seq)
        counts["executemany"] += 1
        counts["executemany_rows"] += len(rows)
        return await executemany(self, query, rows, **kwargs)

    def counted_transaction(self: Any, *args: Any, **kwargs: Any) -> Any:
        counts["transactions"] += 1
        return transaction(self, *args, **kwargs)

    cursor.execute = counted_execute  # type: ignore[method-assign]
    cursor.executemany = counted_executemany  # type: ignore[method-assign]
    conn.transaction = counted_transaction  # type: ignore[method-assign]
    try:
        yield counts
    finally:
        cursor.execute, cursor.executemany = execute, executemany  # type: ignore[method-assign]
        conn.transaction = transaction  # type: ignore[method-assign]


async def running_run(store: Store) -> int:
    """A new run, running, seeded, with this process registered as its one worker."""
    run = await store.create_run(RunConfig(seeds=("http://h0.bench.invalid/",)))
    await store.transition_run(run.id, RunStatus.RUNNING)
    await store.mark_seeded(run.id)
    await store.register_worker(run.id, worker_id=WORKER, host="bench", pid=os.getpid())
    return run.id


async def claim(store: Store, run_id: int) -> None:
    await store.claim_hosts(
        run_id, worker_id=WORKER, claim_seconds=CLAIM_SECONDS, worker_ttl=CLAIM_SECONDS
    )


async def acquire(store: Store, run_id: int, limit: int) -> list[Lease]:
    """As the worker asks: only from hosts it holds a claim on."""
    return await store.acquire(
        run_id, worker_id=WORKER, limit=limit, lease_seconds=LEASE_SECONDS, claimed_only=True
    )


def host_tasks(start: int, count: int, hosts: int, path: str = "p") -> list[NewTask]:
    names = [f"h{h}.bench.invalid" for h in range(hosts)]
    return [
        NewTask(url=f"http://{names[i % hosts]}/{path}/{i}", host=names[i % hosts], depth=1)
        for i in range(start, start + count)
    ]


# --- lifecycles ------------------------------------------------------------------------------


@dataclass
class LifecycleResult:
    backend: str
    links_per_task: int
    tasks: int = 0
    admit_seconds: float = 0.0  # add_tasks of the initial tasks, in chunks of 1000
    claim_seconds: float = 0.0
    acquire_seconds: float = 0.0
    report_seconds: float = 0.0
    lifecycles_per_second: float | None = None  # tasks / all four
    acquire_report_per_second: float | None = None  # tasks / (acquire + report): old metric
    statements: dict[str, int] = field(default_factory=dict)  # PostgreSQL only
    ok: bool = False
    error: str | None = None


async def lifecycles(
    db: str,
    *,
    backend: str,
    tasks: int,
    links: int,
    hosts: int,
    acquire_batch: int,
    report_batch: int,
    count: bool,
) -> LifecycleResult:
    """``tasks`` tasks admitted (``add_tasks``), acquired as the worker does (claimed hosts,
    ``acquire_batch`` at a time) and reported completed ``report_batch`` at a time, each
    report discovering ``links`` links: half of them URLs already in the run, the rest new
    (admitted and left pending, as a crawl's frontier grows)."""
    result = LifecycleResult(backend, links)
    counting = counting_statements() if count else contextlib.nullcontext(Counter[str]())
    store = await open_store(db)
    try:
        run_id = await running_run(store)
        initial = host_tasks(0, tasks, hosts)
        rng = random.Random(0)
        with counting as counts:
            fresh = await _lifecycle_loop(
                store, run_id, initial, result, rng, links, acquire_batch, report_batch
            )
        result.statements = dict(counts)
        counters = (await store.get_run(run_id)).counters
    finally:
        await store.close()
    spent = result.admit_seconds + result.claim_seconds + result.acquire_seconds
    result.lifecycles_per_second = result.tasks / (spent + result.report_seconds)
    result.acquire_report_per_second = result.tasks / (
        result.acquire_seconds + result.report_seconds
    )
    problems = []
    if result.tasks != tasks:
        problems.append(f"only {result.tasks} of {tasks} tasks could be acquired")
    if counters.completed != tasks:
        problems.append(f"{counters.completed} completed, expected {tasks}")
    if counters.tasks_total != tasks + fresh:
        problems.append(f"{counters.tasks_total} tasks in the run, expected {tasks + fresh}")
    result.error = "; ".join(problems) or None
    result.ok = not problems
    return result


async def _lifecycle_loop(
    store: Store,
    run_id: int,
    initial: list[NewTask],
    result: LifecycleResult,
    rng: random.Random,
    links: int,
    acquire_batch: int,
    report_batch: int,
) -> int:
    """The timed part of ``lifecycles``; returns how many new URLs the reports discovered."""
    t = time.perf_counter()
    for i in range(0, len(initial), 1000):
        await store.add_tasks(run_id, initial[i : i + 1000])
    result.admit_seconds = time.perf_counter() - t
    t = time.perf_counter()
    await claim(store, run_id)
    result.claim_seconds += time.perf_counter() - t
    fresh, held = 0, []
    while result.tasks < len(initial):
        t = time.perf_counter()
        leases = await acquire(store, run_id, min(acquire_batch, len(initial) - result.tasks))
        result.acquire_seconds += time.perf_counter() - t
        held += leases
        result.tasks += len(leases)
        if not leases and not held:
            break
        if len(held) < report_batch and leases and result.tasks < len(initial):
            continue
        reports, fresh = reports_with_links(held, initial, links, rng, fresh)
        t = time.perf_counter()
        await store.report(run_id, reports)
        result.report_seconds += time.perf_counter() - t
        held = []
    return fresh


# --- acquire latency against the size of the frontier ---------------------------------------


@dataclass
class LatencyPoint:
    backend: str
    pending: int
    build_seconds: float  # add_tasks from the previous size to this one
    acquire: dict[str, Any] = field(default_factory=dict)  # latency_summary of acquire
    claim: dict[str, Any] = field(default_factory=dict)  # latency_summary of claim_hosts
    # What `sitesync status` reads (Overview.status) and the dashboard's run page
    # (Overview.detail), the run idle between acquires: the read model's whole path.
    status: dict[str, Any] = field(default_factory=dict)
    run_page: dict[str, Any] = field(default_factory=dict)
    leases_per_acquire: float | None = None
    load_1min: float | None = None
    # PostgreSQL: the planner's statistics of the tasks table when measured (autovacuum's
    # analyze lags behind bulk inserts; a plan from stale statistics can cost far more).
    planner: dict[str, Any] = field(default_factory=dict)


async def acquire_latency(
    db: str,
    *,
    backend: str,
    sizes: Sequence[int],
    hosts: int,
    samples: int,
    limit: int,
    claim_samples: int,
    budget: float,
    analyze: bool = False,
    chunk: int = 5000,
    progress: Callable[[LatencyPoint], None] | None = None,
) -> list[LatencyPoint]:
    """For each frontier size (ascending), grow the run's pending tasks to that size with
    bulk ``add_tasks``, then time ``claim_samples`` claim refreshes and ``samples`` acquires
    of ``limit`` tasks, each given back at once (``release``, not timed) so the frontier
    keeps its size. Each series stops early after ``budget`` seconds (at least 10 calls).
    With ``analyze`` (PostgreSQL), the tables are analyzed before measuring, as autovacuum
    eventually would."""
    points = []
    store = await open_store(db)
    try:
        run_id = await running_run(store)
        have = 0
        for size in sizes:
            t = time.perf_counter()
            while have < size:
                count = min(chunk, size - have)
                await store.add_tasks(run_id, host_tasks(have, count, hosts))
                have += count
            point = LatencyPoint(backend, size, time.perf_counter() - t)
            if backend == "postgres":
                point.planner = await planner_stats(db, analyze=analyze)
            await _measure(store, run_id, point, samples, limit, claim_samples, budget)
            points.append(point)
            if progress is not None:
                progress(point)
    finally:
        await store.close()
    return points


async def _read_model(
    store: Store, run_id: int, samples: int, budget: float
) -> tuple[dict[str, Any], dict[str, Any]]:
    """Latencies of ``sitesync status`` and of the dashboard's run page over this frontier."""
    overview = Overview(store, OverviewOptions())
    status_s = await series(overview.status, samples, budget)
    page_s = await series(lambda: overview.detail(run_id), samples, budget)
    return latency_summary(status_s), latency_summary(page_s)


async def series(call: Callable[[], Awaitable[Any]], samples: int, budget: float) -> list[float]:
    """Seconds of each of up to ``samples`` calls, stopping after ``budget`` seconds once
    there are 10."""
    seconds: list[float] = []
    started = time.perf_counter()
    for i in range(samples):
        if i >= 10 and time.perf_counter() - started > budget:
            break
        t = time.perf_counter()
        await call()
        seconds.append(time.perf_counter() - t)
    return seconds


async def planner_stats(db: str, *, analyze: bool) -> dict[str, Any]:
    """Rows changed in ``tasks`` since its last analyze, and whether one ever ran; with
    ``analyze``, an ANALYZE of the store's schema first."""
    async with await psycopg.AsyncConnection.connect(db, autocommit=True) as conn:
        if analyze:
            cur = await conn.execute(
                "SELECT relname FROM pg_stat_user_tables WHERE schemaname = current_schema()"
            )
            for (name,) in await cur.fetchall():
                await conn.execute(sql.SQL("ANALYZE {}").format(sql.Identifier(name)))
        cur = await conn.execute(
            "SELECT n_mod_since_analyze, last_autoanalyze IS NOT NULL, last_analyze IS NOT NULL "
            "FROM pg_stat_user_tables WHERE schemaname = current_schema() AND relname = 'tasks'"
        )
        row = await cur.fetchone()
    if row is None:
        return {}
    return {"changed_since_analyze": row[0], "autoanalyzed": row[1], "analyzed": row[2]}


async def _measure(
    store: Store, run_id: int, point: LatencyPoint, samples: int, limit: int,
    claim_samples: int, budget: float,
) -> None:  # fmt: skip
    claim_s = await series(lambda: claim(store, run_id), claim_samples, budget)
    acquire_s: list[float] = []
    got = 0
    started = time.perf_counter()
    for i in range(samples):
        if i >= 10 and time.perf_counter() - started > budget:
            break
        t = time.perf_counter()
        leases = await acquire(store, run_id, limit)
        acquire_s.append(time.perf_counter() - t)
        got += len(leases)
        await store.release(run_id, leases)
    point.acquire, point.claim = latency_summary(acquire_s), latency_summary(claim_s)
    point.status, point.run_page = await _read_model(store, run_id, claim_samples, budget)
    point.leases_per_acquire = got / len(acquire_s) if acquire_s else None
    point.load_1min = os.getloadavg()[0]
