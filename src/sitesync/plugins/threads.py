"""Daemon threads for the plugins that block: the event loop (heartbeats, leases) goes on.

Not a ``ThreadPoolExecutor``: its threads are joined at interpreter exit, so one plugin call
that never returns would hold the process for ever after its page timed out. These threads
are daemons; a call abandoned on timeout simply finishes (or not) on its own.
"""

from __future__ import annotations

import asyncio
import queue
import threading
from collections.abc import Callable
from typing import Any

_Call = tuple[asyncio.AbstractEventLoop, "asyncio.Future[Any]", Callable[..., Any], tuple[Any, ...]]


class DaemonThreads:
    """Up to ``max_threads`` daemon threads, started as calls need them."""

    def __init__(self, max_threads: int, *, name: str) -> None:
        self._max = max_threads
        self._name = name
        self._calls: queue.SimpleQueue[_Call | None] = queue.SimpleQueue()
        self._threads: list[threading.Thread] = []
        self._busy = 0  # calls handed to a thread and not yet returned (touched on the loop only)

    async def run(self, function: Callable[..., Any], *args: Any) -> Any:
        """``function(*args)`` on a daemon thread; cancelling the await abandons the call."""
        loop = asyncio.get_running_loop()
        future: asyncio.Future[Any] = loop.create_future()
        self._busy += 1
        if self._busy > len(self._threads) and len(self._threads) < self._max:
            self._start()
        self._calls.put((loop, future, function, args))
        return await future

    def close(self) -> None:
        """Let idle threads end; a thread still inside a call ends when the call does."""
        for _ in self._threads:
            self._calls.put(None)
        self._threads.clear()

    def _start(self) -> None:
        name = f"{self._name}-{len(self._threads) + 1}"
        thread = threading.Thread(target=self._serve, name=name, daemon=True)
        self._threads.append(thread)
        thread.start()

    def _serve(self) -> None:
        while (call := self._calls.get()) is not None:
            loop, future, function, args = call
            result: Any = None
            error: BaseException | None = None
            try:
                result = function(*args)
            except BaseException as exc:  # handed to the awaiting coroutine, whatever it is
                error = exc
            try:
                loop.call_soon_threadsafe(self._deliver, future, result, error)
            except RuntimeError:  # the loop is closed: nobody is waiting any more
                return

    def _deliver(
        self, future: asyncio.Future[Any], result: Any, error: BaseException | None
    ) -> None:
        self._busy -= 1
        if future.done():  # abandoned: the page timed out meanwhile
            return
        if error is not None:
            future.set_exception(error)
        else:
            future.set_result(result)
