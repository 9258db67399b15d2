"""The shared backend: one PostgreSQL database, for workers on any number of machines.

Every write is one transaction that first locks its run's row (``lock_run``): writers of
one run queue on that row the way SQLite writers queue on the file lock, while other runs
and readers never wait. Task rows are only ever locked after the run row, so one lock
order holds everywhere and writers cannot deadlock each other; ``acquire`` still passes
over locked rows (``FOR UPDATE SKIP LOCKED``) rather than wait for them. A serialization
failure or deadlock from anything else (an operator's ad-hoc SQL) retries the transaction.

Times are epoch seconds from the store's ``clock``, exactly as in the SQLite store, so both
backends build the same models and one contract suite checks both.
"""

from __future__ import annotations

import asyncio
import functools
import random
import secrets
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import replace
from typing import Any, TypeVar

from psycopg import AsyncConnection, errors
from psycopg.rows import DictRow, dict_row
from psycopg.types.json import Jsonb
from psycopg_pool import AsyncConnectionPool

from sitesync.errors import RunNotFound, StoreError
from sitesync.models import (
    Attempt,
    Domain,
    Lease,
    NewTask,
    ReportVerdict,
    Run,
    RunConfig,
    RunStatus,
    Task,
    TaskReport,
    TaskState,
)
from sitesync.store._faults import DEFAULT_RETRY_SECONDS, FaultBudget
from sitesync.store._rows import (
    DEFAULT_MAX_ATTEMPTS_KEPT,
    attempt_from_row,
    attempt_rows,
    lease_from_row,
)
from sitesync.store._sql import load_queries
from sitesync.store.postgres._db import (
    Conn,
    application_name,
    apply_migrations,
    check_schema,
    connect,
    describe,
    errors_at,
    is_transient,
    use_schema,
)
from sitesync.store.postgres._rows import (
    domain_from_row,
    outcome_params,
    run_from_row,
    task_from_row,
)
from sitesync.store.postgres.coordination import PostgresCoordination, end_tasks_of_ended_hosts
from sitesync.store.postgres.overview import PostgresOverview
from sitesync.store.postgres.records import PostgresRecords
from sitesync.store.postgres.registry import PostgresRegistry
from sitesync.store.postgres.supervision import PostgresSupervision
from sitesync.store.rules import (
    ReportTally,
    admission_room,
    candidate_scan,
    check_transition,
    ended_delta,
    extended_hosts,
    leased_delta,
    merged_aliases,
    pick_per_host,
    prune_bounds,
    released_delta,
    report_query,
)

T = TypeVar("T")

_Q = load_queries("sitesync.store.postgres")

# Lock waits end in these only when something outside this store takes locks in another
# order; the whole transaction is safe to replay (it re-reads everything it decides on).
_RETRYABLE = (errors.SerializationFailure, errors.DeadlockDetected)
_ATTEMPTS = 4


