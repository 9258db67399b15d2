"""The PostgreSQL store's plumbing: its pool, transactions, queries and errors (its
migrations: ``upgrade.py``).

Every write is one transaction. Task transitions move the run's counters in per-host rows
(``run_host_counts``, folded on read by ``run_view``), never in the run's own row, so the
writers of one run do not queue on one row: a host is claimed by one worker at a time.
Only decisions about the run as a whole (its status and config, its claims, the flush of
its per-host page counts) lock the run's row (:func:`hold_run`); admissions (a capped run's
within slots of its budget), acquire, reports, renewals and releases never do. Within a transaction
task rows are locked before host rows, and host rows in host order. A serialization
failure or a deadlock (an operator's ad-hoc SQL, or the rare crossing of a dead host's
ending with an acquire) retries the transaction.

The areas of the store write each call once, as an async function of the connection handed
to :meth:`PostgresDb.transaction`, with its SQL found by name in :data:`Q`. Migrations need
only one plain connection (``PostgresStore.migrate``, ``sitesync db upgrade``), and every
driver exception crosses into sitesync through :func:`errors_at` and nowhere else.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import os
import random
import secrets
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from typing import Any, TypeAlias, TypeVar

import psycopg
from psycopg import AsyncConnection, errors, sql
from psycopg.conninfo import conninfo_to_dict
from psycopg.rows import DictRow, dict_row
from psycopg.types.json import Jsonb
from psycopg_pool import AsyncConnectionPool, PoolClosed, PoolTimeout

from sitesync.errors import ConfigError, RunNotFound, StoreError
from sitesync.models import Run
from sitesync.store._area import Area
from sitesync.store._faults import DEFAULT_RETRY_SECONDS, FaultBudget
from sitesync.store._sql import load_namespace
from sitesync.store._steps import Fetch, Script, Step, Write
from sitesync.store.postgres._rows import DECODE, run_from_row
from sitesync.store.postgres.clock import ServerClock

Conn: TypeAlias = AsyncConnection[DictRow]
T = TypeVar("T")

#: The backend's package: its queries and its migrations (``upgrade.py``) are read from it.
PACKAGE = "sitesync.store.postgres"
#: Every named query of the backend (``*.sql`` beside this module), loaded once.
Q = load_namespace(PACKAGE)
_MAX_IDENTIFIER = 63  # PostgreSQL silently truncates longer names: two schemas could collide


# Lock waits end in these only when something outside this store takes locks in another
# order; the whole transaction is safe to replay (it re-reads everything it decides on).
_RETRYABLE = (errors.SerializationFailure, errors.DeadlockDetected)
_ATTEMPTS = 4


class PostgresDb:
    """A pool of connections to one database (or one schema of it)."""

    def __init__(
        self,
        pool: AsyncConnectionPool[Conn],
        *,
        where: str,
        clock: Callable[[], float] = time.time,
        retry_seconds: float = DEFAULT_RETRY_SECONDS,
    ) -> None:
        self.where = where
        self.clock = clock
        self.decode = DECODE
        self._pool = pool
        self._closed = False
        self._faults = FaultBudget(where, is_transient, seconds=retry_seconds)

    @classmethod
    async def open(
        cls, dsn: str, *, min_size: int, max_size: int, schema: str | None, **options: Any
    ) -> PostgresDb:
        """A pool of ``min_size..max_size`` connections, open; ``options`` as for ``__init__``.

        ``schema`` becomes the ``search_path`` of every connection.
        """
        where = describe(dsn)
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
        return cls(pool, where=where, **options)

    async def sync_clock(self) -> None:
        """Take a sample of the server's time now (see :class:`ServerClock`)."""
        if isinstance(self.clock, ServerClock):
            async with errors_at(self.where), self._pool.connection() as conn:
                await self.clock.sync(conn)

    async def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        await self._pool.close()

    async def transaction(self, work: Callable[[Conn], Awaitable[T]]) -> T:
        """``work(conn)`` in one transaction; replayed whole after a lost connection (within
        the fault budget) or a serialization failure."""
        self._check_open()
        async with errors_at(self.where):
            return await self._faults.run(functools.partial(self._attempt, work))

    async def run(self, make: Callable[[], Script[T]], *, reads_only: bool = False) -> T:
        """The script ``make()`` returns (:mod:`sitesync.store._steps`) in one transaction,
        reads too (``reads_only``): their statements then see one snapshot."""
        del reads_only
        return await self.transaction(lambda conn: run_steps(conn, make()))

    def text_list(self, values: Sequence[str]) -> list[str]:
        """A list, sent as a ``text[]`` (``%(name)b::text[]`` in the queries)."""
        return list(values)

    def json(self, value: Any) -> Jsonb | None:
        """A value for a ``jsonb`` column (None: NULL)."""
        return None if value is None else Jsonb(value)

    async def rows(self, query: str, params: Mapping[str, Any] | None = None) -> list[DictRow]:
        """The rows of one read query, outside a transaction; retried like a transaction."""
        self._check_open()

        async def attempt() -> list[DictRow]:
            async with self._pool.connection() as conn:
                return await (await conn.execute(Q[query], params or {})).fetchall()

        async with errors_at(self.where):
            return await self._faults.run(attempt)

    async def execute(
        self, query: str, params: Mapping[str, Any], *, run_id: int | None = None
    ) -> int:
        """One write query in its own transaction, with ``now``; how many rows it changed.
        With ``run_id``, the run's row is locked first (one decision of the run at a time)."""

        async def work(conn: Conn) -> int:
            if run_id is not None:
                await hold_run(conn, run_id)
            return (await conn.execute(Q[query], {**params, "now": self.clock()})).rowcount

        return await self.transaction(work)

    async def _attempt(self, work: Callable[[Conn], Awaitable[T]]) -> T:
        for attempt in range(1, _ATTEMPTS + 1):
            try:
                async with self._pool.connection() as conn:
                    if isinstance(self.clock, ServerClock) and self.clock.due:
                        await self.clock.sync(conn)  # before the transaction reads "now"
                    async with conn.transaction():
                        return await work(conn)
            except _RETRYABLE:
                if attempt == _ATTEMPTS:
                    raise
                await asyncio.sleep(random.uniform(0.005, 0.02) * attempt)
        raise AssertionError("unreachable: the last attempt returns or raises")

    def _check_open(self) -> None:
        if self._closed:
            raise StoreError(f"store {self.where} is closed")


