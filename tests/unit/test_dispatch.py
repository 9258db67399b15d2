"""The dispatcher hands a fetch slot a lease of a host that may take a request now, the host
that may start soonest first; a host's turn is given back however the request ends."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Iterable, Mapping

import pytest

from sitesync.engine.dispatch import HostDispatcher
from sitesync.fetch.politeness import HostLimiter
from sitesync.models import Lease


async def settle() -> None:
    """Let every task that can run, run until it waits. A real timer, but not a race: these
    tests have no threads and no I/O, so every ready task runs before it fires, however
    loaded the machine (the loop only sleeps when nothing is ready)."""
    await asyncio.sleep(0.01)


def lease(task_id: int, host: str) -> Lease:
    return Lease(
        task_id=task_id, run_id=1, url=f"http://{host}/{task_id}", host=host, depth=1,
        attempt_count=0, token=1, expires_at=0.0,
    )  # fmt: skip


async def test_a_host_at_its_cap_waits_while_another_host_is_served() -> None:
    dispatcher = HostDispatcher(HostLimiter(concurrency=1, delay=0))
    for task_id, host in [(1, "a.test"), (2, "a.test"), (3, "b.test")]:
        dispatcher.put(lease(task_id, host))

    first = await dispatcher.get()
    second = await dispatcher.get()
    assert (first.task_id, second.task_id) == (1, 3)  # a.test is at its cap of 1

    waiting = asyncio.ensure_future(dispatcher.get())
    await settle()
    assert not waiting.done()  # only a.test has work, and it is busy
    dispatcher.done("a.test")
    assert (await asyncio.wait_for(waiting, 1)).task_id == 2


async def test_the_host_that_may_start_soonest_goes_first() -> None:
    limiter = HostLimiter(concurrency=2, delay=30)
    async with limiter.slot("a.test"):
        pass  # a.test's next request is due 30 s from now; b.test's at once
    dispatcher = HostDispatcher(limiter)
    dispatcher.put(lease(1, "a.test"))
    dispatcher.put(lease(2, "b.test"))
    assert (await dispatcher.get()).host == "b.test"
    assert (await dispatcher.get()).host == "a.test"  # still handed out: its slot waits


async def test_a_turn_is_given_back_when_its_request_fails() -> None:
    limiter = HostLimiter(concurrency=1, delay=0)
    with pytest.raises(RuntimeError):
        async with limiter.slot("a.test"):
            assert limiter.busy_hosts() == ["a.test"]
            raise RuntimeError("the fetch failed")
    assert limiter.busy_hosts() == []
    async with asyncio.timeout(1):  # the cap of 1 is free again
        async with limiter.slot("a.test"):
            pass


async def test_a_request_cancelled_while_waiting_for_its_turn_takes_none() -> None:
    limiter = HostLimiter(concurrency=1, delay=0)
    async with limiter.slot("a.test"):
        waiter = asyncio.ensure_future(limiter.slot("a.test").__aenter__())
        await settle()
        waiter.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await waiter
    assert limiter.busy_hosts() == []
    async with asyncio.timeout(1):
        async with limiter.slot("a.test"):
            assert limiter.busy_hosts() == ["a.test"]


class CountingLimiter(HostLimiter):
    """Counts the dispatcher's picks: each is a pass over the hosts with work."""

    picks = 0

    def soonest(self, hosts: Iterable[str], busy: Mapping[str, int]) -> str | None:
        self.picks += 1
        return super().soonest(hosts, busy)


async def test_a_lease_wakes_one_waiting_slot_not_all_of_them() -> None:
    limiter = CountingLimiter(concurrency=0, delay=0)
    dispatcher = HostDispatcher(limiter)
    slots = [asyncio.ensure_future(dispatcher.get()) for _ in range(50)]
    await settle()
    limiter.picks = 0

    for task_id in range(5):
        dispatcher.put(lease(task_id, "a.test"))
        await settle()

    handed = sorted(slot.result().task_id for slot in slots if slot.done())
    assert handed == [0, 1, 2, 3, 4]  # each lease to one slot, the other 45 still waiting
    assert limiter.picks <= 2 * 5, limiter.picks  # was 50 a lease: every slot looked
    for slot in slots:
        slot.cancel()
    await asyncio.gather(*slots, return_exceptions=True)


async def test_leases_put_at_once_reach_as_many_slots() -> None:
    dispatcher = HostDispatcher(HostLimiter(concurrency=0, delay=0))
    slots = [asyncio.ensure_future(dispatcher.get()) for _ in range(8)]
    await settle()
    for task_id in range(3):
        dispatcher.put(lease(task_id, f"h{task_id}.test"))
    await settle()
    assert sum(slot.done() for slot in slots) == 3
    for slot in slots:
        slot.cancel()
    await asyncio.gather(*slots, return_exceptions=True)


async def test_a_slot_cancelled_after_its_wake_passes_the_wake_on() -> None:
    dispatcher = HostDispatcher(HostLimiter(concurrency=0, delay=0))
    first = asyncio.ensure_future(dispatcher.get())
    second = asyncio.ensure_future(dispatcher.get())
    await settle()
    dispatcher.put(lease(1, "a.test"))  # wakes the first slot ...
    first.cancel()  # ... which is cancelled before it runs
    with contextlib.suppress(asyncio.CancelledError):
        await first
    assert (await asyncio.wait_for(second, 1)).task_id == 1  # the lease is not stranded
