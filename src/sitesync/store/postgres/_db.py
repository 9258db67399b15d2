"""Connections, error translation and migrations for the PostgreSQL store.

Kept apart from ``store.py`` so that ``PostgresStore.migrate`` (and ``sitesync db upgrade``)
need only one plain connection, and so that every driver exception crosses into sitesync
through :func:`errors_at` and nowhere else.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import AsyncIterator
from typing import Any, TypeAlias

import psycopg
from psycopg import AsyncConnection, sql
from psycopg.conninfo import conninfo_to_dict
from psycopg.rows import DictRow, dict_row
from psycopg_pool import PoolClosed, PoolTimeout

from sitesync.errors import ConfigError, MigrationError, StoreError
from sitesync.store._sql import load_migrations, load_queries, refuse_newer

Conn: TypeAlias = AsyncConnection[DictRow]

_PACKAGE = "sitesync.store.postgres"
_Q = load_queries(_PACKAGE)
_MAX_IDENTIFIER = 63  # PostgreSQL silently truncates longer names: two schemas could collide


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
            raise StoreError(f"cannot connect to PostgreSQL at {where}: {_line(exc)}") from exc
        raise StoreError(
            f"no connection to PostgreSQL at {where} became free in time "
            f"(pool exhausted or server unreachable): {_line(exc)}"
        ) from exc
    except psycopg.Error as exc:
        raise StoreError(f"PostgreSQL error at {where}: {_line(exc)}") from exc


def is_transient(exc: BaseException) -> bool:
    """A fault that waiting may cure: the connection was lost or refused, the server is
    shutting down or restarting (failover), or no connection could be had in time."""
    if isinstance(exc, PoolTimeout):
        return True
    if isinstance(exc, psycopg.OperationalError):
        # No SQLSTATE: the client lost the connection. 08: connection exception;
        # 57: operator intervention (admin shutdown, crash shutdown, cannot connect now);
        # 53: insufficient resources (too many connections).
        state = exc.sqlstate
        return state is None or state[:2] in ("08", "57", "53")
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
        raise StoreError(f"cannot connect to PostgreSQL at {where}: {_line(exc)}") from exc
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


async def apply_migrations(
    conn: Conn, schema: str | None, now: float, where: str = "PostgreSQL"
) -> list[int]:
    """Apply, in one transaction, every migration not yet recorded; the versions applied."""
    applied: list[int] = []
    async with conn.transaction():
        await conn.execute(_Q["lock_migrations"])
        if schema is not None:
            await _create_schema(conn, schema)
        await conn.execute(_Q["create_migrations_table"])
        rows = await (await conn.execute(_Q["select_migrations"])).fetchall()
        done = {row["version"] for row in rows}
        migrations = load_migrations(_PACKAGE)
        refuse_newer(done, migrations, where)
        for migration in migrations:
            if migration.version in done:
                continue
            try:
                # A file shipped in the package, never user input (see _sql.load_queries);
                # bytes are how a query that is not a literal passes the driver's typing.
                # Without parameters psycopg sends it as one simple query: many statements.
                await conn.execute(migration.sql.encode())
            except psycopg.Error as exc:
                raise MigrationError(
                    f"migration {migration.version:04d}_{migration.name} failed: {_line(exc)}"
                ) from exc
            params = {"version": migration.version, "name": migration.name, "now": now}
            await conn.execute(_Q["insert_migration"], params)
            applied.append(migration.version)
    return applied


async def _create_schema(conn: Conn, schema: str) -> None:
    # Checked first rather than CREATE SCHEMA IF NOT EXISTS: that one needs the CREATE
    # privilege on the database even when the schema is already there.
    exists = await (await conn.execute(_Q["schema_exists"], {"schema": schema})).fetchone()
    if exists is None:
        await conn.execute(sql.SQL("CREATE SCHEMA {}").format(sql.Identifier(schema)))


def _line(exc: BaseException) -> str:
    """libpq messages span lines (hints, per-host attempts); messages here are one line."""
    return " ".join(str(exc).split()) or type(exc).__name__
