"""Daemon threads for the plugins that block: the event loop (heartbeats, leases) goes on.

Not a ``ThreadPoolExecutor``: its threads are joined at interpreter exit, so one plugin call
that never returns would hold the process for ever after its page timed out. These threads
are daemons; a call abandoned on timeout simply finishes (or not) on its own, at the lowest
CPU priority (Linux's nice 19), so that a plugin that never returns cannot starve the event
loop of a core; its thread then ends, and a new one serves the next calls.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import queue
import threading
from collections.abc import Callable
from typing import Any


class _Abandon:
    """Whether the call it goes with was abandoned, and the thread to lower if so."""

    __slots__ = ("abandoned", "tid")

    def __init__(self) -> None:
        self.abandoned = False
        self.tid: int | None = None

    def lower(self) -> None:
        if self.tid is not None and hasattr(os, "setpriority"):
            with contextlib.suppress(OSError):
                os.setpriority(os.PRIO_PROCESS, self.tid, 19)


_Call = tuple[
    asyncio.AbstractEventLoop, "asyncio.Future[Any]", Callable[..., Any], tuple[Any, ...], _Abandon
]


class DaemonThreads:
    """Up to ``max_threads`` daemon threads, started as calls need them."""

    def __init__(self, max_threads: int, *, name: str, nice: int = 0) -> None:
        self._max = max_threads
        #: Added to each thread's niceness (Linux): work that yields the CPU to the loop.
        self._nice = nice
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
        abandon = _Abandon()
        self._calls.put((loop, future, function, args, abandon))
        try:
            return await future
        except asyncio.CancelledError:
            abandon.abandoned = True
            abandon.lower()
            raise

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
        me = threading.current_thread()
        if self._nice and hasattr(os, "setpriority"):
            with contextlib.suppress(OSError):  # on Linux, os.nice applies to this thread
                os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), self._nice)
        while (call := self._calls.get()) is not None:
            loop, future, function, args, abandon = call
            abandon.tid = threading.get_native_id()
            if abandon.abandoned:  # abandoned before it started
                abandon.lower()
            result: Any = None
            error: BaseException | None = None
            try:
                result = function(*args)
            except BaseException as exc:  # handed to the awaiting coroutine, whatever it is
                error = exc
            # A thread lowered for an abandoned call ends: its priority cannot be raised again.
            leaving = me if abandon.abandoned else None
            try:
                loop.call_soon_threadsafe(self._deliver, future, result, error, leaving)
            except RuntimeError:  # the loop is closed: nobody is waiting any more
                return
            if leaving is not None:
                return

    def _deliver(
        self,
        future: asyncio.Future[Any],
        result: Any,
        error: BaseException | None,
        leaving: threading.Thread | None = None,
    ) -> None:
        self._busy -= 1
        if leaving is not None and leaving in self._threads:
            self._threads.remove(leaving)
        if future.done():  # abandoned: the page timed out meanwhile
            return
        if error is not None:
            future.set_exception(error)
        else:
            future.set_result(result)