class PostgresStore(
    PostgresRecords,
    PostgresCoordination,
    PostgresSupervision,
    PostgresOverview,
    PostgresRegistry,
):
    """All store interfaces on one PostgreSQL database (or one schema of it)."""

    max_attempts_kept: int = DEFAULT_MAX_ATTEMPTS_KEPT

    def __init__(
        self,
        pool: AsyncConnectionPool[Conn],
        *,
        where: str,
        clock: Callable[[], float] = time.time,
        retry_seconds: float = DEFAULT_RETRY_SECONDS,
    ) -> None:
        self._pool = pool
        self._where = where
        self._clock = clock
        self._closed = False
        self._faults = FaultBudget(where, is_transient, seconds=retry_seconds)

    @classmethod
    async def open(
        cls,
        dsn: str,
        *,
        min_size: int = 1,
        max_size: int = 10,
        clock: Callable[[], float] = time.time,
        schema: str | None = None,
        retry_seconds: float = DEFAULT_RETRY_SECONDS,
    ) -> PostgresStore:
        """Bring the schema up to date, then open a pool of ``min_size..max_size`` connections.

        ``schema`` (created if missing) becomes the ``search_path`` of every connection, so
        several stores can share one database without seeing each other. Opening fails at
        once when the server cannot be reached; afterwards transient faults are waited out
        for up to ``retry_seconds`` per call (see :mod:`sitesync.store._faults`).
        """
        where = describe(dsn)
        check_schema(schema)
        await cls.migrate(dsn, schema=schema, clock=clock)

        pool = AsyncConnectionPool(
            dsn,
            connection_class=AsyncConnection[DictRow],
            kwargs={"autocommit": True, "row_factory": dict_row, **application_name(dsn)},
            min_size=min_size,
            max_size=max_size,
            open=False,
            configure=None if schema is None else functools.partial(use_schema, schema=schema),
            name="sitesync",
        )
        try:
            async with errors_at(where, connecting=True):
                await pool.open(wait=True, timeout=30.0)
        except BaseException:
            await pool.close()  # stop its background workers; nothing else holds it
            raise
        return cls(pool, where=where, clock=clock, retry_seconds=retry_seconds)

    @classmethod
    async def migrate(
        cls, dsn: str, *, schema: str | None = None, clock: Callable[[], float] = time.time
    ) -> list[int]:
        """Apply the migrations the database lacks (for ``sitesync db upgrade``).

        Returns the versions applied now; empty when the schema was already current.
        """
        where = describe(dsn)
        check_schema(schema)
        async with await connect(dsn, where, schema) as conn, errors_at(where):
            return await apply_migrations(conn, schema, clock(), where)

    async def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        await self._pool.close()

    # -- plumbing -----------------------------------------------------------------------

    async def _transaction(self, work: Callable[[Conn], Awaitable[T]]) -> T:
        """``work`` in one transaction; replayed whole after a lost connection (within
        the fault budget) or a serialization failure."""
        self._check_open()
        async with errors_at(self._where):
            return await self._faults.run(functools.partial(self._attempt, work))

    async def _attempt(self, work: Callable[[Conn], Awaitable[T]]) -> T:
        for attempt in range(1, _ATTEMPTS + 1):
            try:
                async with self._pool.connection() as conn, conn.transaction():
                    return await work(conn)
            except _RETRYABLE:
                if attempt == _ATTEMPTS:
                    raise
                await asyncio.sleep(random.uniform(0.005, 0.02) * attempt)
        raise AssertionError("unreachable: the last attempt returns or raises")

    async def _rows(self, query: str, params: dict[str, Any]) -> list[DictRow]:
        return await self._fetch_all(_Q[query], params)

    async def _fetch_all(self, query: str, params: dict[str, Any]) -> list[DictRow]:
        """One read outside a transaction, retried like a transaction."""
        self._check_open()

        async def attempt() -> list[DictRow]:
            async with self._pool.connection() as conn:
                return await (await conn.execute(query, params)).fetchall()

        async with errors_at(self._where):
            return await self._faults.run(attempt)

    def _check_open(self) -> None:
        if self._closed:
            raise StoreError(f"store {self._where} is closed")

    @staticmethod
    async def _lock_run(conn: Conn, run_id: int) -> Run | None:
        row = await (await conn.execute(_Q["lock_run"], {"run_id": run_id})).fetchone()
        return None if row is None else run_from_row(row)

    @classmethod
    async def _require_run(cls, conn: Conn, run_id: int) -> Run:
        run = await cls._lock_run(conn, run_id)
        if run is None:
            raise RunNotFound(f"no run with id {run_id}")
        return run

    # -- runs -----------------------------------------------------------------------------

    async def create_run(self, config: RunConfig) -> Run:
        async def work(conn: Conn) -> Run:
            params = {
                "status": RunStatus.QUEUED.value,
                "config": Jsonb(config.to_json()),
                "now": self._clock(),
            }
            row = await (await conn.execute(_Q["insert_run"], params)).fetchone()
            assert row is not None  # INSERT ... RETURNING always yields the row
            return run_from_row(row)

        return await self._transaction(work)

    async def get_run(self, run_id: int) -> Run:
        rows = await self._rows("select_run", {"run_id": run_id})
        if not rows:
            raise RunNotFound(f"no run with id {run_id}")
        return run_from_row(rows[0])

    async def list_runs(self, *, limit: int = 50) -> list[Run]:
        return [run_from_row(row) for row in await self._rows("select_runs", {"limit": limit})]

    async def transition_run(self, run_id: int, to: RunStatus, *, reason: str | None = None) -> Run:
        replay = False

        async def work(conn: Conn) -> Run:
            nonlocal replay
            current = await self._require_run(conn, run_id)
            if replay and current.status is to:
                return current  # the first attempt committed; its acknowledgement was lost
            replay = True
            check_transition(current, to)
            params = {
                "run_id": run_id,
                "status": to.value,
                "expected": current.status.value,
                "reason": reason,
                "terminal": to.is_terminal,
                "now": self._clock(),
            }
            row = await (await conn.execute(_Q["update_run_status"], params)).fetchone()
            assert row is not None  # the run row is locked: its status cannot have moved
            return run_from_row(row)

        return await self._transaction(work)

    async def mark_seeded(self, run_id: int) -> None:
        async def work(conn: Conn) -> None:
            await conn.execute(_Q["mark_seeded"], {"run_id": run_id, "now": self._clock()})

        await self._transaction(work)

    async def extend_scope(self, run_id: int, hosts: Sequence[str]) -> Run:
        async def work(conn: Conn) -> Run:
            run = await self._require_run(conn, run_id)
            extra = extended_hosts(run.config.extra_hosts, hosts)
            if extra is None:
                return run
            config = replace(run.config, extra_hosts=extra)
            params = {"run_id": run_id, "config": Jsonb(config.to_json())}
            row = await (await conn.execute(_Q["update_run_config"], params)).fetchone()
            assert row is not None  # the run row is locked: it still exists
            return run_from_row(row)

        return await self._transaction(work)

    async def complete_if_drained(self, run_id: int) -> bool:
        async def work(conn: Conn) -> bool:
            params = {"run_id": run_id, "now": self._clock()}
            cursor = await conn.execute(_Q["complete_run_if_drained"], params)
            return cursor.rowcount == 1

        return await self._transaction(work)

    # -- domains --------------------------------------------------------------------------

    async def record_root_redirect(
        self, host: str, *, canonical_host: str, aliases: Sequence[str]
    ) -> Domain:
        async def work(conn: Conn) -> Domain:
            params = {
                "host": host,
                "canonical_host": canonical_host,
                "aliases": merged_aliases((), aliases, canonical_host),
                "now": self._clock(),
            }
            row = await (await conn.execute(_Q["upsert_domain_redirect"], params)).fetchone()
            assert row is not None  # an upsert with RETURNING always yields the row
            return domain_from_row(row)

        return await self._transaction(work)

    async def get_domain(self, host: str) -> Domain | None:
        rows = await self._rows("select_domain", {"host": host})
        return domain_from_row(rows[0]) if rows else None

    # -- frontier -------------------------------------------------------------------------

    async def add_tasks(self, run_id: int, tasks: Sequence[NewTask]) -> int:
        if not tasks:
            return 0

        async def work(conn: Conn) -> int:
            run = await self._require_run(conn, run_id)
            return await _admit(conn, run, tasks, self._clock())

        return await self._transaction(work)

    async def acquire(
        self,
        run_id: int,
        *,
        worker_id: str,
        limit: int,
        lease_seconds: float,
        exclude_hosts: Sequence[str] = (),
        claimed_only: bool = False,
        per_host: int | None = None,
    ) -> list[Lease]:
        # One token for every attempt: a replay after a lost commit acknowledgement finds
        # the tasks the first attempt leased instead of leasing more (which this worker
        # would renew for ever and never fetch).
        token, replay = secrets.randbits(62), False

        async def work(conn: Conn) -> list[Lease]:
            nonlocal replay
            if await self._lock_run(conn, run_id) is None:
                return []  # as in SQLite: nothing of an unknown run is eligible
            if replay:
                mine = {"run_id": run_id, "token": token}
                done = await (await conn.execute(_Q["select_leased_by_token"], mine)).fetchall()
                if done:
                    return [lease_from_row(r, run_id, token, r["lease_expires_at"]) for r in done]
            replay = True
            now = self._clock()
            expires_at = now + lease_seconds
            reclaimed = (
                await conn.execute(_Q["reclaim_expired"], {"run_id": run_id, "now": now})
            ).rowcount
            params = {
                "run_id": run_id,
                "worker_id": worker_id,
                "token": token,
                "expires_at": expires_at,
                "now": now,
                "scan": candidate_scan(limit, per_host),
                "exclude_hosts": list(exclude_hosts),
                "claimed_only": claimed_only,
            }
            candidates = await (await conn.execute(_Q["acquire_candidates"], params)).fetchall()
            ids = pick_per_host(candidates, limit, per_host)
            rows = await (await conn.execute(_Q["lease_tasks"], {**params, "ids": ids})).fetchall()
            if delta := leased_delta(run_id, now, len(rows), reclaimed):
                await conn.execute(_Q["move_counters"], delta)
            return [lease_from_row(row, run_id, token, expires_at) for row in rows]

        leases = await self._transaction(work)
        leases.sort(key=lambda lease: lease.task_id)
        return leases

    async def report(self, run_id: int, reports: Sequence[TaskReport]) -> list[ReportVerdict]:
        if not reports:
            return []

        async def work(conn: Conn) -> list[ReportVerdict]:
            run = await self._require_run(conn, run_id)
            now = self._clock()
            tally = ReportTally()
            for report in reports:
                state = await _record(conn, report, run.config.max_retries, now)
                if state is None:
                    tally.lost()
                elif tally.accept(report, state):
                    await self._save_records(conn, run_id, report, now)
            if delta := tally.counter_params(run_id, now):
                await conn.execute(_Q["move_counters"], delta)
            await _keep_attempts(conn, tally.accepted, self.max_attempts_kept, now)
            # move_counters leaves tasks_total alone, so the locked row's value still holds
            await _admit(conn, run, tally.discovered, now)
            return tally.verdicts

        return await self._transaction(work)

    async def list_attempts(self, task_id: int) -> list[Attempt]:
        return [
            attempt_from_row(row)
            for row in await self._rows("select_attempts", {"task_id": task_id})
        ]

    async def renew_leases(self, run_id: int, *, worker_id: str, lease_seconds: float) -> int:
        async def work(conn: Conn) -> int:
            if await self._lock_run(conn, run_id) is None:
                return 0
            now = self._clock()
            params = {
                "run_id": run_id,
                "worker_id": worker_id,
                "expires_at": now + lease_seconds,
                "now": now,
            }
            return (await conn.execute(_Q["renew_leases"], params)).rowcount

        return await self._transaction(work)

    async def release(
        self, run_id: int, leases: Sequence[Lease], *, not_before: float | None = None
    ) -> int:
        if not leases:
            return 0

        async def work(conn: Conn) -> int:
            if await self._lock_run(conn, run_id) is None:
                return 0
            now = self._clock()
            released = 0
            for lease in leases:
                params = {
                    "task_id": lease.task_id,
                    "token": lease.token,
                    "not_before": not_before,
                    "now": now,
                }
                released += (await conn.execute(_Q["release_lease"], params)).rowcount
            await _count_released(conn, run_id, released, now)
            return released

        return await self._transaction(work)

    async def release_worker(self, run_id: int, *, worker_id: str) -> int:
        async def work(conn: Conn) -> int:
            if await self._lock_run(conn, run_id) is None:
                return 0
            now = self._clock()
            params = {"run_id": run_id, "worker_id": worker_id, "now": now}
            released = (await conn.execute(_Q["release_worker"], params)).rowcount
            await _count_released(conn, run_id, released, now)
            return released

        return await self._transaction(work)

    async def next_eligible_at(self, run_id: int) -> float | None:
        [row] = await self._rows("next_eligible_at", {"run_id": run_id})
        return None if row["next_at"] is None else float(row["next_at"])

    async def get_task(self, run_id: int, url: str) -> Task | None:
        rows = await self._rows("select_task", {"run_id": run_id, "url": url})
        return task_from_row(rows[0]) if rows else None

    async def list_tasks(
        self, run_id: int, *, state: TaskState | None = None, limit: int = 1000
    ) -> list[Task]:
        params = {"run_id": run_id, "state": None if state is None else state.value, "limit": limit}
        return [task_from_row(row) for row in await self._rows("select_tasks", params)]

    async def count_tasks(self, run_id: int) -> dict[TaskState, int]:
        counts = dict.fromkeys(TaskState, 0)
        for row in await self._rows("count_by_state", {"run_id": run_id}):
            counts[TaskState(row["state"])] = row["n"]
        return counts


