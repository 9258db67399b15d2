"""The PostgreSQL store's migrations: applied in one transaction under an advisory lock,
or checked for a command that only reads (which never migrates). SQL in ``upgrade.sql``,
the migrations themselves in ``migrations/``.
"""

from __future__ import annotations

import psycopg
from psycopg import sql

from sitesync.errors import MigrationError, StoreNotReady
from sitesync.store._sql import check_current, load_migrations, refuse_newer
from sitesync.store.postgres._db import PACKAGE, Conn, Q, one_line


async def apply_migrations(
    conn: Conn, schema: str | None, now: float, where: str = "PostgreSQL"
) -> list[int]:
    """Apply, in one transaction, every migration not yet recorded; the versions applied."""
    applied: list[int] = []
    async with conn.transaction():
        await conn.execute(Q["lock_migrations"])
        if schema is not None:
            await _create_schema(conn, schema)
        await conn.execute(Q["create_migrations_table"])
        rows = await (await conn.execute(Q["select_migrations"])).fetchall()
        done = {row["version"] for row in rows}
        migrations = load_migrations(PACKAGE)
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
                    f"migration {migration.version:04d}_{migration.name} failed: {one_line(exc)}"
                ) from exc
            params = {"version": migration.version, "name": migration.name, "now": now}
            await conn.execute(Q["insert_migration"], params)
            applied.append(migration.version)
    return applied


async def applied_versions(conn: Conn) -> set[int]:
    """The versions recorded in ``schema_migrations``; none when there is no such table."""
    found = await (await conn.execute(Q["migrations_table_exists"])).fetchone()
    if found is None or not found["found"]:
        return set()
    rows = await (await conn.execute(Q["select_migrations"])).fetchall()
    return {row["version"] for row in rows}


async def check_migrated(conn: Conn, schema: str | None, where: str) -> None:
    """For a command that only reads: ``StoreNotReady`` unless the schema exists with every
    migration of this sitesync (and ``SchemaTooNew`` past them); nothing is created."""
    if schema is not None:
        exists = await (await conn.execute(Q["schema_exists"], {"schema": schema})).fetchone()
        if exists is None:
            raise StoreNotReady(f"{where}: no schema {schema!r}, so no sitesync store in it")
    found = await (await conn.execute(Q["migrations_table_exists"])).fetchone()
    if found is None or not found["found"]:
        raise StoreNotReady(
            f"{where} holds no sitesync store (no schema_migrations table); a command that "
            "only reads never creates one: 'sitesync migrate' does"
        )
    rows = await (await conn.execute(Q["select_migrations"])).fetchall()
    check_current({row["version"] for row in rows}, load_migrations(PACKAGE), where)


async def _create_schema(conn: Conn, schema: str) -> None:
    # Checked first rather than CREATE SCHEMA IF NOT EXISTS: that one needs the CREATE
    # privilege on the database even when the schema is already there.
    exists = await (await conn.execute(Q["schema_exists"], {"schema": schema})).fetchone()
    if exists is None:
        await conn.execute(sql.SQL("CREATE SCHEMA {}").format(sql.Identifier(schema)))
