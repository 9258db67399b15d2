"""The embedded backend: one SQLite file in WAL mode, shared by any number of processes.

Every write is one ``BEGIN IMMEDIATE`` transaction, so writers queue on the file lock
(``busy_timeout``) instead of failing, and a reader never sees half a transition. A call
that still finds the database locked after ``busy_timeout`` is retried whole with backoff
for up to ``retry_seconds`` (see :mod:`sitesync.store._faults`): a lock held by a long
operator transaction or a backup delays the crawl instead of ending it. All calls
run on one private thread per store: sqlite3 releases the GIL while it works, so the event
loop keeps fetching during a commit.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import secrets
import sqlite3
import time
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from pathlib import Path
from typing import Any, TypeVar

from sitesync.errors import (
    MigrationError,
    RunNotFound,
    StoreError,
    StoreLocked,
)
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
from sitesync.store._sql import load_migrations, load_queries, refuse_newer
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
from sitesync.store.sqlite._rows import (
    domain_from_row,
    outcome_params,
    run_from_row,
    task_from_row,
    task_rows,
)
from sitesync.store.sqlite.coordination import SqliteCoordination, end_tasks_of_ended_hosts
from sitesync.store.sqlite.overview import SqliteOverview
from sitesync.store.sqlite.records import SqliteRecords
from sitesync.store.sqlite.registry import SqliteRegistry
from sitesync.store.sqlite.supervision import SqliteSupervision

T = TypeVar("T")

_Q = load_queries("sitesync.store.sqlite")


class SqliteStore(
    SqliteRecords, SqliteCoordination, SqliteSupervision, SqliteOverview, SqliteRegistry
):
    """All store interfaces on one SQLite file."""

    max_attempts_kept: int = DEFAULT_MAX_ATTEMPTS_KEPT

    def __init__(
        self,
        path: str | Path,
        *,
        busy_timeout: float = 30.0,
        synchronous: str = "NORMAL",
        clock: Callable[[], float] = time.time,
        retry_seconds: float = DEFAULT_RETRY_SECONDS,
    ) -> None:
        self.path = str(path)
        self._busy_timeout = busy_timeout
        self._synchronous = synchronous
        self._clock = clock
        self._thread = ThreadPoolExecutor(max_workers=1, thread_name_prefix="sitesync-sqlite")
        self._conn: sqlite3.Connection | None = None
        self._closed = False
        self._faults = FaultBudget(
            self.path, lambda exc: isinstance(exc, StoreLocked), seconds=retry_seconds
        )

    @classmethod
    async def open(cls, path: str | Path, **options: Any) -> SqliteStore:
        """Open (creating if needed) the database and bring its schema up to date."""
        store = cls(path, **options)
        try:
            await store._call(store._connect)
        except BaseException:
            await store.close()
            raise
        return store

    # -- plumbing -----------------------------------------------------------------------

    async def _call(self, fn: Callable[..., T], *args: Any) -> T:
        """``fn(*args)`` on the store's thread; again while the database stays locked.

        Safe to repeat: a write that met the lock rolled back, so nothing of it remains.
        """
        if self._closed:
            raise StoreError(f"store {self.path} is closed")
        loop = asyncio.get_running_loop()
        return await self._faults.run(lambda: loop.run_in_executor(self._thread, fn, *args))

    def _connect(self) -> None:
        stale, self._conn = self._conn, None
        if stale is not None:  # an earlier attempt met a locked database
            stale.close()
        if self.path != ":memory:":
            Path(self.path).parent.mkdir(parents=True, exist_ok=True)
        with self._errors():
            conn = sqlite3.connect(
                self.path, timeout=self._busy_timeout, isolation_level=None, check_same_thread=False
            )
            conn.row_factory = sqlite3.Row
            conn.execute(f"PRAGMA busy_timeout = {int(self._busy_timeout * 1000)}")
            if self.path != ":memory:":
                conn.execute("PRAGMA journal_mode = WAL")
            # NORMAL in WAL mode: a commit survives any process crash (SIGKILL included);
            # only an OS crash or power cut can lose the last commits. FULL closes that gap
            # at a throughput cost; see docs/decisions.md.
            conn.execute(f"PRAGMA synchronous = {self._synchronous}")
            conn.execute("PRAGMA foreign_keys = ON")
            self._conn = conn
            self._migrate()

    @contextlib.contextmanager
    def _errors(self) -> Iterator[None]:
        try:
            yield
        except sqlite3.OperationalError as exc:
            text = str(exc)
            if "locked" in text or "busy" in text:
                raise StoreLocked(
                    f"SQLite database {self.path} stayed locked for more than "
                    f"{self._busy_timeout:g}s (busy_timeout): {text}"
                ) from exc
            raise StoreError(f"SQLite error on {self.path}: {text}") from exc
        except sqlite3.DatabaseError as exc:
            raise StoreError(f"SQLite error on {self.path}: {exc}") from exc

    @contextlib.contextmanager
    def _write(self) -> Iterator[sqlite3.Connection]:
        conn = self._connection()
        with self._errors():
            conn.execute("BEGIN IMMEDIATE")
            try:
                yield conn
            except BaseException:
                conn.execute("ROLLBACK")
                raise
            conn.execute("COMMIT")

    def _connection(self) -> sqlite3.Connection:
        if self._conn is None:
            raise StoreError(f"store {self.path} is not open")
        return self._conn

    def _migrate(self) -> None:
        conn = self._connection()
        conn.execute(
            "CREATE TABLE IF NOT EXISTS schema_migrations "
            "(version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at REAL NOT NULL)"
        )
        with self._write():
            applied = {row[0] for row in conn.execute("SELECT version FROM schema_migrations")}
            migrations = load_migrations("sitesync.store.sqlite")
            refuse_newer(applied, migrations, self.path)
            for migration in migrations:
                if migration.version in applied:
                    continue
                try:
                    for statement in _statements(migration.sql):
                        conn.execute(statement)
                except sqlite3.DatabaseError as exc:
                    raise MigrationError(
                        f"migration {migration.version:04d}_{migration.name} failed: {exc}"
                    ) from exc
                conn.execute(
                    "INSERT INTO schema_migrations VALUES (?, ?, ?)",
                    (migration.version, migration.name, self._clock()),
                )

    async def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        conn, self._conn = self._conn, None
        if conn is not None:
            await asyncio.get_running_loop().run_in_executor(self._thread, conn.close)
        self._thread.shutdown(wait=True)

    # -- runs -----------------------------------------------------------------------------

    async def create_run(self, config: RunConfig) -> Run:
        return await self._call(self._create_run, config)

    def _create_run(self, config: RunConfig) -> Run:
        with self._write() as conn:
            row = conn.execute(
                _Q["insert_run"],
                {
                    "status": RunStatus.QUEUED.value,
                    "config": json.dumps(config.to_json()),
                    "now": self._clock(),
                },
            ).fetchone()
            return self._select_run(conn, row[0])

    async def get_run(self, run_id: int) -> Run:
        return await self._call(self._get_run, run_id)

    def _get_run(self, run_id: int) -> Run:
        with self._errors():
            return self._select_run(self._connection(), run_id)

    @staticmethod
    def _select_run(conn: sqlite3.Connection, run_id: int) -> Run:
        row = conn.execute(_Q["select_run"], {"run_id": run_id}).fetchone()
        if row is None:
            raise RunNotFound(f"no run with id {run_id}")
        return run_from_row(row)

    async def list_runs(self, *, limit: int = 50) -> list[Run]:
        return await self._call(self._list_runs, limit)

    def _list_runs(self, limit: int) -> list[Run]:
        with self._errors():
            rows = self._connection().execute(_Q["select_runs"], {"limit": limit}).fetchall()
        return [run_from_row(row) for row in rows]

    async def transition_run(self, run_id: int, to: RunStatus, *, reason: str | None = None) -> Run:
        return await self._call(self._transition_run, run_id, to, reason)

    def _transition_run(self, run_id: int, to: RunStatus, reason: str | None) -> Run:
        with self._write() as conn:
            current = self._select_run(conn, run_id)
            check_transition(current, to)
            conn.execute(
                _Q["update_run_status"],
                {
                    "run_id": run_id,
                    "status": to.value,
                    "expected": current.status.value,
                    "reason": reason,
                    "terminal": to.is_terminal,
                    "now": self._clock(),
                },
            )
            return self._select_run(conn, run_id)

    async def complete_if_drained(self, run_id: int) -> bool:
        return await self._call(self._complete_if_drained, run_id)

    def _complete_if_drained(self, run_id: int) -> bool:
        with self._write() as conn:
            cursor = conn.execute(
                _Q["complete_run_if_drained"], {"run_id": run_id, "now": self._clock()}
            )
            return cursor.rowcount == 1

    async def mark_seeded(self, run_id: int) -> None:
        await self._call(self._mark_seeded, run_id)

    def _mark_seeded(self, run_id: int) -> None:
        with self._write() as conn:
            conn.execute(_Q["mark_seeded"], {"run_id": run_id, "now": self._clock()})

    async def extend_scope(self, run_id: int, hosts: Sequence[str]) -> Run:
        return await self._call(self._extend_scope, run_id, tuple(hosts))

    def _extend_scope(self, run_id: int, hosts: tuple[str, ...]) -> Run:
        with self._write() as conn:
            run = self._select_run(conn, run_id)
            extra = extended_hosts(run.config.extra_hosts, hosts)
            if extra is not None:
                config = replace(run.config, extra_hosts=extra)
                conn.execute(
                    _Q["update_run_config"],
                    {"run_id": run_id, "config": json.dumps(config.to_json())},
                )
                run = self._select_run(conn, run_id)
            return run

    # -- domains --------------------------------------------------------------------------

    async def record_root_redirect(
        self, host: str, *, canonical_host: str, aliases: Sequence[str]
    ) -> Domain:
        return await self._call(self._record_root_redirect, host, canonical_host, tuple(aliases))

    def _record_root_redirect(
        self, host: str, canonical_host: str, aliases: tuple[str, ...]
    ) -> Domain:
        with self._write() as conn:
            row = conn.execute(_Q["select_domain"], {"host": host}).fetchone()
            known = tuple(json.loads(row["aliases"])) if row is not None else ()
            merged = merged_aliases(known, aliases, canonical_host)
            conn.execute(
                _Q["upsert_domain_redirect"],
                {
                    "host": host,
                    "canonical_host": canonical_host,
                    "aliases": json.dumps(merged),
                    "now": self._clock(),
                },
            )
            return domain_from_row(conn.execute(_Q["select_domain"], {"host": host}).fetchone())

    async def get_domain(self, host: str) -> Domain | None:
        return await self._call(self._get_domain, host)

    def _get_domain(self, host: str) -> Domain | None:
        with self._errors():
            row = self._connection().execute(_Q["select_domain"], {"host": host}).fetchone()
        return None if row is None else domain_from_row(row)

    # -- frontier -------------------------------------------------------------------------

    async def add_tasks(self, run_id: int, tasks: Sequence[NewTask]) -> int:
        if not tasks:
            return 0
        return await self._call(self._add_tasks, run_id, tasks)

    def _add_tasks(self, run_id: int, tasks: Sequence[NewTask]) -> int:
        with self._write() as conn:
            return self._admit(conn, run_id, tasks, self._clock())

    def _admit(
        self, conn: sqlite3.Connection, run_id: int, tasks: Sequence[NewTask], now: float
    ) -> int:
        if not tasks:
            return 0
        room = admission_room(self._select_run(conn, run_id))
        before = conn.total_changes
        if room is None:
            conn.executemany(_Q["insert_task"], task_rows(run_id, tasks, now))
            admitted = conn.total_changes - before
        else:
            # Duplicates do not count against max_pages, so insert in slices no larger
            # than the room left and re-measure after each.
            admitted, position = 0, 0
            while room > 0 and position < len(tasks):
                chunk = tasks[position : position + room]
                position += len(chunk)
                mark = conn.total_changes
                conn.executemany(_Q["insert_task"], task_rows(run_id, chunk, now))
                gained = conn.total_changes - mark
                admitted += gained
                room -= gained
        if admitted:
            conn.execute(_Q["add_admitted"], {"run_id": run_id, "admitted": admitted, "now": now})
            ended = end_tasks_of_ended_hosts(conn, run_id, [t.host for t in tasks], now)
            if delta := ended_delta(run_id, now, ended):
                conn.execute(_Q["move_counters"], delta)
        return admitted

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
        return await self._call(
            self._acquire,
            run_id,
            worker_id,
            limit,
            lease_seconds,
            tuple(exclude_hosts),
            claimed_only,
            per_host,
        )

    def _acquire(
        self,
        run_id: int,
        worker_id: str,
        limit: int,
        lease_seconds: float,
        exclude_hosts: tuple[str, ...],
        claimed_only: bool,
        per_host: int | None,
    ) -> list[Lease]:
        now = self._clock()
        token = secrets.randbits(62)
        expires_at = now + lease_seconds
        with self._write() as conn:
            reclaimed = conn.execute(_Q["reclaim_expired"], {"run_id": run_id, "now": now}).rowcount
            params = {
                "run_id": run_id,
                "worker_id": worker_id,
                "token": token,
                "expires_at": expires_at,
                "now": now,
                "scan": candidate_scan(limit, per_host),
                "exclude_hosts": json.dumps(exclude_hosts),
                "claimed_only": claimed_only,
            }
            candidates = conn.execute(_Q["acquire_candidates"], params).fetchall()
            ids = pick_per_host(candidates, limit, per_host)
            rows = conn.execute(_Q["lease_tasks"], {**params, "ids": json.dumps(ids)}).fetchall()
            if delta := leased_delta(run_id, now, len(rows), reclaimed):
                conn.execute(_Q["move_counters"], delta)
        leases = [lease_from_row(row, run_id, token, expires_at) for row in rows]
        leases.sort(key=lambda lease: lease.task_id)
        return leases

    async def report(self, run_id: int, reports: Sequence[TaskReport]) -> list[ReportVerdict]:
        if not reports:
            return []
        return await self._call(self._report, run_id, reports)

    def _report(self, run_id: int, reports: Sequence[TaskReport]) -> list[ReportVerdict]:
        now = self._clock()
        tally = ReportTally()
        with self._write() as conn:
            max_retries = self._select_run(conn, run_id).config.max_retries
            for report in reports:
                state = self._record(conn, report, max_retries, now)
                if state is None:
                    tally.lost()
                elif tally.accept(report, state):
                    self._save_records(conn, run_id, report, now)
            if delta := tally.counter_params(run_id, now):
                conn.execute(_Q["move_counters"], delta)
            self._keep_attempts(conn, tally.accepted, now)
            self._admit(conn, run_id, tally.discovered, now)
        return tally.verdicts

    def _keep_attempts(
        self, conn: sqlite3.Connection, accepted: Sequence[TaskReport], now: float
    ) -> None:
        """The batch's attempt history: one executemany, and a prune only for tasks past
        the bound."""
        if not accepted:
            return
        conn.executemany(_Q["insert_attempt"], attempt_rows(accepted, now))
        for task_id, oldest_dropped in prune_bounds(accepted, self.max_attempts_kept).items():
            conn.execute(
                _Q["prune_attempts"], {"task_id": task_id, "oldest_dropped": oldest_dropped}
            )

    async def list_attempts(self, task_id: int) -> list[Attempt]:
        return await self._call(self._list_attempts, task_id)

    def _list_attempts(self, task_id: int) -> list[Attempt]:
        with self._errors():
            rows = self._connection().execute(_Q["select_attempts"], {"task_id": task_id})
            return [attempt_from_row(row) for row in rows.fetchall()]

    @staticmethod
    def _record(
        conn: sqlite3.Connection, report: TaskReport, max_retries: int, now: float
    ) -> TaskState | None:
        """Apply one report under its lease; the task's new state, or None if fenced out."""
        query, params = report_query(report, max_retries, now)
        params.update(outcome_params(report))
        if report.ok:
            cursor = conn.execute(_Q[query], params)
            return TaskState.COMPLETED if cursor.rowcount == 1 else None
        row = conn.execute(_Q[query], params).fetchone()
        return None if row is None else TaskState(row[0])

    async def renew_leases(self, run_id: int, *, worker_id: str, lease_seconds: float) -> int:
        return await self._call(self._renew_leases, run_id, worker_id, lease_seconds)

    def _renew_leases(self, run_id: int, worker_id: str, lease_seconds: float) -> int:
        now = self._clock()
        with self._write() as conn:
            return conn.execute(
                _Q["renew_leases"],
                {
                    "run_id": run_id,
                    "worker_id": worker_id,
                    "expires_at": now + lease_seconds,
                    "now": now,
                },
            ).rowcount

    async def release(
        self, run_id: int, leases: Sequence[Lease], *, not_before: float | None = None
    ) -> int:
        if not leases:
            return 0
        return await self._call(self._release, run_id, leases, not_before)

    def _release(self, run_id: int, leases: Sequence[Lease], not_before: float | None) -> int:
        now = self._clock()
        with self._write() as conn:
            released = 0
            for lease in leases:
                released += conn.execute(
                    _Q["release_lease"],
                    {
                        "task_id": lease.task_id,
                        "token": lease.token,
                        "not_before": not_before,
                        "now": now,
                    },
                ).rowcount
            if delta := released_delta(run_id, now, released):
                conn.execute(_Q["move_counters"], delta)
            return released

    async def release_worker(self, run_id: int, *, worker_id: str) -> int:
        return await self._call(self._release_worker, run_id, worker_id)

    def _release_worker(self, run_id: int, worker_id: str) -> int:
        now = self._clock()
        with self._write() as conn:
            released: int = conn.execute(
                _Q["release_worker"], {"run_id": run_id, "worker_id": worker_id, "now": now}
            ).rowcount
            if delta := released_delta(run_id, now, released):
                conn.execute(_Q["move_counters"], delta)
            return released

    async def next_eligible_at(self, run_id: int) -> float | None:
        return await self._call(self._next_eligible_at, run_id)

    def _next_eligible_at(self, run_id: int) -> float | None:
        with self._errors():
            row = self._connection().execute(_Q["next_eligible_at"], {"run_id": run_id}).fetchone()
        return None if row[0] is None else float(row[0])

    async def get_task(self, run_id: int, url: str) -> Task | None:
        return await self._call(self._get_task, run_id, url)

    def _get_task(self, run_id: int, url: str) -> Task | None:
        with self._errors():
            row = (
                self._connection()
                .execute(_Q["select_task"], {"run_id": run_id, "url": url})
                .fetchone()
            )
        return None if row is None else task_from_row(row)

    async def list_tasks(
        self, run_id: int, *, state: TaskState | None = None, limit: int = 1000
    ) -> list[Task]:
        return await self._call(self._list_tasks, run_id, state, limit)

    def _list_tasks(self, run_id: int, state: TaskState | None, limit: int) -> list[Task]:
        params = {"run_id": run_id, "state": None if state is None else state.value, "limit": limit}
        with self._errors():
            rows = self._connection().execute(_Q["select_tasks"], params).fetchall()
        return [task_from_row(row) for row in rows]

    async def count_tasks(self, run_id: int) -> dict[TaskState, int]:
        return await self._call(self._count_tasks, run_id)

    def _count_tasks(self, run_id: int) -> dict[TaskState, int]:
        with self._errors():
            rows = self._connection().execute(_Q["count_by_state"], {"run_id": run_id}).fetchall()
        counts = dict.fromkeys(TaskState, 0)
        for row in rows:
            counts[TaskState(row["state"])] = row["n"]
        return counts


def _statements(script: str) -> Iterator[str]:
    """Split a migration into statements (sqlite3 runs one per execute)."""
    buffer = ""
    for line in script.splitlines(keepends=True):
        buffer += line
        if sqlite3.complete_statement(buffer):
            yield buffer
            buffer = ""
    if buffer.strip() and not all(
        part.strip().startswith("--") or not part.strip() for part in buffer.splitlines()
    ):
        raise MigrationError(f"unterminated SQL statement in migration: {buffer[:200]!r}")
