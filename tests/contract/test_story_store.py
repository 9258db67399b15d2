"""What ``sitesync why`` and the registry read (issue 14), on every backend: attempt history
kept bounded in the report transaction, where a task was found, the records of one page,
pages linking to a URL, domain scans across scans, deleting a schedule."""

from __future__ import annotations

from sitesync.fetch.base import FetchOutcome
from sitesync.models import AssetRecord, NewTask, RunStatus, TaskReport
from sitesync.store.base import Store
from tests.contract.test_frontier_store import running_run, task
from tests.contract.test_registry import SCOPE, scan


async def attempt_until_done(store: Store, run_id: int, failures: int, **report: object) -> None:
    """Fail the run's only task ``failures`` times (retried at once), then complete it."""
    for n in range(failures + 1):
        [lease] = await store.acquire(run_id, worker_id=f"w{n}", limit=1, lease_seconds=30)
        done = n == failures
        await store.report(
            run_id,
            [
                TaskReport(
                    lease=lease, ok=done, http_status=200 if done else 503,
                    outcome=FetchOutcome.SUCCESS if done else FetchOutcome.HTTP_ERROR,
                    error=None if done else f"http_error: HTTP 503 #{n + 1}",
                    bytes_fetched=100 if done else 0, started_at=1000.0 + n,
                    ended_at=1000.5 + n, worker_id=f"w{n}",
                    redirects=(("http://a.test/p/1", "http://a.test/p/1/", 301),) if done else (),
                    **report,  # type: ignore[arg-type]
                )
            ],
        )  # fmt: skip


async def test_every_attempt_is_kept_with_its_details(store: Store) -> None:
    run_id = await running_run(store, max_retries=10)
    await store.add_tasks(run_id, [task(1)])
    await attempt_until_done(store, run_id, failures=2)
    t = await store.get_task(run_id, "http://a.test/p/1")
    assert t is not None
    attempts = await store.list_attempts(t.id)
    assert [a.attempt for a in attempts] == [1, 2, 3]
    assert [a.http_status for a in attempts] == [503, 503, 200]
    assert [a.worker_id for a in attempts] == ["w0", "w1", "w2"]
    assert attempts[0].error == "http_error: HTTP 503 #1" and attempts[2].error is None
    assert attempts[2].outcome == "success" and attempts[2].bytes == 100
    assert attempts[2].redirect_hops == 1 and attempts[0].redirect_hops == 0
    assert attempts[1].started_at == 1001.0 and attempts[1].duration == 0.5


async def test_history_is_bounded_oldest_first(store: Store) -> None:
    store.max_attempts_kept = 3
    run_id = await running_run(store, max_retries=10)
    await store.add_tasks(run_id, [task(1)])
    await attempt_until_done(store, run_id, failures=5)
    t = await store.get_task(run_id, "http://a.test/p/1")
    assert t is not None and t.attempt_count == 6
    assert [a.attempt for a in await store.list_attempts(t.id)] == [4, 5, 6]


async def test_a_fenced_out_report_leaves_no_attempt(store: Store) -> None:
    run_id = await running_run(store)
    await store.add_tasks(run_id, [task(1)])
    [lease] = await store.acquire(run_id, worker_id="w", limit=1, lease_seconds=30)
    await store.release(run_id, [lease])
    late = TaskReport(lease=lease, ok=True, http_status=200, outcome=FetchOutcome.SUCCESS)
    await store.report(run_id, [late])
    t = await store.get_task(run_id, "http://a.test/p/1")
    assert t is not None and await store.list_attempts(t.id) == []


