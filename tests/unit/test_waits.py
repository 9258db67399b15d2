"""wait_set: a timed wait for an event that never swallows a cancellation."""

from __future__ import annotations

import asyncio
import contextlib

from sitesync.engine.waits import cancel_and_wait, wait_set


async def _loop_waiting(event: asyncio.Event) -> None:
    while True:  # like a worker's side task: wait, act, wait again
        await wait_set(event, 10.0)
        event.clear()


def test_a_cancel_in_the_same_turn_as_the_event_ends_the_waiting_task() -> None:
    # The shape that hung a worker at exit: the event is set and the task cancelled
    # in one loop iteration (asyncio.wait_for on 3.11 drops the cancel then).
    async def go() -> bool:
        event = asyncio.Event()
        task = asyncio.create_task(_loop_waiting(event))
        await asyncio.sleep(0.01)  # the task reaches its wait (no threads, no I/O: no race)
        event.set()
        task.cancel()
        done, _ = await asyncio.wait([task], timeout=5.0)
        if not done:
            task.cancel()
        return bool(done) and task.cancelled()

    assert asyncio.run(go())


def test_it_says_whether_the_event_was_set_or_the_time_ran_out() -> None:
    async def go() -> tuple[bool, bool]:
        event = asyncio.Event()
        timed_out = await wait_set(event, 0.01)
        event.set()
        return timed_out, await wait_set(event, 5.0)

    assert asyncio.run(go()) == (False, True)


async def _swallows_one_cancel(ended: list[str]) -> None:
    """What a side task does when a cancel is lost in a library's ``wait_for`` (3.11): it
    goes on, to its next wait."""
    # swallowed, as wait_for does when its inner wait finishes in the same turn
    with contextlib.suppress(asyncio.CancelledError):
        await asyncio.sleep(3600)
    try:
        await asyncio.sleep(3600)
    finally:
        ended.append("ended")


async def test_a_task_that_lost_its_cancellation_is_cancelled_again() -> None:
    ended: list[str] = []
    task = asyncio.create_task(_swallows_one_cancel(ended))
    await asyncio.sleep(0.01)  # it reaches its first wait (no threads, no I/O: no race)
    async with asyncio.timeout(10):
        await cancel_and_wait([task])
    assert task.cancelled() and ended == ["ended"]
