"""The SQLite store's plumbing: its connection, thread, transactions, queries and migrations.

Every write is one ``BEGIN IMMEDIATE`` transaction, so writers queue on the file lock
(``busy_timeout``) instead of failing, and a reader never sees half a transition. A call
that still finds the database locked after ``busy_timeout`` is retried whole with backoff
for up to ``retry_seconds`` (see :mod:`sitesync.store._faults`): a lock held by a long
operator transaction or a backup delays the crawl instead of ending it. All calls run on
one private thread per store: sqlite3 releases the GIL while it works, so the event loop
keeps fetching during a commit.

The areas of the store write each call once, as a plain function of the connection handed
to :meth:`SqliteDb.transaction` or :meth:`SqliteDb.read`, with its SQL found by name in
:data:`Q`. ``transaction``, ``rows`` and ``execute`` are named and shaped as the PostgreSQL
store's, so an area reads alike on both.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import sqlite3
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, TypeVar
from urllib.parse import quote

from sitesync.config import setting_default
from sitesync.errors import MigrationError, StoreError, StoreLocked, StoreNotReady
from sitesync.store._area import Area
from sitesync.store._faults import DEFAULT_RETRY_SECONDS, FaultBudget
from sitesync.store._sql import check_current, load_migrations, load_namespace, refuse_newer
from sitesync.store._steps import Fetch, Script, Step, Write
from sitesync.store.sqlite._rows import DECODE

T = TypeVar("T")

_PACKAGE = "sitesync.store.sqlite"
#: Every named query of the backend (``*.sql`` beside this module), loaded once.
Q = load_namespace(_PACKAGE)


class SqliteDb:
    """One SQLite file: a connection used only on the store's private thread."""

    def __init__(
        self,
        path: str | Path,
        *,
        busy_timeout: float = setting_default("sqlite_busy_timeout"),
        synchronous: str = "NORMAL",
        clock: Callable[[], float] = time.time,
        retry_seconds: float = DEFAULT_RETRY_SECONDS,
        migrate: bool = True,
    ) -> None:
        self.path = str(path)
        self.migrates = migrate  # False: create and migrate nothing (commands that only read)
        self.clock = clock
        self.decode = DECODE
        self._busy_timeout = busy_timeout
        self._synchronous = synchronous
        self._thread = ThreadPoolExecutor(max_workers=1, thread_name_prefix="sitesync-sqlite")
        self._conn: sqlite3.Connection | None = None
        self._closed = False
        self._faults = FaultBudget(
            self.path, lambda exc: isinstance(exc, StoreLocked), seconds=retry_seconds
        )

    async def open(self) -> None:
        """Open (creating if needed) the database and bring its schema up to date; or, not
        migrating, open it as it is (``StoreNotReady`` if missing or older than ours)."""
        await self._call(self._connect)

    async def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        conn, self._conn = self._conn, None
        if conn is not None:
            await asyncio.get_running_loop().run_in_executor(self._thread, conn.close)
        self._thread.shutdown(wait=True)

    # -- what the areas use -------------------------------------------------------------

    async def transaction(self, work: Callable[[sqlite3.Connection], T]) -> T:
        """``work(conn)`` in one ``BEGIN IMMEDIATE`` transaction on the store's thread."""
        return await self._call(self._run_in_transaction, work)

    async def read(self, work: Callable[[sqlite3.Connection], T]) -> T:
        """``work(conn)`` on the store's thread, outside any transaction (reads only)."""
        return await self._call(self._outside_transaction, work)

    async def run(self, make: Callable[[], Script[T]], *, reads_only: bool = False) -> T:
        """The script ``make()`` returns (:mod:`sitesync.store._steps`) in one transaction,
        or, ``reads_only``, outside any (as :meth:`read`)."""

        def work(conn: sqlite3.Connection) -> T:
            return run_steps(conn, make())

        return await (self.read(work) if reads_only else self.transaction(work))

    async def rows(self, query: str, params: Mapping[str, Any] | None = None) -> list[Any]:
        """The rows of one read query."""

        def work(conn: sqlite3.Connection) -> list[Any]:
            return conn.execute(Q[query], params or {}).fetchall()

        return await self.read(work)

    def text_list(self, values: Sequence[str]) -> str:
        """A JSON array, read in the queries with ``json_each``."""
        return json.dumps(list(values))

    def json(self, value: Any) -> str | None:
        """A value for a JSON (text) column (None: NULL)."""
        return None if value is None else json.dumps(value)

    async def execute(
        self, query: str, params: Mapping[str, Any], *, run_id: int | None = None
    ) -> int:
        """One write query in its own transaction, with ``now``; how many rows it changed.

        ``run_id`` is for the PostgreSQL store's run-row lock; here ``BEGIN IMMEDIATE``
        already queues every writer of the file.
        """
        del run_id

        def work(conn: sqlite3.Connection) -> int:
            return conn.execute(Q[query], {**params, "now": self.clock()}).rowcount

        return await self.transaction(work)

    # -- the thread, errors and transactions ---------------------------------------------

    async def _call(self, fn: Callable[..., T], *args: Any) -> T:
        """``fn(*args)`` on the store's thread; again while the database stays locked.

        Safe to repeat: a write that met the lock rolled back, so nothing of it remains.
        """
        if self._closed:
            raise StoreError(f"store {self.path} is closed")
        loop = asyncio.get_running_loop()
        return await self._faults.run(lambda: loop.run_in_executor(self._thread, fn, *args))

    def _run_in_transaction(self, work: Callable[[sqlite3.Connection], T]) -> T:
        with self._begin_immediate() as conn:
            return work(conn)

    def _outside_transaction(self, work: Callable[[sqlite3.Connection], T]) -> T:
        with self._errors():
            return work(self._connection())

    @contextlib.contextmanager
    def _begin_immediate(self) -> Iterator[sqlite3.Connection]:
        conn = self._connection()
        with self._errors():
            conn.execute("BEGIN IMMEDIATE")
            try:
                yield conn
            except BaseException:
                conn.execute("ROLLBACK")
                raise
            conn.execute("COMMIT")

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

    def _connection(self) -> sqlite3.Connection:
        if self._conn is None:
            raise StoreError(f"store {self.path} is not open")
        return self._conn

    # -- opening ----------------------------------------------------------------------------

    def _connect(self) -> None:
        stale, self._conn = self._conn, None
        if stale is not None:  # an earlier attempt met a locked database
            stale.close()
        if not self.migrates:
            if not Path(self.path).is_file():
                raise StoreNotReady(
                    f"no store at {self.path}: nothing was crawled into it (check --db); a "
                    "command that only reads never creates one"
                )
        elif self.path != ":memory:":
            Path(self.path).parent.mkdir(parents=True, exist_ok=True)
        with self._errors():
            # Not migrating: "mode=rw" opens the file that is there, and never creates one.
            target = self.path if self.migrates else f"file:{quote(self.path)}?mode=rw"
            conn = sqlite3.connect(
                target, timeout=self._busy_timeout, isolation_level=None,
                check_same_thread=False, uri=not self.migrates,
            )  # fmt: skip
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
            if self.migrates:
                self._migrate()
            else:
                self._check_current()

    def _check_current(self) -> None:
        conn = self._connection()
        known = conn.execute(
            "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'schema_migrations'"
        ).fetchone()
        if known is None:
            raise StoreNotReady(f"{self.path} is not a sitesync store (no schema_migrations)")
        applied = {row[0] for row in conn.execute("SELECT version FROM schema_migrations")}
        check_current(applied, load_migrations(_PACKAGE), self.path)

    def _migrate(self) -> None:
        conn = self._connection()
        conn.execute(
            "CREATE TABLE IF NOT EXISTS schema_migrations "
            "(version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at REAL NOT NULL)"
        )
        with self._begin_immediate():
            applied = {row[0] for row in conn.execute("SELECT version FROM schema_migrations")}
            migrations = load_migrations(_PACKAGE)
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
                    (migration.version, migration.name, self.clock()),
                )


#: An area of the SQLite store (see :mod:`sitesync.store._area`).
SqliteArea = Area[SqliteDb]


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


def run_steps(conn: sqlite3.Connection, script: Script[T]) -> T:
    """Answer each step of ``script`` on ``conn``, in the caller's transaction; its result."""
    answer: Any = None
    while True:
        try:
            step = script.send(answer)
        except StopIteration as done:
            result: T = done.value
            return result
        answer = _answer(conn, step)


def _answer(conn: sqlite3.Connection, step: Step) -> Any:
    if isinstance(step, Fetch):
        return conn.execute(Q[step.query], step.params).fetchall()
    if isinstance(step, Write):
        return conn.execute(Q[step.query], step.params).rowcount
    return True  # HoldRun: BEGIN IMMEDIATE already holds the whole file