async def test_a_task_knows_the_page_that_first_linked_to_it(store: Store) -> None:
    run_id = await running_run(store)
    await store.add_tasks(run_id, [task(0, depth=0)])
    [lease] = await store.acquire(run_id, worker_id="w", limit=1, lease_seconds=30)
    found = NewTask(url="http://a.test/p/1", host="a.test", depth=1, found_from=lease.task_id)
    await store.report(
        run_id, [TaskReport(lease=lease, ok=True, http_status=200, discovered=(found,))]
    )
    again = NewTask(url="http://a.test/p/1", host="a.test", depth=3, found_from=12345)
    await store.add_tasks(run_id, [again])  # a later link changes nothing
    t = await store.get_task(run_id, "http://a.test/p/1")
    assert t is not None
    assert (t.found_from, t.found_on, t.depth) == (lease.task_id, "http://a.test/p/0", 1)
    root = await store.get_task(run_id, "http://a.test/p/0")
    assert root is not None and root.found_from is None and root.found_on is None


async def test_records_of_a_page_and_pages_linking_to_a_url(store: Store) -> None:
    run_id = await running_run(store)
    await store.add_tasks(run_id, [task(0, depth=0), task(1)])
    leases = await store.acquire(run_id, worker_id="w", limit=2, lease_seconds=30)
    links = {"internal": ["http://a.test/deep"], "external": ["http://b.test/x"]}
    records = (
        AssetRecord(key="page:http://a.test/p/0", kind="page", url="http://a.test/p/0",
                    content_hash="h0"),
        AssetRecord(key="links:http://a.test/p/0", kind="links", url="http://a.test/p/0",
                    content_hash="h1", data=links),
    )  # fmt: skip
    await store.report(
        run_id,
        [
            TaskReport(lease=leases[0], ok=True, http_status=200, records=records),
            TaskReport(lease=leases[1], ok=True, http_status=200),
        ],
    )
    page = await store.records_of_task(run_id, leases[0].task_id)
    assert [(r.key, r.version) for r in page] == [
        ("links:http://a.test/p/0", 1),
        ("page:http://a.test/p/0", 1),
    ]
    assert await store.records_of_task(run_id, leases[1].task_id) == []
    assert await store.pages_linking_to(run_id, "http://a.test/deep") == ["http://a.test/p/0"]
    assert await store.pages_linking_to(run_id, "http://b.test/x") == ["http://a.test/p/0"]
    assert await store.pages_linking_to(run_id, "http://a.test/nowhere") == []


async def test_the_registry_remembers_each_scan_of_each_domain(store: Store) -> None:
    await store.import_domains(SCOPE, ["a.test", "b.test"])
    first = await scan(store, {"b.test": "unreachable"})
    assert first is not None
    await store.flush_host_stats(first.run_id, final=True)
    assert await store.record_domain_scans(first.run_id) == 2
    second = await scan(store)
    assert second is not None
    await store.flush_host_stats(second.run_id, final=True)
    await store.record_domain_scans(second.run_id)
    await store.record_domain_scans(second.run_id)  # again: rewritten, not doubled

    history = await store.domain_history("b.test")
    assert [s.run_id for s in history] == [second.run_id, first.run_id]
    assert [(s.pages, s.errors) for s in history] == [(1, 0), (0, 1)]
    assert all(s.run_status == RunStatus.COMPLETED.value and s.scope == SCOPE for s in history)
    latest = await store.latest_domain_scans()
    assert [(s.host, s.run_id) for s in latest] == [
        ("a.test", second.run_id),
        ("b.test", second.run_id),
    ]
    assert [s.host for s in await store.latest_domain_scans("a.test")] == ["a.test"]
    run = await running_run(store)  # a run without a scope remembers nothing
    assert await store.record_domain_scans(run) == 0


async def test_a_schedule_can_be_deleted(store: Store) -> None:
    await store.set_schedule("fr", cadence="0 3 * * *", next_run_at=10.0)
    await store.set_schedule("de", cadence="0 3 * * *", next_run_at=10.0)
    assert await store.delete_schedule("fr") is True
    assert await store.delete_schedule("fr") is False
    assert [s.scope for s in await store.list_schedules()] == ["de"]
