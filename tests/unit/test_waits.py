"""wait_set: a timed wait for an event that never swallows a cancellation."""

from __future__ import annotations

import asyncio

from sitesync.runs.waits import wait_set


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
        await asyncio.sleep(0.01)
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