async def _admit(conn: Conn, run: Run, tasks: Sequence[NewTask], now: float) -> int:
    """Insert new tasks under the locked run row; how many were admitted."""
    if not tasks:
        return 0
    room = admission_room(run)
    if room is not None and room <= 0:
        return 0
    params = {
        "run_id": run.id,
        "urls": [task.url for task in tasks],
        "hosts": [task.host for task in tasks],
        "depths": [task.depth for task in tasks],
        "priorities": [task.priority for task in tasks],
        "found_from": [task.found_from for task in tasks],
        "room": room,
        "now": now,
    }
    row = await (await conn.execute(_Q["insert_tasks"], params)).fetchone()
    admitted = 0 if row is None else int(row["admitted"])
    if admitted:
        params = {"run_id": run.id, "admitted": admitted, "now": now}
        await conn.execute(_Q["add_admitted"], params)
        ended = await end_tasks_of_ended_hosts(conn, run.id, [t.host for t in tasks], now)
        if delta := ended_delta(run.id, now, ended):
            await conn.execute(_Q["move_counters"], delta)
    return admitted


async def _keep_attempts(conn: Conn, accepted: Sequence[TaskReport], keep: int, now: float) -> None:
    """The batch's attempt history in one statement; a prune only for tasks past the bound."""
    if not accepted:
        return
    rows = attempt_rows(accepted, now)
    columns = {
        "task_ids": "task_id", "attempts": "attempt", "started_at": "started_at",
        "ended_at": "ended_at", "worker_ids": "worker_id", "outcomes": "outcome",
        "http_statuses": "http_status", "errors": "error", "bytes": "bytes",
        "redirect_hops": "redirect_hops",
    }  # fmt: skip
    await conn.execute(
        _Q["insert_attempts"], {param: [row[col] for row in rows] for param, col in columns.items()}
    )
    bounds = prune_bounds(accepted, keep)
    if bounds:
        params = {"task_ids": list(bounds), "oldest_dropped": list(bounds.values())}
        await conn.execute(_Q["prune_attempts"], params)


async def _record(conn: Conn, report: TaskReport, max_retries: int, now: float) -> TaskState | None:
    """Apply one report under its lease; the task's new state, or None if fenced out."""
    query, params = report_query(report, max_retries, now)
    params.update(outcome_params(report))
    if report.ok:
        cursor = await conn.execute(_Q[query], params)
        return TaskState.COMPLETED if cursor.rowcount == 1 else None
    row = await (await conn.execute(_Q[query], params)).fetchone()
    return None if row is None else TaskState(row["state"])


async def _count_released(conn: Conn, run_id: int, released: int, now: float) -> None:
    if delta := released_delta(run_id, now, released):
        await conn.execute(_Q["move_counters"], delta)
