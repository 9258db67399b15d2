"""A page's CPU work, off the event loop and under a per-page budget (issue 29).

Decoding a body, parsing its HTML, extracting its links and the built-in plugins' reading of
the tree cost time that grows with what the site sent; some of it grows faster than the size
(lexbor parses deeply nested elements, or a tag with tens of thousands of attributes, in time
that grows with the square of the nesting). On the event loop that time would stop every
other host's requests, the heartbeats and the signal handlers. So a page larger than
:data:`INLINE_BYTES` has that work done on a daemon thread: lexbor and the decoders release
the GIL (or hold it only for bounded steps), so the loop goes on meanwhile, measured with
``benchmarks/looplag.py``. Smaller pages stay on the loop: a thread hop per page would cost
the ordinary crawl its throughput, and their work is bounded by their size.

The work of one page shares one budget (``parse_timeout_seconds``): the time its off-loop
steps took, together. Past it the page ends ``parse_timeout``. A thread cannot be stopped,
so an abandoned step finishes (or not) on its own daemon thread, which never holds the
process's exit and runs on at the lowest CPU priority, so that it cannot starve the loop of
a core; at most :data:`PAGE_THREADS` steps run at once (abandoned ones included), and a page
that waits for a thread spends its budget waiting.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import threading
import time
from collections.abc import Callable
from typing import Any, Generic, TypeVar

__all__ = ["INLINE_BYTES", "PAGE_THREADS", "Abandoned", "PageBudget", "PageWork", "ParseTimeout"]

#: Bodies up to this size are processed on the loop, where no budget can act: the worst
#: lexbor inputs of this size (nested ``<li>``\ s or ``<div>``\ s, a tag of 2,000 attributes)
#: take about 50 ms; at 64 KiB they would take 0.4 to 0.8 s. Larger pages take a thread hop,
#: which costs no throughput (the parse runs beside the loop, on the second core).
INLINE_BYTES = 16 * 1024
#: Off-loop steps running at once (each on a daemon thread of the worker's own).
PAGE_THREADS = 4

T = TypeVar("T")


class ParseTimeout(Exception):
    """The page's processing took longer than its budget (``parse_timeout_seconds``)."""

    def __init__(self, budget: float) -> None:
        super().__init__(
            f"processing the page took longer than {budget:g}s (parse_timeout_seconds)"
        )
        self.budget = budget


class Abandoned(Exception):
    """The worker is leaving: the page's off-loop work is not waited for."""


class PageWork:
    """The worker's threads for pages' CPU work, and each page's budget."""

    def __init__(
        self,
        *,
        budget: float,
        inline_bytes: int = INLINE_BYTES,
        threads: int = PAGE_THREADS,
        leaving: asyncio.Event | None = None,
    ) -> None:
        self.budget = budget
        self.inline_bytes = inline_bytes
        self._threads = threads
        self._slots: asyncio.Semaphore | None = None  # made on the loop, when first needed
        self._leaving = leaving

    def for_page(self, size: int) -> PageBudget:
        """The budget of one page of ``size`` bytes (its body)."""
        return PageBudget(self, inline=size <= self.inline_bytes)

    async def _off_loop(self, remaining: float, function: Callable[..., T], *args: Any) -> T:
        call = _Call(function, args)
        work = asyncio.ensure_future(self._on_thread(call))
        waits: set[asyncio.Future[Any]] = {work}
        leave = None
        if self._leaving is not None:
            leave = asyncio.ensure_future(self._leaving.wait())
            waits.add(leave)
        try:
            await asyncio.wait(waits, timeout=remaining, return_when=asyncio.FIRST_COMPLETED)
        finally:
            if leave is not None:
                leave.cancel()
        if work.done():
            result: T = work.result()
            return result
        work.cancel()
        call.abandon()
        if self._leaving is not None and self._leaving.is_set():
            raise Abandoned
        raise ParseTimeout(self.budget)

    async def _on_thread(self, call: _Call[T]) -> T:
        if self._slots is None:
            self._slots = asyncio.Semaphore(self._threads)
        await self._slots.acquire()  # its slot is given back when its thread ends
        return await call.start(self._slots.release)

    def close(self) -> None:
        """Nothing to close: each thread ends with its call (an abandoned one, with the
        call it was abandoned in), and none holds the process's exit."""


class _Call(Generic[T]):
    """One step on a daemon thread of its own. Abandoned, the thread runs on at the lowest
    CPU priority (Linux's nice 19): it uses only what the loop and the other pages leave."""

    __slots__ = ("_abandoned", "_args", "_function", "_tid")

    def __init__(self, function: Callable[..., T], args: tuple[Any, ...]) -> None:
        self._function = function
        self._args = args
        self._tid: int | None = None
        self._abandoned = False

    def start(self, done: Callable[[], None]) -> asyncio.Future[T]:
        loop = asyncio.get_running_loop()
        future: asyncio.Future[T] = loop.create_future()
        thread = threading.Thread(
            target=self._run, args=(loop, future, done), name="page", daemon=True
        )
        thread.start()
        return future

    def abandon(self) -> None:
        self._abandoned = True
        self._lower_priority()

    def _lower_priority(self) -> None:
        if self._tid is not None and hasattr(os, "setpriority"):
            with contextlib.suppress(OSError):
                os.setpriority(os.PRIO_PROCESS, self._tid, 19)

    def _run(
        self, loop: asyncio.AbstractEventLoop, future: asyncio.Future[T], done: Callable[[], None]
    ) -> None:
        self._tid = threading.get_native_id()
        if self._abandoned:  # abandoned before it started
            self._lower_priority()
        result: Any = None
        error: BaseException | None = None
        try:
            result = self._function(*self._args)
        except BaseException as exc:  # handed to the awaiting coroutine, whatever it is
            error = exc
        with contextlib.suppress(RuntimeError):  # the loop is closed: nobody waits any more
            loop.call_soon_threadsafe(_deliver, future, result, error, done)


def _deliver(
    future: asyncio.Future[Any], result: Any, error: BaseException | None, done: Callable[[], None]
) -> None:
    done()
    if future.done():  # abandoned: the page ended meanwhile
        return
    if error is not None:
        future.set_exception(error)
    else:
        future.set_result(result)


class PageBudget:
    """One page's share of :class:`PageWork`: its steps run off the loop (unless the page
    is small) and together within the budget."""

    __slots__ = ("_spent", "_work", "inline")

    def __init__(self, work: PageWork, *, inline: bool) -> None:
        self._work = work
        self._spent = 0.0
        self.inline = inline

    async def run(self, function: Callable[..., T], *args: Any) -> T:
        """``function(*args)``: on the loop for a small page, else on a page thread; raises
        :class:`ParseTimeout` once the page's steps have taken its whole budget."""
        if self.inline:
            return function(*args)
        remaining = self._work.budget - self._spent
        if remaining <= 0:
            raise ParseTimeout(self._work.budget)
        started = time.monotonic()
        try:
            return await self._work._off_loop(remaining, function, *args)
        finally:
            self._spent += time.monotonic() - started
