"""Store backends behind the interfaces of :mod:`sitesync.store.base`."""

from __future__ import annotations

from sitesync.errors import ConfigError
from sitesync.store.base import FrontierStore, RunStore, Store

_POSTGRES_SCHEMES = ("postgresql://", "postgres://")


async def open_store(db: str) -> Store:
    """Open the store named by ``db``.

    A SQLite file path (``sqlite:///path`` also accepted) is the default; a
    ``postgresql://`` or ``postgres://`` URL opens the PostgreSQL backend.
    """
    # Each backend is imported only when used: a SQLite user never loads the PostgreSQL driver.
    if db.startswith(_POSTGRES_SCHEMES):
        from sitesync.store.postgres.store import PostgresStore

        return await PostgresStore.open(db)
    from sitesync.store.sqlite.store import SqliteStore

    path = db.removeprefix("sqlite:///") if db.startswith("sqlite:///") else db
    if not path:
        raise ConfigError("db: empty database path")
    return await SqliteStore.open(path)


__all__ = ["FrontierStore", "RunStore", "Store", "open_store"]
