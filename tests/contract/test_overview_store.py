"""The dashboard's read models (OverviewStore), on every backend."""

from __future__ import annotations

import time

from sitesync.fetch.base import FetchOutcome
from sitesync.models import (
    HostBacklog,
    OutcomeCount,
    RunConfig,
    RunStatus,
    TaskReport,
    TaskState,
    WorkerLeases,
)
from sitesync.store.base import Store
from tests.contract.test_frontier_store import running_run, task


async def test_active_runs_are_the_queued_running_and_paused_ones(store: Store) -> None:
    queued = await store.create_run(RunConfig(seeds=("http://a.test/",)))
    running = await running_run(store)
    paused = await running_run(store)
    await store.transition_run(paused, RunStatus.PAUSED)
    done = await running_run(store)
    await store.transition_run(done, RunStatus.CANCELLED)
    active = await store.list_active_runs()
    assert [run.id for run in active] == [queued.id, running, paused]
    assert [run.status for run in active] == [
        RunStatus.QUEUED,
        RunStatus.RUNNING,
        RunStatus.PAUSED,
    ]


async def test_outcomes_count_finished_tasks_by_outcome_and_status_class(store: Store) -> None:
    run_id = await running_run(store, max_retries=1)
    await store.add_tasks(run_id, [task(n) for n in range(5)])
    leases = await store.acquire(run_id, worker_id="w", limit=4, lease_seconds=30)
    reports = [
        TaskReport(lease=leases[0], ok=True, http_status=200, outcome=FetchOutcome.SUCCESS),
        TaskReport(lease=leases[1], ok=True, http_status=200, outcome=FetchOutcome.SUCCESS),
        TaskReport(lease=leases[2], ok=True, http_status=404, outcome=FetchOutcome.HTTP_ERROR),
        TaskReport(
            lease=leases[3],
            ok=False,
            error="unreachable: refused",
            outcome=FetchOutcome.UNREACHABLE,
        ),
    ]
    await store.report(run_id, reports)
    assert await store.count_outcomes(run_id) == [
        OutcomeCount("success", "2xx", 2),
        OutcomeCount("http_error", "4xx", 1),
        OutcomeCount("unreachable", "none", 1),
    ]
    assert await store.count_outcomes(run_id + 1000) == []


async def test_outcomes_count_the_flushed_tasks_and_those_finished_since(store: Store) -> None:
    run_id = await running_run(store)
    await store.add_tasks(run_id, [task(n) for n in range(6)])
    leases = await store.acquire(run_id, worker_id="w", limit=6, lease_seconds=30)

    def done(n: int, status: int) -> TaskReport:
        outcome = FetchOutcome.SUCCESS if status < 400 else FetchOutcome.HTTP_ERROR
        return TaskReport(lease=leases[n], ok=True, http_status=status, outcome=outcome)

    await store.report(run_id, [done(0, 200), done(1, 404)])
    assert await store.flush_host_stats(run_id) == 2
    flushed = [OutcomeCount("http_error", "4xx", 1), OutcomeCount("success", "2xx", 1)]
    assert await store.count_outcomes(run_id) == flushed  # from the counts alone
    await store.report(run_id, [done(2, 200), done(3, 200), done(4, 410)])
    since = [OutcomeCount("success", "2xx", 3), OutcomeCount("http_error", "4xx", 2)]
    assert await store.count_outcomes(run_id) == since  # counted, plus the rest live
    assert await store.flush_host_stats(run_id) == 3
    assert await store.flush_host_stats(run_id) == 0
    assert await store.count_outcomes(run_id) == since  # each task counted once
    other = await running_run(store)
    await store.add_tasks(other, [task(9)])
    [lease] = await store.acquire(other, worker_id="w", limit=1, lease_seconds=30)
    await store.report(other, [TaskReport(lease=lease, ok=True, http_status=500)])
    await store.flush_host_stats(other)
    assert await store.count_outcomes(run_id) == since  # runs count apart
    assert [c.status_class for c in await store.count_outcomes(other)] == ["5xx"]


