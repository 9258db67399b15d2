"""Waiting for an event with a time limit, without ever swallowing a cancellation.

``asyncio.wait_for(event.wait(), timeout)`` on Python 3.11 returns normally when the
task is cancelled in the same loop iteration as the event is set (the inner wait is done
first, so the cancellation is dropped: CPython gh-86296, fixed in 3.12). A side task of a
worker that loses its cancellation that way never ends, and the worker's shutdown waits on
it forever: a crawl that never exits. ``asyncio.timeout`` has no such race.

Libraries still use ``wait_for`` (psycopg_pool waits for a free connection with it), so a
side task can lose a cancellation inside one, however this module waits: the worker's
shutdown cancels its side tasks with :func:`cancel_and_wait`, which sends the cancellation
again to a task that is still running after a short while.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any


async def wait_set(event: asyncio.Event, seconds: float) -> bool:
    """Wait up to ``seconds`` for ``event``; whether it is set. A cancellation of
    the waiting task always propagates."""
    try:
        async with asyncio.timeout(seconds):
            await event.wait()
    except TimeoutError:
        return False
    return True


#: How long a cancelled task may take to end before it is cancelled again.
RECANCEL_SECONDS = 0.5


async def cancel_and_wait(tasks: Sequence[asyncio.Task[Any]]) -> None:
    """Cancel ``tasks`` and wait until every one has ended, cancelling again each that
    has not ended within ``RECANCEL_SECONDS`` (it lost its cancellation in a library's
    ``wait_for``, and went on)."""
    for task in tasks:
        task.cancel()
    pending = {task for task in tasks if not task.done()}
    while pending:
        _, pending = await asyncio.wait(pending, timeout=RECANCEL_SECONDS)
        for task in pending:
            task.cancel()
    for task in tasks:  # retrieved, so none is logged as "never retrieved"
        if not task.cancelled():
            task.exception()
