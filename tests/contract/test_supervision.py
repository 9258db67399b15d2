"""Heartbeats, the watchdog and the operator tools (SPEC R4, R5, R7), on every backend."""

from __future__ import annotations

import asyncio

from sitesync.models import RunConfig, RunStatus
from sitesync.store.base import Store
from tests._clock import FakeClock
from tests.contract.test_coordination import claim, join, run_with_hosts

#: How long a run goes without a heartbeat before it counts as crashed, in these tests.
STALE = 120.0
PAST_STALE = STALE + 1


async def queued_run(store: Store) -> int:
    return (await store.create_run(RunConfig(seeds=("http://a.test/",)))).id


async def test_only_one_supervisor_starts_a_queued_run(store: Store) -> None:
    run_id = await queued_run(store)
    results = await asyncio.gather(
        *(store.start_queued_run(run_id, supervisor_id=f"s{n}") for n in range(4))
    )
    started = [r for r in results if r is not None]
    assert len(started) == 1
    assert started[0].status is RunStatus.RUNNING and started[0].heartbeat_at is not None
    assert (await store.get_run(run_id)).supervisor_id == started[0].supervisor_id


async def test_a_run_without_heartbeat_is_requeued_until_its_budget_is_spent(
    store: Store, clock: FakeClock
) -> None:
    run_id = await queued_run(store)
    for attempt in (1, 2):
        assert await store.start_queued_run(run_id, supervisor_id="s") is not None
        clock.advance(STALE - 0.1)
        assert await store.recover_stale_runs(stale_after=STALE, max_crash_retries=2) == []
        clock.advance(0.2)
        [run] = await store.recover_stale_runs(stale_after=STALE, max_crash_retries=2)
        assert run.status is RunStatus.QUEUED and run.crash_retries == attempt
    await store.start_queued_run(run_id, supervisor_id="s")
    clock.advance(PAST_STALE)
    [run] = await store.recover_stale_runs(stale_after=STALE, max_crash_retries=2)
    assert run.status is RunStatus.FAILED and run.ended_at is not None
    assert run.status_reason == "crashed and exceeded max retries"


async def test_a_run_all_of_whose_workers_left_is_requeued_without_spending_a_retry(
    store: Store, clock: FakeClock
) -> None:
    run_id = await queued_run(store)
    await store.start_queued_run(run_id, supervisor_id="s")
    for worker in ("w1", "w2"):
        await store.register_worker(run_id, worker_id=worker, host="m", pid=1)
    for worker in ("w1", "w2"):
        await store.stop_worker(worker)  # each left cleanly (SIGTERM)
    clock.advance(PAST_STALE)
    [run] = await store.recover_stale_runs(stale_after=STALE, max_crash_retries=0)
    assert run.status is RunStatus.QUEUED and run.crash_retries == 0
    assert run.status_reason == "all workers left; re-queued"

    # Started again, and this time a worker dies without leaving: that is a crash.
    await store.start_queued_run(run_id, supervisor_id="s")
    await store.register_worker(run_id, worker_id="w3", host="m", pid=1)
    clock.advance(PAST_STALE)
    [run] = await store.recover_stale_runs(stale_after=STALE, max_crash_retries=1)
    assert run.status is RunStatus.QUEUED and run.crash_retries == 1

    # A start whose worker never got as far as registering is a crash too, even though
    # every worker the run ever had left cleanly.
    await store.stop_worker("w3")
    clock.advance(1)  # a later start: the supervisor's retry comes after w3 left
    await store.start_queued_run(run_id, supervisor_id="s")
    clock.advance(PAST_STALE)
    [run] = await store.recover_stale_runs(stale_after=STALE, max_crash_retries=1)
    assert run.status is RunStatus.FAILED


async def test_a_run_resumed_after_a_long_pause_is_not_taken_for_crashed(
    store: Store, clock: FakeClock
) -> None:
    run_id = await queued_run(store)
    await store.start_queued_run(run_id, supervisor_id="s")
    await store.transition_run(run_id, RunStatus.PAUSED)
    clock.advance(10 * STALE)  # paused far longer than stale_after
    await store.transition_run(run_id, RunStatus.RUNNING, reason="resumed by a user")
    assert await store.recover_stale_runs(stale_after=STALE, max_crash_retries=2) == []


