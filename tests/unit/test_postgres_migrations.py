"""PostgreSQL: applying every migration gives exactly the checked-in, readable schema.sql.

Also how opening fails: a clear StoreError naming the server, never the password.
"""

from __future__ import annotations

import asyncio
from importlib import resources
from typing import Any

import psycopg
import pytest
from psycopg import sql

from sitesync.errors import ConfigError, StoreError
from sitesync.store import open_store
from sitesync.store._sql import load_migrations
from sitesync.store.postgres.store import PostgresStore
from tests import _postgres

MIGRATIONS = load_migrations("sitesync.store.postgres")
VERSIONS = [m.version for m in MIGRATIONS]

COLUMNS = """
SELECT table_name, column_name, ordinal_position, data_type, is_nullable, column_default,
       is_identity, identity_generation
  FROM information_schema.columns
 WHERE table_schema = %(schema)s AND table_name <> 'schema_migrations'
"""
INDEXES = """
SELECT tablename, indexname, indexdef
  FROM pg_indexes
 WHERE schemaname = %(schema)s AND tablename <> 'schema_migrations'
"""
CONSTRAINTS = """
SELECT t.relname, c.conname, c.contype, pg_get_constraintdef(c.oid)
  FROM pg_constraint AS c
  JOIN pg_class AS t ON t.oid = c.conrelid
  JOIN pg_namespace AS n ON n.oid = t.relnamespace
 WHERE n.nspname = %(schema)s AND t.relname <> 'schema_migrations'
"""


def schema_of(dsn: str, schema: str) -> dict[str, set[tuple[Any, ...]]]:
    """Tables, columns, indexes and constraints, with the schema's own name taken out."""

    def strip(value: Any) -> Any:
        return value.replace(f"{schema}.", "") if isinstance(value, str) else value

    with psycopg.connect(dsn) as conn:
        return {
            name: {
                tuple(strip(v) for v in row)
                for row in conn.execute(query, {"schema": schema}).fetchall()
            }
            for name, query in (
                ("columns", COLUMNS),
                ("indexes", INDEXES),
                ("constraints", CONSTRAINTS),
            )
        }


def apply_schema_sql(dsn: str, schema: str) -> None:
    script = resources.files("sitesync.store.postgres").joinpath("schema.sql").read_text()
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute(sql.SQL("SET search_path TO {}").format(sql.Identifier(schema)))
        conn.execute(script.encode())


async def test_migrations_produce_schema_sql(postgres_dsn: str) -> None:
    with _postgres.schema(postgres_dsn) as migrated, _postgres.schema(postgres_dsn) as reference:
        assert await PostgresStore.migrate(postgres_dsn, schema=migrated) == VERSIONS
        apply_schema_sql(postgres_dsn, reference)
        got, want = schema_of(postgres_dsn, migrated), schema_of(postgres_dsn, reference)
        assert {row[0] for row in want["columns"]} >= {"runs", "tasks"}
        assert len(want["indexes"]) >= 5  # primary keys, dedup key, partial indexes
        assert got == want


async def test_processes_starting_at_once_apply_each_migration_once(postgres_dsn: str) -> None:
    name = f"{_postgres.create_schema(postgres_dsn)}_new"  # a schema that does not exist yet
    try:
        results = await asyncio.gather(
            *(PostgresStore.migrate(postgres_dsn, schema=name) for _ in range(4))
        )
        assert sorted(results) == [[], [], [], VERSIONS]
        assert await PostgresStore.migrate(postgres_dsn, schema=name) == []
        with psycopg.connect(postgres_dsn) as conn:
            query = sql.SQL("SELECT version, name FROM {}.schema_migrations").format(
                sql.Identifier(name)
            )
            assert conn.execute(query).fetchall() == [(m.version, m.name) for m in MIGRATIONS]
    finally:
        _postgres.drop_schema(postgres_dsn, name)


async def test_a_store_opens_on_a_migrated_schema(postgres_dsn: str, postgres_schema: str) -> None:
    for _ in range(2):
        store = await PostgresStore.open(postgres_dsn, schema=postgres_schema)
        assert await store.list_runs() == []
        await store.close()
        await store.close()  # idempotent
    with pytest.raises(StoreError, match="closed"):
        await store.list_runs()


async def test_an_unreachable_server_is_a_store_error_without_the_password() -> None:
    dsn = "postgresql://alice:s3cret@127.0.0.1:1/catalogue"
    for opening in (PostgresStore.open, open_store):
        with pytest.raises(StoreError) as caught:
            await opening(dsn)
        message = str(caught.value)
        assert message.startswith("cannot connect to PostgreSQL at 127.0.0.1:1/catalogue: ")
        assert "s3cret" not in message


async def test_a_malformed_url_is_a_config_error_without_the_password() -> None:
    with pytest.raises(ConfigError) as caught:
        await open_store("postgresql://alice:s3cret@[::1/catalogue")
    assert "s3cret" not in str(caught.value)


async def test_a_schema_name_is_quoted_never_spliced(postgres_dsn: str) -> None:
    name = 'odd"; DROP TABLE x; --'
    try:
        store = await PostgresStore.open(postgres_dsn, schema=name)
        assert await store.list_runs() == []
        await store.close()
    finally:
        _postgres.drop_schema(postgres_dsn, name)
    with pytest.raises(ConfigError, match="schema"):
        await PostgresStore.open(postgres_dsn, schema="x" * 64)
