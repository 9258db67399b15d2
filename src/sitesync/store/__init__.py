"""Store backends behind the interfaces of :mod:`sitesync.store.base`."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import TYPE_CHECKING

from sitesync.config import setting_default
from sitesync.errors import ConfigError
from sitesync.store._faults import DEFAULT_RETRY_SECONDS
from sitesync.store._sql import load_migrations, refuse_newer
from sitesync.store.base import FrontierStore, RunStore, Store

if TYPE_CHECKING:
    from sitesync.store.postgres.store import PostgresStore
    from sitesync.store.sqlite.store import SqliteStore

_POSTGRES_SCHEMES = ("postgresql://", "postgres://")
_KEY_VALUE = re.compile(r"\s*[a-z_]+\s*=")


async def open_store(
    db: str,
    *,
    retry_seconds: float = DEFAULT_RETRY_SECONDS,
    sqlite_busy_timeout: float = setting_default("sqlite_busy_timeout"),
    clock: Callable[[], float] | None = None,
    migrate: bool = True,
) -> Store:
    """Open the store named by ``db``.

    A SQLite file path (``sqlite:///path`` also accepted) is the default; a
    ``postgresql://`` or ``postgres://`` URL opens the PostgreSQL backend. Opening fails at
    once on an unreachable server; later calls wait out transient faults for up to
    ``retry_seconds`` before raising ``StoreUnavailable``. ``clock`` (epoch seconds) replaces
    the store's own, for tests and tools that must write as of another time.

    By default a store is created if missing and migrated to the current schema, as the
    commands that crawl or manage need. ``migrate=False`` is for the commands that only
    read (and the dashboard): the store must exist and be current (``StoreNotReady``
    otherwise); nothing is created or migrated.
    """
    if is_postgres(db):
        return await _postgres_store().open(
            db, retry_seconds=retry_seconds, clock=clock, migrate=migrate
        )
    timing = {"clock": clock} if clock is not None else {}
    return await _sqlite_store().open(
        _sqlite_path(db),
        retry_seconds=retry_seconds,
        busy_timeout=sqlite_busy_timeout,
        migrate=migrate,
        **timing,
    )


# Each backend is imported only when used, for start-up time, not to dodge a cycle: a
# SQLite user never loads the PostgreSQL driver and its pool.


def _postgres_store() -> type[PostgresStore]:
    from sitesync.store.postgres.store import PostgresStore

    return PostgresStore


def _sqlite_store() -> type[SqliteStore]:
    from sitesync.store.sqlite.store import SqliteStore

    return SqliteStore


def is_postgres(db: str) -> bool:
    """Whether ``db`` names a PostgreSQL store: a ``postgresql://`` URL, or a libpq
    key/value connection string (``host=h dbname=d``) that libpq accepts. Anything else is
    a SQLite path: a key/value string is never taken for a file name, which would put its
    password in the name of a file."""
    if db.startswith(_POSTGRES_SCHEMES):
        return True
    if not _KEY_VALUE.match(db):
        return False
    from psycopg import Error
    from psycopg.conninfo import conninfo_to_dict

    try:
        return bool(conninfo_to_dict(db))
    except Error:
        return False


def _sqlite_path(db: str) -> str:
    path = db.removeprefix("sqlite:///") if db.startswith("sqlite:///") else db
    if not path:
        raise ConfigError("db: empty database path")
    return path


__all__ = ["FrontierStore", "RunStore", "Store", "open_store"]


def schema_versions() -> dict[str, int]:
    """The store schema versions this sitesync speaks, per backend (their newest
    migrations: the two backends number their histories apart)."""
    return {
        "SQLite": load_migrations("sitesync.store.sqlite")[-1].version,
        "PostgreSQL": load_migrations("sitesync.store.postgres")[-1].version,
    }


async def pending_migrations(db: str) -> list[str]:
    """The migrations ``sitesync migrate`` would apply to ``db`` (``NNNN_name``), found
    without writing anything (a store that does not exist yet would get them all)."""
    if is_postgres(db):
        applied = await _postgres_store().applied_migrations(db)
        known = load_migrations("sitesync.store.postgres")
    else:
        applied = _sqlite_store().applied_migrations(_sqlite_path(db))
        known = load_migrations("sitesync.store.sqlite")
    refuse_newer(applied, known, db)
    return [f"{m.version:04d}_{m.name}" for m in known if m.version not in applied]
