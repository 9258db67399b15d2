"""Ending a dead host's tasks in one step (issue 10, item 6), on every backend."""

from __future__ import annotations

from sitesync.fetch.base import FetchOutcome
from sitesync.models import (
    HostStatus,
    NewTask,
    ReportVerdict,
    RunConfig,
    RunStatus,
    TaskReport,
    TaskState,
)
from sitesync.store.base import Store
from tests.contract.test_frontier_store import assert_counters_match_tasks, running_run, task

REASON = "unreachable: refused 3 connections over 20s (cannot connect)"


async def test_end_host_fails_every_pending_task_of_the_host_and_nothing_else(
    store: Store,
) -> None:
    run_id = await running_run(store)
    await store.add_tasks(
        run_id, [task(n, host=h) for h in ("dead.test", "ok.test") for n in range(5)]
    )
    # One task of the dead host is leased: it is left to its report.
    [leased] = await store.acquire(
        run_id, worker_id="w", limit=1, lease_seconds=30, exclude_hosts=["ok.test"]
    )
    assert leased.host == "dead.test"

    ended = await store.end_host(run_id, "dead.test", status=HostStatus.UNREACHABLE, reason=REASON)

    assert ended == 4
    failed = await store.list_tasks(run_id, state=TaskState.FAILED)
    assert {t.host for t in failed} == {"dead.test"} and len(failed) == 4
    assert {(t.outcome, t.last_error) for t in failed} == {("unreachable", REASON)}
    assert {t.host for t in await store.list_tasks(run_id, state=TaskState.PENDING)} == {"ok.test"}
    run = (await store.get_run(run_id)).counters
    assert (run.pending, run.assigned, run.failed) == (5, 1, 4)
    await assert_counters_match_tasks(store, run_id)
    # The leased one still reports normally, under its lease.
    verdicts = await store.report(
        run_id,
        [
            TaskReport(
                lease=leased, ok=False, error=REASON, give_up=True, outcome=FetchOutcome.UNREACHABLE
            )
        ],
    )
    assert verdicts == [ReportVerdict.ACCEPTED]
    await assert_counters_match_tasks(store, run_id)


async def test_an_ended_host_keeps_its_terminal_status_and_reason(store: Store) -> None:
    run_id = await running_run(store)
    await store.add_tasks(run_id, [task(1, host="dead.test"), task(1, host="down.test")])
    await store.save_host_failures(run_id, "dead.test", failures=2)
    host = await store.get_run_host(run_id, "dead.test")
    assert host is not None and (host.failures, host.status, host.ended_as) == (
        2, HostStatus.ACTIVE, None,
    )  # fmt: skip
    await store.end_host(run_id, "dead.test", status=HostStatus.UNREACHABLE, reason=REASON)
    await store.end_host(
        run_id, "down.test", status=HostStatus.BLOCKED, reason="blocked: robots.txt unavailable"
    )
    # Later generic updates never overwrite the terminal statuses.
    await store.set_host_status(run_id, "dead.test", HostStatus.ACTIVE)
    await store.flush_host_stats(run_id, final=True)
    hosts = {h.host: h for h in await store.list_run_hosts(run_id)}
    assert hosts["dead.test"].status is HostStatus.UNREACHABLE
    assert hosts["dead.test"].ended_as == "unreachable"
    assert hosts["dead.test"].ended_reason == REASON
    assert hosts["down.test"].status is HostStatus.BLOCKED
    assert hosts["down.test"].ended_as == "blocked"
    # The ended tasks are counted in the hosts' errors, once.
    assert (hosts["dead.test"].errors, hosts["down.test"].errors) == (1, 1)
    assert await store.get_run_host(run_id, "nobody.test") is None


async def test_links_to_an_ended_host_end_at_once_the_same_way(store: Store) -> None:
    run_id = await running_run(store)
    await store.add_tasks(run_id, [task(1, host="dead.test")])
    await store.end_host(run_id, "dead.test", status=HostStatus.UNREACHABLE, reason=REASON)

    admitted = await store.add_tasks(
        run_id, [task(2, host="dead.test"), task(3, host="dead.test"), task(1, host="ok.test")]
    )

    assert admitted == 3  # recorded, so the broken links are visible...
    late = await store.get_task(run_id, "http://dead.test/p/2")
    assert late is not None and late.state is TaskState.FAILED  # ...but never fetched
    assert (late.outcome, late.last_error) == ("unreachable", REASON)
    pending = await store.list_tasks(run_id, state=TaskState.PENDING)
    assert [t.url for t in pending] == ["http://ok.test/p/1"]
    await assert_counters_match_tasks(store, run_id)
    # The same through a report's discovered links.
    [lease] = await store.acquire(run_id, worker_id="w", limit=1, lease_seconds=30)
    discovered = (task(4, host="dead.test"),)
    report = TaskReport(lease=lease, ok=True, http_status=200, discovered=discovered)
    await store.report(run_id, [report])
    found = await store.get_task(run_id, "http://dead.test/p/4")
    assert found is not None and found.state is TaskState.FAILED
    await assert_counters_match_tasks(store, run_id)
    assert await store.complete_if_drained(run_id)


async def test_ending_a_host_with_nothing_pending_still_marks_it(store: Store) -> None:
    run_id = await running_run(store)
    assert (
        await store.end_host(run_id, "gone.test", status=HostStatus.UNREACHABLE, reason=REASON) == 0
    )
    host = await store.get_run_host(run_id, "gone.test")
    assert host is not None and host.status is HostStatus.UNREACHABLE
    await assert_counters_match_tasks(store, run_id)


async def test_a_scan_counts_a_dead_host_as_not_answering(store: Store) -> None:
    """A root ended because robots.txt stayed unavailable did not answer (stale), unlike a
    robots.txt that answered and disallows the whole site (blocked, but reachable)."""
    await store.import_domains("fr", ["down.test", "up.test"])
    run = await store.start_scan("fr", RunConfig(seeds=("http://down.test/", "http://up.test/")))
    await store.transition_run(run.id, RunStatus.RUNNING)
    await store.add_tasks(
        run.id, [NewTask(url=f"http://{h}/", host=h, depth=0) for h in ("down.test", "up.test")]
    )
    await store.mark_seeded(run.id)
    await store.end_host(
        run.id, "down.test", status=HostStatus.BLOCKED, reason="blocked: robots.txt unavailable"
    )
    [lease] = await store.acquire(run.id, worker_id="w", limit=10, lease_seconds=30)
    await store.report(run.id, [TaskReport(lease=lease, ok=True, http_status=200)])
    assert await store.complete_if_drained(run.id)
    summary = await store.apply_scan_results(run.id)
    assert summary is not None
    assert (summary.newly_stale, summary.reachable) == (("down.test",), ("up.test",))
