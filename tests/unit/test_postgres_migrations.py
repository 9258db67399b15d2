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
from psycopg.types.json import Jsonb

from sitesync.errors import ConfigError, StoreError
from sitesync.models import NewTask, RunConfig, RunCounters
from sitesync.store import open_store
from sitesync.store._sql import load_migrations
from sitesync.store.postgres import budget
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
        conn.execute(_postgres.search_path(schema))
        conn.execute(script.encode())


async def test_migrations_produce_schema_sql(postgres_dsn: str) -> None:
    with _postgres.schema(postgres_dsn) as migrated, _postgres.schema(postgres_dsn) as reference:
        assert await PostgresStore.migrate(postgres_dsn, schema=migrated) == VERSIONS
        apply_schema_sql(postgres_dsn, reference)
        got, want = schema_of(postgres_dsn, migrated), schema_of(postgres_dsn, reference)
        assert {row[0] for row in want["columns"]} >= {"runs", "tasks"}
        assert len(want["indexes"]) >= 5  # primary keys, dedup key, partial indexes
        assert got == want


def _apply_up_to(conn: psycopg.Connection[Any], before: int) -> None:
    conn.execute(
        "CREATE TABLE schema_migrations (version integer PRIMARY KEY, name text "
        "NOT NULL, applied_at double precision NOT NULL)"
    )
    for migration in (m for m in MIGRATIONS if m.version < before):
        conn.execute(migration.sql.encode())
        conn.execute(
            "INSERT INTO schema_migrations VALUES (%s, %s, 0)", (migration.version, migration.name)
        )


OLD_RUN = """
INSERT INTO runs (status, config, created_at, tasks_total, pending, assigned, completed, failed,
                  pages_fetched, bytes_fetched, retries, seeded_at)
VALUES ('running', %(config)s, 1, 4, 2, 1, 1, 0, 3, 3000, 2, 1)
RETURNING id
"""
OLD_TASK = """
INSERT INTO tasks (run_id, url, host, state, depth, discovered_at, updated_at)
VALUES (%(run_id)s, %(url)s, %(host)s, %(state)s, 0, 1, 1)
"""


async def test_upgrading_to_host_counters_keeps_every_counter_of_a_run(postgres_dsn: str) -> None:
    """0010 moves the run row's counters into per-host rows: recounted from the tasks, and
    what only the run row knew (pages, bytes, retries) kept whole."""
    tasks = [("a.test", "pending"), ("a.test", "assigned"), ("b.test", "pending"),
             ("b.test", "completed")]  # fmt: skip
    with _postgres.schema(postgres_dsn) as name:
        with psycopg.connect(postgres_dsn, autocommit=True) as conn:
            conn.execute(_postgres.search_path(name))
            _apply_up_to(conn, 10)
            config = Jsonb(RunConfig(seeds=("http://a.test/",)).to_json())
            row = conn.execute(OLD_RUN, {"config": config}).fetchone()
            assert row is not None
            for n, (host, state) in enumerate(tasks):
                url = f"http://{host}/{n}"
                conn.execute(OLD_TASK, {"run_id": row[0], "url": url, "host": host, "state": state})
        assert await PostgresStore.migrate(postgres_dsn, schema=name) == VERSIONS[9:]
        store = await PostgresStore.open(postgres_dsn, schema=name)
        try:
            run = await store.get_run(row[0])
            hosts = await store.claim_hosts(row[0], worker_id="w", claim_seconds=30, worker_ttl=30)
        finally:
            await store.close()
    assert run.counters == RunCounters(
        tasks_total=4, pending=2, assigned=1, completed=1, failed=0,
        pages_fetched=3, bytes_fetched=3000, retries=2,
    )  # fmt: skip
    assert sorted(c.host for c in hosts.claims) == ["a.test", "b.test"]


async def test_upgrading_gives_a_capped_run_the_budget_its_cap_leaves(postgres_dsn: str) -> None:
    """0012 holds what a run with max_pages may still admit in budget slots: its cap less
    the tasks it holds, spread evenly; an uncapped run gets none, and a run already past
    its cap gets nothing to admit."""
    new_run = "INSERT INTO runs (status, config, created_at) VALUES ('running', %s, 1) RETURNING id"
    counts = (
        "INSERT INTO run_host_counts (run_id, host, tasks_total, pending, updated_at) "
        "VALUES (%s, %s, %s, %s, 1)"
    )
    with _postgres.schema(postgres_dsn) as name:
        with psycopg.connect(postgres_dsn, autocommit=True) as conn:
            conn.execute(_postgres.search_path(name))
            _apply_up_to(conn, 12)
            ids = []
            for cap, held in ((50, (9, 4)), (None, (3, 0)), (5, (6, 1))):
                config = Jsonb(RunConfig(seeds=("http://a.test/",), max_pages=cap).to_json())
                row = conn.execute(new_run, (config,)).fetchone()
                assert row is not None
                ids.append(row[0])
                for host, total in zip(("a.test", "b.test"), held, strict=True):
                    conn.execute(counts, (row[0], host, total, total))
        assert await PostgresStore.migrate(postgres_dsn, schema=name) == VERSIONS[11:]
        with psycopg.connect(postgres_dsn, autocommit=True) as conn:
            conn.execute(_postgres.search_path(name))
            slots = conn.execute(
                "SELECT run_id, slot, remaining FROM run_admission_budget ORDER BY run_id, slot"
            ).fetchall()
        store = await PostgresStore.open(postgres_dsn, schema=name)
        try:
            new = [NewTask(url=f"http://c.test/{n}", host="c.test", depth=1) for n in range(60)]
            admitted = [await store.add_tasks(run_id, new) for run_id in ids]
        finally:
            await store.close()
    capped, _, over = ids
    # 50 - 13 = 37 over 16 slots: the first five hold 3, the others 2.
    assert [(s, r) for run, s, r in slots if run == capped] == [
        (slot, 3 if slot < 5 else 2) for slot in range(16)
    ]
    assert [r for run, _, r in slots if run == over] == [0] * 16
    assert {run for run, _, _ in slots} == {capped, over}
    assert admitted == [37, 60, 0]


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


@pytest.mark.parametrize("cap", [0, 1, 15, 16, 37, 10_000, 1_000_003])
def test_a_capped_runs_budget_is_spread_evenly_and_whole(cap: int) -> None:
    shares = budget.split(cap)
    assert len(shares) == budget.SLOTS and sum(shares) == cap
    assert max(shares) - min(shares) <= 1 and shares == sorted(shares, reverse=True)
