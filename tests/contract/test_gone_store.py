"""Pages that disappear and the change report (issue 30), through the store's own calls on
every backend: which run is the previous scan, which pages get a tombstone, and that the
report counts them."""

from __future__ import annotations

import hashlib

from sitesync.models import AssetRecord, FetchOutcome, NewTask, RunConfig, RunStatus, TaskReport
from sitesync.store.base import Store

HOST = "a.test"
SEEDS = (f"http://{HOST}/",)


def page(path: str, content: str = "v1") -> AssetRecord:
    url = f"http://{HOST}{path}"
    digest = hashlib.sha256(content.encode()).hexdigest()
    return AssetRecord(key=f"page:{url}", kind="page", url=url, content_hash=digest,
                       data={"content": content})  # fmt: skip


async def run_with(
    store: Store,
    answers: dict[str, int],
    *,
    seeds: tuple[str, ...] = SEEDS,
    end: RunStatus = RunStatus.COMPLETED,
) -> int:
    """A run whose tasks answer ``answers`` (path: HTTP status; a 200 records its page)."""
    run = await store.create_run(RunConfig(seeds=seeds))
    await store.transition_run(run.id, RunStatus.RUNNING)
    await store.mark_seeded(run.id)
    tasks = [NewTask(url=f"http://{HOST}{path}", host=HOST, depth=0) for path in answers]
    await store.add_tasks(run.id, tasks)
    leases = await store.acquire(run.id, worker_id="w", limit=100, lease_seconds=30)
    reports = []
    for lease in leases:
        status = answers[lease.url.removeprefix(f"http://{HOST}")]
        records = (page(lease.url.removeprefix(f"http://{HOST}")),) if status == 200 else ()
        outcome = FetchOutcome.SUCCESS if status == 200 else FetchOutcome.HTTP_ERROR
        size = 100 if status == 200 else 10
        reports.append(TaskReport(lease=lease, ok=True, http_status=status, records=records,
                                  outcome=outcome, bytes_fetched=size))  # fmt: skip
    await store.report(run.id, reports)
    await store.transition_run(run.id, end)
    return run.id


async def latest_reason(store: Store, path: str) -> tuple[int, object]:
    last = (await store.record_history(f"page:http://{HOST}{path}"))[-1]
    return last.run_id, last.data.get("reason") if last.gone else None


async def test_the_previous_scan_is_the_latest_earlier_completed_run_of_the_same_seeds(
    store: Store,
) -> None:
    first = await run_with(store, {"/": 200, "/a": 200})
    await run_with(store, {"/": 200}, seeds=("http://other.test/",))  # other seeds
    await run_with(store, {"/": 200}, end=RunStatus.STOPPED)  # not completed
    latest = await run_with(store, {"/": 200, "/a": 200})
    assert await store.previous_scan_of(latest) == first
    assert await store.previous_scan_of(first) is None


async def test_404_410_and_unreached_pages_get_tombstones_once(store: Store) -> None:
    first = await run_with(store, {"/": 200, "/a": 200, "/b": 200, "/c": 200})
    second = await run_with(store, {"/": 200, "/a": 404, "/b": 410})  # /c: not reached
    assert await store.mark_gone(second) == 3
    assert await store.mark_gone(second) == 0  # idempotent
    assert await latest_reason(store, "/a") == (second, "http_404")
    assert await latest_reason(store, "/b") == (second, "http_410")
    assert await latest_reason(store, "/c") == (second, "unreached")
    assert await latest_reason(store, "/") == (first, None)
    report = await store.change_report(second)
    assert report.since_run_id == first
    [host] = report.hosts
    assert (host.new, host.changed, host.unchanged_same_content, host.gone) == (0, 0, 1, 3)
    assert (host.requests, host.bytes_downloaded) == (3, 120)


async def test_a_stopped_run_marks_only_what_answered_404_or_410(store: Store) -> None:
    await run_with(store, {"/": 200, "/a": 200, "/c": 200})
    stopped = await run_with(store, {"/": 200, "/a": 410}, end=RunStatus.STOPPED)
    assert await store.mark_gone(stopped) == 1
    assert (await latest_reason(store, "/c"))[1] is None


async def test_no_unreached_page_is_judged_on_a_host_with_an_error(store: Store) -> None:
    await run_with(store, {"/": 200, "/a": 200, "/c": 200})
    troubled = await run_with(store, {"/": 200, "/a": 500})
    assert await store.mark_gone(troubled) == 0
    report = await store.change_report(troubled)
    assert (report.total.gone, report.total.not_reached) == (0, 2)
