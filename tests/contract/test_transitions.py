"""Every row of the task-transition table (sitesync.frontier.transitions), driven through the public
Store API on each backend: the task ends in the state the table says, and no row is left
untried."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

import pytest

from sitesync.frontier.transitions import TASK_TRANSITIONS, TaskEvent, Transition, next_state
from sitesync.models import (
    FetchOutcome,
    HostStatus,
    Lease,
    RunConfig,
    RunStatus,
    TaskReport,
    TaskState,
)
from sitesync.store.base import Store
from tests._clock import FakeClock
from tests.contract.test_frontier_store import assert_counters_match_tasks, task

#: Every lease of these tests; LEASE_EXPIRED moves the store's clock past it.
LEASE_SECONDS = 30.0

Event = Callable[[Store, int, Lease | None, FakeClock], Awaitable[None]]


async def _run(store: Store, max_retries: int) -> int:
    run = await store.create_run(RunConfig(seeds=("http://a.test/",), max_retries=max_retries))
    await store.transition_run(run.id, RunStatus.RUNNING)
    await store.mark_seeded(run.id)
    return run.id


def _report(**fields: object) -> Event:
    async def report(store: Store, run_id: int, lease: Lease | None, clock: FakeClock) -> None:
        assert lease is not None
        await store.report(run_id, [TaskReport(lease=lease, **fields)])  # type: ignore[arg-type]

    return report


async def _admit(store: Store, run_id: int, lease: Lease | None, clock: FakeClock) -> None:
    assert await store.add_tasks(run_id, [task(1)]) == 1


async def _acquire(store: Store, run_id: int, lease: Lease | None, clock: FakeClock) -> None:
    assert len(await store.acquire(run_id, worker_id="w", limit=1, lease_seconds=30)) == 1


async def _release(store: Store, run_id: int, lease: Lease | None, clock: FakeClock) -> None:
    assert lease is not None
    assert await store.release(run_id, [lease]) == 1


async def _release_worker(store: Store, run_id: int, lease: Lease | None, clock: FakeClock) -> None:
    assert await store.release_worker(run_id, worker_id="w") == 1


async def _reclaiming_acquire(store: Store, run_id: int) -> None:
    """An acquire of another worker that leases nothing (it holds no claim) but returns
    ended leases to pending first, as every acquire does."""
    got = await store.acquire(
        run_id, worker_id="other", limit=1, lease_seconds=30, claimed_only=True
    )
    assert got == []


async def _worker_gone(store: Store, run_id: int, lease: Lease | None, clock: FakeClock) -> None:
    [gone] = [w for w in await store.list_workers(run_id) if w.worker_id == "w"]
    assert await store.release_gone_worker(run_id, gone) == 1
    await _reclaiming_acquire(store, run_id)


async def _lease_expired(store: Store, run_id: int, lease: Lease | None, clock: FakeClock) -> None:
    clock.advance(LEASE_SECONDS + 0.1)
    await _reclaiming_acquire(store, run_id)


async def _host_ended(store: Store, run_id: int, lease: Lease | None, clock: FakeClock) -> None:
    ended = await store.end_host(run_id, "a.test", status=HostStatus.UNREACHABLE, reason="x")
    assert ended == 1


EVENTS: dict[TaskEvent, Event] = {
    TaskEvent.ADMIT: _admit,
    TaskEvent.ACQUIRE: _acquire,
    TaskEvent.HOST_ENDED: _host_ended,
    TaskEvent.REPORT_OK: _report(ok=True, http_status=200),
    TaskEvent.REPORT_RETRY: _report(ok=False, error="timeout", retry_delay=0.0),
    TaskEvent.REPORT_LAST: _report(ok=False, error="timeout", retry_delay=0.0),
    TaskEvent.GIVE_UP: _report(ok=False, error="invalid", give_up=True),
    TaskEvent.RELEASE: _release,
    TaskEvent.RELEASE_WORKER: _release_worker,
    TaskEvent.WORKER_GONE: _worker_gone,
    TaskEvent.LEASE_EXPIRED: _lease_expired,
}


async def _task_in(store: Store, row: Transition) -> tuple[int, Lease | None]:
    """A run with one task in ``row.state`` (no task yet for DISCOVERED)."""
    # One attempt allowed where the row is about the last one, several elsewhere.
    run_id = await _run(store, max_retries=1 if row.event is TaskEvent.REPORT_LAST else 3)
    if row.state is TaskState.DISCOVERED:
        return run_id, None
    await store.add_tasks(run_id, [task(1)])
    if row.state is TaskState.PENDING:
        return run_id, None
    assert row.state is TaskState.ASSIGNED, "a row from a state this test cannot set up"
    await store.register_worker(
        run_id, worker_id="w", host="machine", pid=4242, boot_id="boot", proc_start=7
    )
    [lease] = await store.acquire(run_id, worker_id="w", limit=1, lease_seconds=LEASE_SECONDS)
    return run_id, lease


def test_every_row_of_the_table_is_driven_here() -> None:
    assert set(EVENTS) == {row.event for row in TASK_TRANSITIONS}
    assert len({(row.state, row.event) for row in TASK_TRANSITIONS}) == len(TASK_TRANSITIONS)


@pytest.mark.parametrize("row", TASK_TRANSITIONS, ids=lambda row: f"{row.state}-{row.event}")
async def test_each_transition_ends_where_the_table_says(
    store: Store, clock: FakeClock, row: Transition
) -> None:
    run_id, lease = await _task_in(store, row)
    url = task(1).url
    before = await store.get_task(run_id, url)
    assert (before.state if before else TaskState.DISCOVERED) is row.state

    await EVENTS[row.event](store, run_id, lease, clock)

    after = await store.get_task(run_id, url)
    assert after is not None and after.state is next_state(row.state, row.event) is row.to
    await assert_counters_match_tasks(store, run_id)


async def test_an_outcome_is_read_back_as_the_enum_it_was_reported_as(store: Store) -> None:
    reported = next(row for row in TASK_TRANSITIONS if row.event is TaskEvent.REPORT_OK)
    run_id, lease = await _task_in(store, reported)
    assert lease is not None
    report = TaskReport(lease=lease, ok=True, http_status=200, outcome=FetchOutcome.UNDECODABLE)
    await store.report(run_id, [report])
    stored = await store.get_task(run_id, lease.url)
    assert stored is not None and stored.outcome is FetchOutcome.UNDECODABLE
    [attempt] = await store.list_attempts(lease.task_id)
    assert attempt.outcome is FetchOutcome.UNDECODABLE
