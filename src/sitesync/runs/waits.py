"""Waiting for an event with a time limit, without ever swallowing a cancellation.

``asyncio.wait_for(event.wait(), timeout)`` on Python 3.11 returns normally when the
task is cancelled in the same loop iteration as the event is set (the inner wait is done
first, so the cancellation is dropped: CPython gh-86296, fixed in 3.12). A side task of a
worker that loses its cancellation that way never ends, and the worker's shutdown waits on
it forever: a crawl that never exits. ``asyncio.timeout`` has no such race.
"""

from __future__ import annotations

import asyncio


async def wait_set(event: asyncio.Event, seconds: float) -> bool:
    """Wait up to ``seconds`` for ``event``; whether it is set. A cancellation of
    the waiting task always propagates."""
    try:
        async with asyncio.timeout(seconds):
            await event.wait()
    except TimeoutError:
        return False
    return True
