"""Store backends behind the interfaces of :mod:`sitesync.store.base`."""

from __future__ import annotations

from sitesync.errors import ConfigError
from sitesync.store.base import FrontierStore, RunStore, Store


async def open_store(db: str) -> Store:
    """Open the store named by ``db``: a SQLite file path (``sqlite:///path`` also accepted)."""
    from sitesync.store.sqlite.store import SqliteStore

    if db.startswith(("postgresql://", "postgres://")):
        raise ConfigError("db: the PostgreSQL backend is not available in this version")
    path = db.removeprefix("sqlite:///") if db.startswith("sqlite:///") else db
    if not path:
        raise ConfigError("db: empty database path")
    return await SqliteStore.open(path)


__all__ = ["FrontierStore", "RunStore", "Store", "open_store"]