#: An area of the PostgreSQL store (see :mod:`sitesync.store._area`).
PostgresArea = Area[PostgresDb]


async def one(conn: Conn, query: str, params: Mapping[str, Any]) -> DictRow | None:
    """The first row of a query in the caller's transaction."""
    return await (await conn.execute(Q[query], params)).fetchone()


async def every(conn: Conn, query: str, params: Mapping[str, Any]) -> list[DictRow]:
    """Every row of a query in the caller's transaction."""
    return await (await conn.execute(Q[query], params)).fetchall()


async def run_steps(conn: Conn, script: Script[T]) -> T:
    """Answer each step of ``script`` on ``conn``, in the caller's transaction; its result."""
    answer: Any = None
    while True:
        try:
            step = script.send(answer)
        except StopIteration as done:
            result: T = done.value
            return result
        answer = await _answer(conn, step)


async def _answer(conn: Conn, step: Step) -> Any:
    if isinstance(step, Fetch):
        return await every(conn, step.query, step.params)
    if isinstance(step, Write):
        return (await conn.execute(Q[step.query], step.params)).rowcount
    return await hold_run(conn, step.run_id)


async def hold_run(conn: Conn, run_id: int) -> bool:
    """Lock the run's row for the caller's transaction; whether there is one."""
    return await one(conn, "lock_run", {"run_id": run_id}) is not None


async def lock_run(conn: Conn, run_id: int) -> Run | None:
    """:func:`hold_run`, then the run as it is now (its counters summed); None if none."""
    return await read_run(conn, run_id) if await hold_run(conn, run_id) else None


async def read_run(conn: Conn, run_id: int) -> Run | None:
    """The run with its counters as committed now (and as changed by the caller's
    transaction), without locking it."""
    row = await one(conn, "select_run", {"run_id": run_id})
    return None if row is None else run_from_row(row)


async def require_run(conn: Conn, run_id: int) -> Run:
    """:func:`lock_run`, raising ``RunNotFound`` for an unknown run."""
    run = await lock_run(conn, run_id)
    if run is None:
        raise RunNotFound(f"no run with id {run_id}")
    return run