async def test_a_run_resumed_after_its_workers_left_is_requeued_without_spending_a_retry(
    store: Store, clock: FakeClock
) -> None:
    """Paused, every worker leaves (SIGTERM), then a user resumes it and nobody joins: no
    process crashed, so the watchdog re-queues it as left, whatever the resume's time."""
    run_id = await queued_run(store)
    await store.start_queued_run(run_id, supervisor_id="s")
    await store.register_worker(run_id, worker_id="w1", host="m", pid=1)
    await store.transition_run(run_id, RunStatus.PAUSED)
    await store.stop_worker("w1")  # left cleanly while the run was paused
    clock.advance(PAST_STALE)
    await store.transition_run(run_id, RunStatus.RUNNING, reason="resumed by a user")
    assert await store.recover_stale_runs(stale_after=STALE, max_crash_retries=0) == []
    clock.advance(PAST_STALE)
    [run] = await store.recover_stale_runs(stale_after=STALE, max_crash_retries=0)
    assert (run.status, run.crash_retries) == (RunStatus.QUEUED, 0)
    assert run.status_reason == "all workers left; re-queued"

    # Resumed again once it is running and then paused, with a worker that died without
    # leaving (kill -9): that is still a crash.
    await store.start_queued_run(run_id, supervisor_id="s")
    await store.register_worker(run_id, worker_id="w2", host="m", pid=1)
    await store.transition_run(run_id, RunStatus.PAUSED)
    await store.transition_run(run_id, RunStatus.RUNNING, reason="resumed by a user")
    clock.advance(PAST_STALE)
    [run] = await store.recover_stale_runs(stale_after=STALE, max_crash_retries=1)
    assert (run.status, run.crash_retries) == (RunStatus.QUEUED, 1)


async def test_a_heartbeat_keeps_the_watchdog_away(store: Store, clock: FakeClock) -> None:
    run_id = await queued_run(store)
    await store.start_queued_run(run_id, supervisor_id="s")
    clock.advance(PAST_STALE)
    await store.heartbeat_run(run_id)
    assert await store.recover_stale_runs(stale_after=STALE, max_crash_retries=2) == []


async def test_inactive_runs_are_found_and_active_or_finished_ones_are_not(
    store: Store, clock: FakeClock
) -> None:
    idle = await queued_run(store)
    busy = await queued_run(store)
    done = await queued_run(store)
    await store.transition_run(done, RunStatus.CANCELLED)
    clock.advance(PAST_STALE)
    await store.start_queued_run(busy, supervisor_id="s")  # fresh activity
    found = {run.id for run in await store.find_inactive_runs(idle_seconds=STALE)}
    assert idle in found and busy not in found and done not in found


async def test_release_claims_by_expiry_worker_and_force(store: Store, clock: FakeClock) -> None:
    run_id = await run_with_hosts(store)
    await join(store, run_id, "dead")
    await join(store, run_id, "live")
    live = await claim(store, run_id, "live", seconds=30)
    dead = await claim(store, run_id, "dead", seconds=10)
    clock.advance(9.9)
    assert await store.release_claims_where(expired_only=True, worker_id=None, dry_run=True) == []
    clock.advance(0.2)  # past the dead worker's claims, well within the live one's
    preview = await store.release_claims_where(expired_only=True, worker_id=None, dry_run=True)
    assert {c.host for c in preview} == dead
    assert len(await store.list_claims(run_id)) == 4  # a dry run changes nothing
    released = await store.release_claims_where(expired_only=True, worker_id=None, dry_run=False)
    assert {c.host for c in released} == dead
    assert {c.host for c in await store.list_claims(run_id)} == live
    forced = await store.release_claims_where(expired_only=False, worker_id="live", dry_run=False)
    assert {c.host for c in forced} == live and await store.list_claims(run_id) == []
    assert all(c.expires_at > clock.now for c in forced)
