"""`sitesync status` and the dashboard ask every active run which hosts have work and, of an
idle one, when its next task may start; the run page also counts the run's finished tasks by
outcome. The answers come from the hosts-with-work counts, the tasks put off to a later time,
the flushed outcome counts and the tasks finished since, never from a read of all the run's
tasks (a million rows in a big crawl): shown here by each backend's own query plan."""

from __future__ import annotations

import re
import sqlite3
import time
from pathlib import Path
from typing import Any

import psycopg

from sitesync.store import Store
from sitesync.store.postgres._db import Q as POSTGRES_QUERIES
from sitesync.store.postgres.store import PostgresStore
from sitesync.store.sqlite._db import Q as SQLITE_QUERIES
from sitesync.store.sqlite.store import SqliteStore
from tests.contract.test_frontier_store import running_run, task

PARAMS = {"run_id": 0, "limit": 20}


async def _run_with_put_off_tasks(store: Store) -> int:
    """A run with pending tasks on several hosts, some of them put off."""
    run_id = await running_run(store)
    await store.add_tasks(run_id, [task(n, host=f"h{n % 5}.test") for n in range(200)])
    leases = await store.acquire(run_id, worker_id="w", limit=20, lease_seconds=30)
    await store.release(run_id, leases, not_before=time.time() + 600)
    return run_id


async def test_sqlite_answers_from_the_counts_and_the_put_off_tasks(tmp_path: Path) -> None:
    path = tmp_path / "store.db"
    store = await SqliteStore.open(path)
    try:
        run_id = await _run_with_put_off_tasks(store)
    finally:
        await store.close()
    with sqlite3.connect(path) as conn:

        def plan(name: str) -> str:
            rows = conn.execute(
                "EXPLAIN QUERY PLAN " + SQLITE_QUERIES[name], {**PARAMS, "run_id": run_id}
            )
            return " | ".join(row[3] for row in rows)

        eligible, backlog = plan("next_eligible_at"), plan("pending_by_host")
        outcomes = plan("count_outcomes")
    assert re.search(r"SEARCH tasks USING (COVERING )?INDEX tasks_uncounted", outcomes), outcomes
    assert sorted(re.findall(r"(?:SCAN|SEARCH) (\w+)", outcomes)) == ["run_outcomes", "tasks"]
    assert re.search(r"SEARCH tasks USING (COVERING )?INDEX tasks_put_off", eligible), eligible
    assert re.findall(r"(?:SCAN|SEARCH) (\w+)", eligible) == ["tasks", "runs"], eligible
    assert re.findall(r"(?:SCAN|SEARCH) (\w+)", backlog) == ["run_host_counts"], backlog


async def test_postgres_answers_from_the_counts_and_the_put_off_tasks(
    postgres_dsn: str, postgres_schema: str
) -> None:
    store = await PostgresStore.open(postgres_dsn, schema=postgres_schema)
    try:
        run_id = await _run_with_put_off_tasks(store)
    finally:
        await store.close()
    options = f"-csearch_path={postgres_schema}"
    client = psycopg.ClientCursor  # EXPLAIN takes no server-side parameters
    with psycopg.connect(postgres_dsn, options=options, cursor_factory=client) as conn:
        conn.execute("ANALYZE tasks")
        conn.execute("ANALYZE run_host_counts")
        # On a table this small a sequential scan is cheapest; what is asked here is which
        # index the query can use when the table is big.
        conn.execute("SET enable_seqscan = off")

        def scans(name: str) -> tuple[list[str], list[str]]:
            sql = "EXPLAIN (FORMAT JSON) " + POSTGRES_QUERIES[name]
            row = conn.execute(sql, {**PARAMS, "run_id": run_id}).fetchone()
            assert row is not None
            tables, indexes = _scans(row[0][0]["Plan"])
            return sorted(tables), sorted(indexes)

        eligible, backlog = scans("next_eligible_at"), scans("pending_by_host")
        outcomes = scans("count_outcomes")
    assert outcomes[0] == ["run_outcomes", "tasks"], outcomes
    assert "tasks_uncounted" in outcomes[1], outcomes
    assert eligible[0] == ["run_host_counts", "tasks"], eligible
    assert "tasks_put_off" in eligible[1], eligible
    assert not {"tasks_pending_by_priority", "tasks_pending_by_host"} & set(eligible[1])
    assert backlog[0] == ["run_host_counts"], backlog


def _scans(node: dict[str, Any]) -> tuple[set[str], set[str]]:
    """The tables and the indexes every scan of a JSON plan reads."""
    tables, indexes = set(), set()
    if "Relation Name" in node:
        tables.add(node["Relation Name"])
    if "Index Name" in node:
        indexes.add(node["Index Name"])
    for child in node.get("Plans", ()):
        more_tables, more_indexes = _scans(child)
        tables |= more_tables
        indexes |= more_indexes
    return tables, indexes
