"""A worker proven gone on its own machine hands over at once, and only then (issue 10.7).

The proof itself (``/proc``) is the worker's business (tests/unit/test_liveness.py); the
store's part is the fenced hand-over, on every backend.
"""

from __future__ import annotations

import dataclasses

import pytest

from sitesync.models import ReportVerdict, TaskReport, TaskState, WorkerInfo
from sitesync.store.base import Store
from tests.contract.test_coordination import HOSTS, claim, run_with_hosts

LONG = 3600.0  # leases and claims that would outlast the test many times over


async def dead_worker_with_work(store: Store) -> tuple[int, WorkerInfo, list[TaskReport]]:
    """A run whose worker "dead" holds claims on every host and leases on all its tasks."""
    run_id = await run_with_hosts(store)
    await store.register_worker(
        run_id, worker_id="dead", host="machine", pid=4242, boot_id="boot/pid:[1]", proc_start=77
    )
    assert await claim(store, run_id, "dead", seconds=LONG) == set(HOSTS)
    leases = await store.acquire(
        run_id, worker_id="dead", limit=100, lease_seconds=LONG, claimed_only=True
    )
    assert len(leases) == 2 * len(HOSTS)
    (info,) = await store.list_workers(run_id)
    assert (info.boot_id, info.proc_start) == ("boot/pid:[1]", 77)
    late = [TaskReport(lease=lease, ok=True, http_status=200) for lease in leases]
    return run_id, info, late


async def test_a_gone_worker_hands_its_tasks_and_hosts_over_at_once(store: Store) -> None:
    run_id, dead, late = await dead_worker_with_work(store)
    await store.register_worker(run_id, worker_id="next", host="machine", pid=5)

    assert await store.release_gone_worker(run_id, dead) == len(late)

    # the next worker gets every host and every task now, not in an hour: as its feed
    # does, an acquire (which returns ended leases to pending), a claim, an acquire
    assert (
        await store.acquire(
            run_id, worker_id="next", limit=100, lease_seconds=30, claimed_only=True
        )
        == []
    )
    assert (await store.get_run(run_id)).counters.pending == len(late)
    assert await claim(store, run_id, "next") == set(HOSTS)
    leases = await store.acquire(
        run_id, worker_id="next", limit=100, lease_seconds=30, claimed_only=True
    )
    assert sorted(lease.task_id for lease in leases) == sorted(r.lease.task_id for r in late)
    assert all(lease.attempt_count == 2 for lease in leases)  # the lost attempt counts
    run = await store.get_run(run_id)
    counts = await store.count_tasks(run_id)
    assert run.counters.assigned == counts[TaskState.ASSIGNED] == len(late)
    assert run.counters.pending == counts.get(TaskState.PENDING, 0) == 0
    # the gone worker no longer counts, and whatever it might still say is refused
    workers = {w.worker_id: w for w in await store.list_workers(run_id)}
    assert workers["dead"].stopped_at is not None and workers["next"].stopped_at is None
    assert set(await store.report(run_id, late)) == {ReportVerdict.LEASE_LOST}


@pytest.mark.parametrize(
    "change",
    [
        {"pid": 4243},  # another process
        {"proc_start": 78},  # the proof was about an earlier process with this pid
        {"boot_id": "other-boot/pid:[1]"},  # another boot, or another machine
        {"host": "elsewhere"},  # another machine
        {"boot_id": None, "proc_start": None},  # nothing proven
    ],
)
async def test_the_hand_over_is_fenced_on_the_whole_proof(
    store: Store, change: dict[str, object]
) -> None:
    run_id, dead, late = await dead_worker_with_work(store)
    await store.register_worker(run_id, worker_id="next", host="machine", pid=5)

    assert await store.release_gone_worker(run_id, dataclasses.replace(dead, **change)) == 0

    assert await store.acquire(run_id, worker_id="next", limit=100, lease_seconds=30) == []
    assert await claim(store, run_id, "next") == set()  # its hosts are still held
    (still,) = [w for w in await store.list_workers(run_id) if w.worker_id == "dead"]
    assert still.stopped_at is None
    assert set(await store.report(run_id, late)) == {ReportVerdict.ACCEPTED}


async def test_a_worker_that_registered_again_is_not_released_on_old_facts(store: Store) -> None:
    run_id, dead, late = await dead_worker_with_work(store)
    # the same worker id now runs in a process that started later (its row says so)
    await store.register_worker(
        run_id, worker_id="dead", host="machine", pid=4242, boot_id="boot/pid:[1]", proc_start=90
    )
    assert await store.release_gone_worker(run_id, dead) == 0
    assert set(await store.report(run_id, late)) == {ReportVerdict.ACCEPTED}


async def test_a_stopped_worker_is_not_released_twice(store: Store) -> None:
    run_id, dead, late = await dead_worker_with_work(store)
    assert await store.release_gone_worker(run_id, dead) == len(late)
    assert await store.release_gone_worker(run_id, dead) == 0
