"""Exclusivity, fencing and exact counters across real processes sharing one PostgreSQL run.

Four OS processes, each with its own connection pool, acquire and report as fast as they
can from one run while their reports discover more links, so admission (dedup and the
``max_pages`` cap, or with no cap admissions side by side) races with leasing. The run must
end with every task handed out once per attempt, the cap hit exactly, and counters equal to
what the tasks themselves say. And no hot row: a run's task transitions never wait for its
row.
"""

from __future__ import annotations

import asyncio
import json
import logging
import subprocess
import sys
import time
from collections import defaultdict

import psycopg
import pytest

from sitesync.models import NewTask, ReportVerdict, RunConfig, RunStatus, TaskReport, TaskState
from sitesync.store.postgres.store import PostgresStore
from tests import _postgres
from tests.acceptance._cli import communicate

pytestmark = pytest.mark.slow

PROCESSES = 4
SEEDS = 500
MAX_PAGES = 3000
URL_SPACE = 6000  # links point into this many distinct URLs: plenty of duplicates

WORKER = """
import asyncio, json, random, sys, time
from sitesync.models import NewTask, ReportVerdict, TaskReport
from sitesync.store.postgres.store import PostgresStore

def page(n):
    return NewTask(url=f"http://h{n % 5}.test/{n}", host=f"h{n % 5}.test", depth=1)

def links(n):
    rng = random.Random(n)  # the same page always links to the same pages
    return tuple(page(rng.randrange(URL_SPACE)) for _ in range(3))

async def main(dsn, schema, run_id, worker, start_at):
    store = await PostgresStore.open(dsn, schema=schema, max_size=2)
    await asyncio.sleep(max(0.0, start_at - time.time()))  # all start together
    got = []
    while True:
        leases = await store.acquire(run_id, worker_id=worker, limit=7, lease_seconds=120)
        if not leases:
            counters = (await store.get_run(run_id)).counters
            if counters.pending == 0 and counters.assigned == 0:
                break
            await asyncio.sleep(0.005)  # others still hold work that may discover more
            continue
        got += [[lease.task_id, lease.attempt_count] for lease in leases]
        reports = []
        for lease in leases:
            n = int(lease.url.rsplit("/", 1)[1])
            if n % 5 == 0 and lease.attempt_count == 1:  # every fifth page fails once
                reports.append(TaskReport(lease=lease, ok=False, error="flaky"))
            else:
                reports.append(TaskReport(lease=lease, ok=True, http_status=200,
                                          bytes_fetched=100, discovered=links(n)))
        verdicts = await store.report(run_id, reports)
        assert verdicts == [ReportVerdict.ACCEPTED] * len(reports), verdicts
    await store.close()
    print(json.dumps(got))

URL_SPACE = int(sys.argv[6])
asyncio.run(main(sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4], float(sys.argv[5])))
"""


@pytest.mark.parametrize("cap", [MAX_PAGES, None], ids=["max_pages", "uncapped"])
def test_processes_racing_on_one_run_never_share_a_task(
    postgres_dsn: str, postgres_schema: str, cap: int | None
) -> None:
    async def setup() -> int:
        store = await PostgresStore.open(postgres_dsn, schema=postgres_schema)
        run = await store.create_run(RunConfig(seeds=("http://h0.test/",), max_pages=cap))
        await store.transition_run(run.id, RunStatus.RUNNING)
        seeds = [
            NewTask(url=f"http://h{n % 5}.test/{n}", host=f"h{n % 5}.test", depth=1)
            for n in range(SEEDS)
        ]
        assert await store.add_tasks(run.id, seeds) == SEEDS
        await store.close()
        return run.id

    run_id = asyncio.run(setup())
    start_at = str(time.time() + 2.0)
    common = [postgres_dsn, postgres_schema, str(run_id)]
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", WORKER, *common, f"w{n}", start_at, str(URL_SPACE)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for n in range(PROCESSES)
    ]
    outputs = [communicate(proc, timeout=100) for proc in procs]
    for proc, (_, err) in zip(procs, outputs, strict=True):
        assert proc.returncode == 0, err
    handed_out = [[tuple(pair) for pair in json.loads(out)] for out, _ in outputs]

    assert all(handed_out), "every process should have competed for tasks"
    attempts = [pair for batch in handed_out for pair in batch]
    assert len(attempts) == len(set(attempts)), "a task attempt was handed out twice"
    per_task: dict[int, list[int]] = defaultdict(list)
    for task_id, attempt in attempts:
        per_task[task_id].append(attempt)
    assert all(sorted(seen) == list(range(1, len(seen) + 1)) for seen in per_task.values())
    total = len(per_task)
    if cap is not None:
        assert total == cap  # admission stopped exactly at the cap
        assert asyncio.run(_budget_left(postgres_dsn, postgres_schema, run_id)) == 0

    async def read() -> None:
        store = await PostgresStore.open(postgres_dsn, schema=postgres_schema)
        run, counts = await store.get_run(run_id), await store.count_tasks(run_id)
        tasks = await store.list_tasks(run_id, limit=total + 1)
        await store.close()
        retried = sum(1 for seen in per_task.values() if len(seen) > 1)
        c = run.counters
        assert counts[TaskState.COMPLETED] == c.completed == c.tasks_total == total
        assert c.pending == c.assigned == c.failed == 0
        assert c.retries == retried == len(attempts) - total
        assert c.pages_fetched == total and c.bytes_fetched == 100 * total
        assert len(tasks) == total and all(t.lease_owner is None for t in tasks)
        assert retried == sum(1 for t in tasks if int(t.url.rsplit("/", 1)[1]) % 5 == 0)

    asyncio.run(read())


