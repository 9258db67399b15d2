"""Store backends behind the interfaces of :mod:`sitesync.store.base`."""

from __future__ import annotations

from collections.abc import Callable

from sitesync.config import setting_default
from sitesync.errors import ConfigError
from sitesync.store._faults import DEFAULT_RETRY_SECONDS
from sitesync.store.base import FrontierStore, RunStore, Store

_POSTGRES_SCHEMES = ("postgresql://", "postgres://")


async def open_store(
    db: str,
    *,
    retry_seconds: float = DEFAULT_RETRY_SECONDS,
    sqlite_busy_timeout: float = setting_default("sqlite_busy_timeout"),
    clock: Callable[[], float] | None = None,
) -> Store:
    """Open the store named by ``db``.

    A SQLite file path (``sqlite:///path`` also accepted) is the default; a
    ``postgresql://`` or ``postgres://`` URL opens the PostgreSQL backend. Opening fails at
    once on an unreachable server; later calls wait out transient faults for up to
    ``retry_seconds`` before raising ``StoreUnavailable``. ``clock`` (epoch seconds) replaces
    the store's own, for tests and tools that must write as of another time.
    """
    # Each backend is imported only when used, for start-up time, not to dodge a cycle: a
    # SQLite user never loads the PostgreSQL driver and its pool.
    if db.startswith(_POSTGRES_SCHEMES):
        from sitesync.store.postgres.store import PostgresStore

        return await PostgresStore.open(db, retry_seconds=retry_seconds, clock=clock)
    from sitesync.store.sqlite.store import SqliteStore

    path = db.removeprefix("sqlite:///") if db.startswith("sqlite:///") else db
    if not path:
        raise ConfigError("db: empty database path")
    timing = {"clock": clock} if clock is not None else {}
    return await SqliteStore.open(
        path, retry_seconds=retry_seconds, busy_timeout=sqlite_busy_timeout, **timing
    )


__all__ = ["FrontierStore", "RunStore", "Store", "open_store"]
