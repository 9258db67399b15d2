"""The shared backend: one PostgreSQL database, for workers on any number of machines.

The store is the union of its areas (runs, frontier, records, coordination, supervision,
registry), each written against one plumbing object, :class:`PostgresDb` (see
:mod:`sitesync.store.postgres._db` for the run-row lock order and the retries).
Calls that are one named query on every backend (the overview among them) are written
once for both in :mod:`sitesync.store._plain`.

Times are epoch seconds from the store's ``clock``, exactly as in the SQLite store, so both
backends build the same models and one contract suite checks both. By default that clock is
the server's (:class:`~sitesync.store.postgres.clock.ServerClock`): workers on machines whose
clocks disagree still agree on when a lease, claim or heartbeat expired.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from sitesync.store._changes import PlainChanges
from sitesync.store._faults import DEFAULT_RETRY_SECONDS
from sitesync.store._plain import PlainOverview
from sitesync.store._sitemapdates import PlainSitemapDates
from sitesync.store.postgres._db import (
    PostgresDb,
    check_schema,
    connect,
    describe,
    errors_at,
)
from sitesync.store.postgres.clock import ServerClock
from sitesync.store.postgres.coordination import PostgresCoordination
from sitesync.store.postgres.frontier import PostgresFrontier
from sitesync.store.postgres.gone import PostgresGone
from sitesync.store.postgres.records import PostgresRecords
from sitesync.store.postgres.registry import PostgresRegistry
from sitesync.store.postgres.revisits import PostgresRevisits
from sitesync.store.postgres.runs import PostgresRuns
from sitesync.store.postgres.supervision import PostgresSupervision
from sitesync.store.postgres.upgrade import applied_versions, apply_migrations, check_migrated


class PostgresStore(
    PostgresRuns,
    PostgresFrontier,
    PostgresRecords,
    PostgresRevisits,
    PostgresGone,
    PostgresCoordination,
    PostgresSupervision,
    PlainOverview[PostgresDb],
    PlainChanges[PostgresDb],
    PlainSitemapDates[PostgresDb],
    PostgresRegistry,
):
    """All store interfaces on one PostgreSQL database (or one schema of it)."""

    @classmethod
    async def open(
        cls,
        dsn: str,
        *,
        min_size: int = 1,
        max_size: int = 10,
        clock: Callable[[], float] | None = None,
        schema: str | None = None,
        retry_seconds: float = DEFAULT_RETRY_SECONDS,
        migrate: bool = True,
    ) -> PostgresStore:
        """Bring the schema up to date, then open a pool of ``min_size..max_size`` connections.

        ``schema`` (created if missing) becomes the ``search_path`` of every connection, so
        several stores can share one database without seeing each other. Opening fails at
        once when the server cannot be reached; afterwards transient faults are waited out
        for up to ``retry_seconds`` per call (see :mod:`sitesync.store._faults`).
        ``migrate=False``: create and migrate nothing (``StoreNotReady`` unless the schema is
        there and current), for the commands that only read.
        """
        check_schema(schema)
        # ``clock`` is for tests that move time by hand; otherwise the server's is used.
        server_clock = ServerClock() if clock is None else None
        clock = clock or time.time  # until the pool is open, for the migration's timestamp
        if not migrate:
            await cls.check(dsn, schema=schema)
        else:
            await cls.migrate(dsn, schema=schema, clock=clock)
        db = await PostgresDb.open(
            dsn,
            min_size=min_size,
            max_size=max_size,
            schema=schema,
            clock=server_clock or clock,
            retry_seconds=retry_seconds,
        )
        if server_clock is not None:
            await db.sync_clock()
        return cls(db)

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

    @classmethod
    async def check(cls, dsn: str, *, schema: str | None = None) -> None:
        """``StoreNotReady`` unless the store exists and is current (nothing is written)."""
        where = describe(dsn)
        check_schema(schema)
        async with await connect(dsn, where, schema) as conn, errors_at(where):
            await check_migrated(conn, schema, where)

    @classmethod
    async def applied_migrations(cls, dsn: str, *, schema: str | None = None) -> set[int]:
        """The migrations recorded in the store (none if there is none), read only."""
        where = describe(dsn)
        check_schema(schema)
        async with await connect(dsn, where, schema) as conn, errors_at(where):
            return await applied_versions(conn)

    def now(self) -> float:
        """The PostgreSQL server's time (or the clock a test gave)."""
        return self._db.clock()

    async def close(self) -> None:
        """Release the pool's connections. Idempotent."""
        await self._db.close()