def new_create_token() -> str:
    """A name for the run one ``create_run`` or ``start_scan`` call makes: its transaction,
    replayed after a lost acknowledgement, finds that run instead of making a second."""
    return secrets.token_hex(16)


def describe(dsn: str) -> str:
    """``host:port/dbname`` of a connection string, for messages: never the password."""
    try:
        params = conninfo_to_dict(dsn)
    except psycopg.Error as exc:
        # The driver's message may quote the string, password included: leave it to __cause__.
        raise ConfigError("db: not a valid PostgreSQL URL or connection string") from exc
    host = params.get("host") or os.environ.get("PGHOST") or "localhost"
    port = params.get("port") or os.environ.get("PGPORT") or "5432"
    dbname = params.get("dbname") or os.environ.get("PGDATABASE") or "(default database)"
    return f"{host}:{port}/{dbname}"


def check_schema(schema: str | None) -> None:
    if schema is not None and not 0 < len(schema.encode()) <= _MAX_IDENTIFIER:
        raise ConfigError(f"schema: must be 1 to {_MAX_IDENTIFIER} bytes long, got {schema!r}")


@contextlib.asynccontextmanager
async def errors_at(where: str, *, connecting: bool = False) -> AsyncIterator[None]:
    """Translate driver and pool errors into ``StoreError`` (the cause stays in ``__cause__``)."""
    try:
        yield
    except PoolClosed as exc:
        raise StoreError(f"store {where} is closed") from exc
    except PoolTimeout as exc:
        if connecting:
            raise StoreError(f"cannot connect to PostgreSQL at {where}: {one_line(exc)}") from exc
        raise StoreError(
            f"no connection to PostgreSQL at {where} became free in time "
            f"(pool exhausted or server unreachable): {one_line(exc)}"
        ) from exc
    except psycopg.Error as exc:
        raise StoreError(f"PostgreSQL error at {where}: {one_line(exc)}") from exc


def is_transient(exc: BaseException) -> bool:
    """A fault that waiting may cure: the connection was lost or refused, the server is
    shutting down or restarting (failover), no connection could be had in time, or the
    server rolled the transaction back to break a deadlock or a serialization conflict."""
    if isinstance(exc, PoolTimeout):
        return True
    if isinstance(exc, psycopg.OperationalError):
        # No SQLSTATE: the client lost the connection. 08: connection exception;
        # 57: operator intervention (admin shutdown, crash shutdown, cannot connect now);
        # 53: insufficient resources (too many connections); 40: transaction rollback
        # (deadlock detected, serialization failure), where the whole transaction was
        # undone and running it again is what the server asks for. The store's writers
        # are built not to deadlock; this keeps one that slips through a retry, not a
        # crashed worker.
        state = exc.sqlstate
        return state is None or state[:2] in ("08", "57", "53", "40")
    return False


def application_name(dsn: str) -> dict[str, Any]:
    """``application_name=sitesync-<pid>`` unless the DSN names one: an operator (or a test)
    finds a process's connections in ``pg_stat_activity`` by it."""
    with contextlib.suppress(psycopg.Error):
        if "application_name" in conninfo_to_dict(dsn):
            return {}
    return {"application_name": f"sitesync-{os.getpid()}"}


async def connect(dsn: str, where: str, schema: str | None) -> Conn:
    """One autocommit connection, its ``search_path`` set to ``schema`` when given."""
    try:
        conn = await AsyncConnection.connect(
            dsn, autocommit=True, row_factory=dict_row, **application_name(dsn)
        )
    except psycopg.Error as exc:
        raise StoreError(f"cannot connect to PostgreSQL at {where}: {one_line(exc)}") from exc
    if schema is not None:
        try:
            async with errors_at(where):
                await use_schema(conn, schema=schema)
        except BaseException:
            await conn.close()
            raise
    return conn


async def use_schema(conn: Conn, *, schema: str) -> None:
    """Point the connection at ``schema``; every query then finds the store's tables there."""
    # The one statement built in Python: SET takes no bind parameters, so the name is
    # quoted as an identifier instead (it cannot smuggle SQL whatever it contains).
    await conn.execute(sql.SQL("SET search_path TO {}").format(sql.Identifier(schema)))


def one_line(exc: BaseException) -> str:
    """libpq messages span lines (hints, per-host attempts); messages here are one line."""
    return " ".join(str(exc).split()) or type(exc).__name__
