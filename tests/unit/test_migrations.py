"""Applying every migration gives exactly the checked-in, readable schema.sql."""

from __future__ import annotations

import asyncio
import sqlite3
from importlib import resources
from pathlib import Path

from sitesync.models import NewTask, OutcomeCount, RunConfig, RunStatus, TaskReport
from sitesync.store.sqlite.store import SqliteStore


def schema_of(conn: sqlite3.Connection) -> dict[str, object]:
    """Tables with their columns, and indexes with their SQL: structure, not formatting.

    (ALTER TABLE rewrites a table's stored CREATE text, so that text cannot be compared.)
    """
    schema: dict[str, object] = {}
    objects = conn.execute(
        "SELECT type, name, sql FROM sqlite_master "
        "WHERE name NOT LIKE 'sqlite_%' AND name != 'schema_migrations'"
    ).fetchall()
    for kind, name, sql in objects:
        if kind == "table":
            columns = conn.execute(f"PRAGMA table_info({name})").fetchall()
            schema[name] = sorted(tuple(c[1:]) for c in columns)
        else:
            schema[name] = " ".join((sql or "").split())
    return schema


def test_migrations_produce_schema_sql(tmp_path: Path) -> None:
    db = tmp_path / "migrated.db"

    async def open_and_close() -> None:
        await (await SqliteStore.open(db)).close()

    asyncio.run(open_and_close())
    migrated = sqlite3.connect(db)
    reference = sqlite3.connect(":memory:")
    script = resources.files("sitesync.store.sqlite").joinpath("schema.sql").read_text()
    reference.executescript(script)
    assert schema_of(migrated) == schema_of(reference)
    versions = [row[0] for row in migrated.execute("SELECT version FROM schema_migrations")]
    assert versions == list(range(1, len(versions) + 1)) and len(versions) >= 2


def test_opening_twice_applies_nothing_again(tmp_path: Path) -> None:
    db = tmp_path / "twice.db"

    async def open_twice() -> None:
        for _ in range(2):
            await (await SqliteStore.open(db)).close()

    asyncio.run(open_twice())
    conn = sqlite3.connect(db)
    count = conn.execute("SELECT COUNT(*) FROM schema_migrations").fetchone()[0]
    assert count == conn.execute("SELECT MAX(version) FROM schema_migrations").fetchone()[0]


def undo_run_settings(conn: sqlite3.Connection) -> None:
    """Back to before 0014 (a run's settings)."""
    conn.execute("DROP TABLE run_setting_changes")
    for table, column in (("runs", "settings"), ("runs", "settings_version"),
                          ("schedules", "settings")):  # fmt: skip
        conn.execute(f"ALTER TABLE {table} DROP COLUMN {column}")


def test_upgrading_to_host_counts_fills_them_from_the_tasks(tmp_path: Path) -> None:
    """0010's backfill: a store whose tasks predate run_host_counts claims the hosts that
    have pending work, and only those."""
    db = tmp_path / "old.db"
    tasks = [NewTask(url=f"http://{h}/{n}", host=h, depth=0) for n, h in enumerate("abc")]

    async def crawl_a_little() -> None:
        store = await SqliteStore.open(db)
        run = await store.create_run(RunConfig(seeds=("http://a/",)))
        await store.transition_run(run.id, RunStatus.RUNNING)
        await store.add_tasks(run.id, tasks)
        [lease] = await store.acquire(run.id, worker_id="w", limit=1, lease_seconds=30)
        assert lease.host == "a"
        await store.close()

    async def claim() -> list[str]:
        store = await SqliteStore.open(db)
        grant = await store.claim_hosts(1, worker_id="w2", claim_seconds=30, worker_ttl=30)
        await store.close()
        return sorted(c.host for c in grant.claims)

    asyncio.run(crawl_a_little())
    conn = sqlite3.connect(db)
    with conn:  # back to before 0010 (0011 drops one of its triggers), the tasks kept
        for trigger in ("tasks_count_state", "tasks_count_delete"):
            conn.execute(f"DROP TRIGGER {trigger}")
        conn.execute("DROP INDEX tasks_put_off")  # 0012's
        conn.execute("DROP TABLE run_outcomes")  # 0013's
        conn.execute("DROP TABLE last_fetches")  # 0015's
        conn.execute("ALTER TABLE domains DROP COLUMN request_profile")  # 0016's
        conn.execute("DROP INDEX record_versions_gone")  # 0017's
        conn.execute("DROP TABLE sitemap_dates")  # 0018's
        undo_run_settings(conn)  # 0014's
        conn.execute("DROP TABLE run_host_counts")
        conn.execute("DELETE FROM schema_migrations WHERE version >= 10")
    conn.close()
    assert asyncio.run(claim()) == ["b", "c"]  # a's only task is leased: no pending work


def test_upgrading_to_outcome_counts_fills_them_from_the_counted_tasks(tmp_path: Path) -> None:
    """0013's backfill: the outcome table of a run crawled before it still counts every
    finished task, those its flushes counted and those finished since."""
    db = tmp_path / "old.db"
    tasks = [NewTask(url=f"http://a/{n}", host="a", depth=0) for n in range(5)]

    async def crawl_a_little() -> list[OutcomeCount]:
        store = await SqliteStore.open(db)
        run = await store.create_run(RunConfig(seeds=("http://a/",)))
        await store.transition_run(run.id, RunStatus.RUNNING)
        await store.add_tasks(run.id, tasks)
        leases = await store.acquire(run.id, worker_id="w", limit=5, lease_seconds=30)
        ok = [TaskReport(lease=lease, ok=True, http_status=200) for lease in leases[:3]]
        await store.report(run.id, ok)
        await store.flush_host_stats(run.id)  # these three counted, the rest not yet
        gone = TaskReport(lease=leases[3], ok=True, http_status=404)  # a final answer
        await store.report(run.id, [gone])
        counts = await store.count_outcomes(run.id)
        await store.close()
        return counts

    async def outcomes() -> list[OutcomeCount]:
        store = await SqliteStore.open(db)
        counts = await store.count_outcomes(1)
        await store.close()
        return counts

    before = asyncio.run(crawl_a_little())
    assert sum(c.tasks for c in before) == 4
    conn = sqlite3.connect(db)
    with conn:  # back to before 0013, the tasks kept
        conn.execute("DROP TABLE run_outcomes")
        conn.execute("DROP TABLE last_fetches")  # 0015's
        conn.execute("ALTER TABLE domains DROP COLUMN request_profile")  # 0016's
        conn.execute("DROP INDEX record_versions_gone")  # 0017's
        conn.execute("DROP TABLE sitemap_dates")  # 0018's
        undo_run_settings(conn)  # 0014's
        conn.execute("DELETE FROM schema_migrations WHERE version >= 13")
    conn.close()
    assert asyncio.run(outcomes()) == before