@pytest.mark.parametrize("cap", [None, 100], ids=["uncapped", "max_pages"])
async def test_task_transitions_never_wait_for_the_run_row(
    postgres_dsn: str, postgres_schema: str, cap: int | None
) -> None:
    """While another transaction holds the run's row (as a status change does), admission
    (under a cap too), acquire, a report that discovers links, and a release all go through."""
    store = await PostgresStore.open(postgres_dsn, schema=postgres_schema)
    try:
        run = await store.create_run(RunConfig(seeds=("http://a.test/",), max_pages=cap))
        await store.transition_run(run.id, RunStatus.RUNNING)
        holder = await psycopg.AsyncConnection.connect(postgres_dsn)
        try:
            await holder.execute(_postgres.search_path(postgres_schema))
            # The lock a status change takes (lock_run, or UPDATE of a non-key column).
            await holder.execute("SELECT 1 FROM runs WHERE id = %s FOR NO KEY UPDATE", (run.id,))

            async def transitions() -> None:
                seeds = [NewTask(url=f"http://a.test/{n}", host="a.test", depth=0) for n in (1, 2)]
                assert await store.add_tasks(run.id, seeds) == 2
                first, second = await store.acquire(
                    run.id, worker_id="w", limit=2, lease_seconds=30
                )
                found = (NewTask(url="http://b.test/", host="b.test", depth=1),)
                report = TaskReport(lease=first, ok=True, http_status=200, discovered=found)
                assert await store.report(run.id, [report]) == [ReportVerdict.ACCEPTED]
                assert await store.release(run.id, [second]) == 1

            await asyncio.wait_for(transitions(), timeout=10)
        finally:
            await holder.rollback()
            await holder.close()
        counters = (await store.get_run(run.id)).counters
        assert (counters.tasks_total, counters.pending, counters.completed) == (3, 2, 1)
    finally:
        await store.close()


async def _holding_slots(dsn: str, schema: str, run_id: int, but: int) -> psycopg.AsyncConnection:
    """A connection whose open transaction holds every budget slot of the run except ``but``
    (as admissions in flight on other workers do)."""
    holder = await psycopg.AsyncConnection.connect(dsn)
    await holder.execute(_postgres.search_path(schema))
    await holder.execute(
        "SELECT slot FROM run_admission_budget WHERE run_id = %s AND slot <> %s FOR UPDATE",
        (run_id, but),
    )
    return holder


async def _budget_left(dsn: str, schema: str, run_id: int) -> int:
    async with await psycopg.AsyncConnection.connect(dsn) as conn:
        await conn.execute(_postgres.search_path(schema))
        cursor = await conn.execute(
            "SELECT COALESCE(SUM(remaining), 0) FROM run_admission_budget WHERE run_id = %s",
            (run_id,),
        )
        row = await cursor.fetchone()
        assert row is not None
        return int(row[0])


async def test_capped_admissions_pass_over_budget_another_admission_holds(
    postgres_dsn: str, postgres_schema: str, caplog: pytest.LogCaptureFixture
) -> None:
    """A capped run's budget is in 16 slots. An admission never waits for a slot another
    transaction holds: it admits what the free slots allow and turns the rest away, and the
    budget held elsewhere is there again for the next admission once released. The cap
    holds exactly throughout: tasks admitted plus budget left is max_pages."""
    caplog.set_level(logging.DEBUG, logger="sitesync.store.postgres.budget")
    store = await PostgresStore.open(postgres_dsn, schema=postgres_schema)
    cap = 32  # two per slot

    def pages(first: int, count: int) -> list[NewTask]:
        return [
            NewTask(url=f"http://a.test/{n}", host="a.test", depth=1)
            for n in range(first, first + count)
        ]

    try:
        run = await store.create_run(RunConfig(seeds=("http://a.test/",), max_pages=cap))
        holder = await _holding_slots(postgres_dsn, postgres_schema, run.id, but=7)
        try:
            admitted = await asyncio.wait_for(store.add_tasks(run.id, pages(0, 10)), timeout=10)
            assert admitted == 2  # slot 7's share; the first pages found
            assert await asyncio.wait_for(store.add_tasks(run.id, pages(10, 5)), timeout=10) == 0
            turned_away = [r.getMessage() for r in caplog.records if "turned away" in r.message]
            assert (
                turned_away
                == [
                    f"run {run.id}: an admission found no free budget slot, 30 held by "
                    "admissions in flight; new URLs past its room were turned away"
                ]
                * 2
            )  # the operator's debug line, once per admission
        finally:
            await holder.rollback()
            await holder.close()
        listed = await store.list_tasks(run.id, limit=100)
        assert sorted(t.url for t in listed) == ["http://a.test/0", "http://a.test/1"]
        assert await _budget_left(postgres_dsn, postgres_schema, run.id) == cap - 2
        # Released: the pages turned away are admitted now, and no more than the cap ever.
        assert await store.add_tasks(run.id, pages(0, 15)) == 13
        assert await _budget_left(postgres_dsn, postgres_schema, run.id) == cap - 15
        assert await store.add_tasks(run.id, pages(15, 100)) == cap - 15
        assert (await store.get_run(run.id)).counters.tasks_total == cap
        assert await _budget_left(postgres_dsn, postgres_schema, run.id) == 0
        caplog.clear()
        assert await store.add_tasks(run.id, pages(200, 5)) == 0
        assert not [r for r in caplog.records if "turned away" in r.message]  # at the cap
    finally:
        await store.close()
