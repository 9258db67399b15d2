"""PostgreSQL: a transaction replayed after its commit's acknowledgement was lost (the
connection dropped between COMMIT and its answer) does its work once.

The server is real; the fault is injected where the store would see it: the first
committed attempt of a transaction raises the error a dropped connection raises, and the
store's fault budget runs the transaction again, as it would after a real drop.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import psycopg
import pytest

from sitesync.errors import ScanConflict
from sitesync.models import RunConfig, RunStatus
from sitesync.store.postgres._db import PostgresDb
from sitesync.store.postgres.store import PostgresStore
from tests import _postgres


@pytest.fixture
async def store(postgres_dsn: str, postgres_schema: str) -> AsyncIterator[PostgresStore]:
    opened = await PostgresStore.open(postgres_dsn, schema=postgres_schema, retry_seconds=10)
    try:
        yield opened
    finally:
        await opened.close()


def lose_acknowledgements(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """From now on, the first committed attempt of every transaction looks lost to the
    store; returns the list of attempts whose answer was lost (one entry each)."""
    original = PostgresDb._attempt
    lost: list[int] = []

    async def attempt(self: PostgresDb, work: Callable[[Any], Awaitable[Any]]) -> Any:
        result = await original(self, work)  # committed
        if getattr(work, "__sitesync_replayed__", False):
            return result
        work.__sitesync_replayed__ = True  # type: ignore[attr-defined]
        lost.append(1)
        raise psycopg.OperationalError("server closed the connection unexpectedly")

    monkeypatch.setattr(PostgresDb, "_attempt", attempt)
    return lost


def budget_left(dsn: str, schema: str, run_id: int) -> int:
    with psycopg.connect(dsn) as conn:
        conn.execute(_postgres.search_path(schema))
        row = conn.execute(
            "SELECT COALESCE(SUM(remaining), 0) FROM run_admission_budget WHERE run_id = %s",
            (run_id,),
        ).fetchone()
        assert row is not None
        return int(row[0])


async def test_a_run_is_created_once_when_its_commit_acknowledgement_is_lost(
    store: PostgresStore,
    postgres_dsn: str,
    postgres_schema: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    lost = lose_acknowledgements(monkeypatch)
    run = await store.create_run(RunConfig(seeds=("http://a.test/",), max_pages=5))
    scan = await store.start_scan("fr", RunConfig(seeds=("http://b.test/",)))
    assert len(lost) == 2  # both transactions were replayed
    assert run.status is RunStatus.QUEUED and scan.scope == "fr"
    assert sorted(r.id for r in await store.list_runs()) == sorted([run.id, scan.id])
    assert budget_left(postgres_dsn, postgres_schema, run.id) == 5  # created once too
    # The scope's one active run is the scan's own: another scan is still refused.
    monkeypatch.undo()
    with pytest.raises(ScanConflict):
        await store.start_scan("fr", RunConfig(seeds=("http://b.test/",)))