async def test_redirected_tasks_carry_their_hops(store: Store) -> None:
    run_id = await running_run(store)
    await store.add_tasks(run_id, [task(1), task(2)])
    first, second = await store.acquire(run_id, worker_id="w", limit=2, lease_seconds=30)
    hops = (("http://a.test/p/1", "http://a.test/new", 301),)
    await store.report(
        run_id,
        [
            TaskReport(
                lease=first,
                ok=True,
                http_status=200,
                outcome=FetchOutcome.SUCCESS,
                final_url="http://a.test/new",
                redirects=hops,
            ),
            TaskReport(lease=second, ok=True, http_status=200, outcome=FetchOutcome.SUCCESS),
        ],
    )
    [redirected] = await store.list_redirected(run_id)
    assert redirected.url == first.url and redirected.redirects == hops
    assert redirected.final_url == "http://a.test/new"
    assert await store.list_redirected(run_id, limit=0) == []


async def test_pending_by_host_follows_every_transition_most_pending_first(
    store: Store,
) -> None:
    run_id = await running_run(store, max_retries=2)
    await store.add_tasks(
        run_id,
        [task(n, host="a.test") for n in range(3)]
        + [task(n, host="b.test") for n in range(10, 12)]
        + [task(20, host="c.test")],
    )

    async def backlog() -> list[tuple[str, int]]:
        hosts = await store.pending_by_host(run_id)
        assert all(isinstance(b, HostBacklog) for b in hosts)
        return [(b.host, b.pending) for b in hosts]

    assert await backlog() == [("a.test", 3), ("b.test", 2), ("c.test", 1)]
    assert await store.pending_by_host(run_id, limit=1) == [HostBacklog("a.test", 3)]
    leases = await store.acquire(run_id, worker_id="w", limit=10, lease_seconds=30, per_host=2)
    assert sorted(lease.host for lease in leases) == ["a.test"] * 2 + ["b.test"] * 2 + ["c.test"]
    assert await backlog() == [("a.test", 1)]  # the leased ones are not pending
    by_host = {lease.host: lease for lease in leases}
    await store.release(run_id, [by_host["c.test"]], not_before=time.time() + 600)
    retry = TaskReport(lease=by_host["b.test"], ok=False, error="timeout", retry_delay=600)
    done = [TaskReport(lease=lease, ok=True, http_status=200) for lease in leases
            if lease.host == "a.test"]  # fmt: skip
    await store.report(run_id, [retry, *done])
    # put off or not, a pending task is backlog; a finished one is not
    assert await backlog() == [("a.test", 1), ("b.test", 1), ("c.test", 1)]


async def test_next_eligible_at_is_the_earliest_start_of_a_pending_task(store: Store) -> None:
    run_id = await running_run(store)
    assert await store.next_eligible_at(run_id) is None  # nothing pending
    await store.add_tasks(run_id, [task(n) for n in range(3)])
    assert await store.next_eligible_at(run_id) == 0.0  # new tasks may start at once
    leases = await store.acquire(run_id, worker_id="w", limit=3, lease_seconds=30)
    assert await store.next_eligible_at(run_id) is None  # all leased
    later = time.time() + 600
    await store.release(run_id, leases[:1], not_before=later + 60)
    await store.release(run_id, leases[1:2], not_before=later)
    assert await store.next_eligible_at(run_id) == later  # every pending task put off
    await store.release(run_id, leases[2:])  # back as it was: eligible at once
    assert await store.next_eligible_at(run_id) == 0.0
    [again] = await store.acquire(run_id, worker_id="w", limit=1, lease_seconds=30)
    assert await store.next_eligible_at(run_id) == later
    await store.report(run_id, [TaskReport(lease=again, ok=True, http_status=200)])
    assert await store.next_eligible_at(run_id) == later


async def test_leases_by_worker_counts_expired_leases(store: Store) -> None:
    run_id = await running_run(store)
    await store.add_tasks(run_id, [task(n) for n in range(4)])
    await store.acquire(run_id, worker_id="w", limit=1, lease_seconds=60)
    # Expired at once; last, because every acquire first takes expired leases back.
    await store.acquire(run_id, worker_id="slow", limit=2, lease_seconds=-1)
    by_worker = await store.leases_by_worker(run_id)
    assert [(w.worker_id, w.tasks, w.expired) for w in by_worker] == [
        ("slow", 2, 2),
        ("w", 1, 0),
    ]
    assert all(isinstance(w, WorkerLeases) for w in by_worker)
    assert by_worker[0].earliest_expiry < time.time() < by_worker[1].earliest_expiry
    assert (await store.count_tasks(run_id))[TaskState.ASSIGNED] == 3
