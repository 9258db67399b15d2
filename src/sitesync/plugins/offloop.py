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
so an abandoned step finishes (or not) on its daemon thread (sitesync.plugins.threads), which
never holds the process's exit and runs on at the lowest CPU priority, so that it cannot
starve the loop of a core, then ends; at most :data:`PAGE_THREADS` steps run at once
(abandoned ones included), and a page that waits for a thread spends its budget waiting.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import Any, TypeVar

from sitesync.plugins.threads import DaemonThreads

__all__ = [
    "INLINE_BYTES", "PAGE_NICE", "PAGE_THREADS", "Abandoned", "PageBudget", "PageWork",
    "ParseTimeout",
]  # fmt: skip

#: Bodies up to this size are processed on the loop, where no budget can act: the worst
#: lexbor inputs of this size (nested ``<li>``\ s or ``<div>``\ s, a tag of 2,000 attributes)
#: take about 50 ms; at 64 KiB they would take 0.4 to 0.8 s. Larger pages take a thread hop,
#: which costs no throughput (the parse runs beside the loop, on the second core).
INLINE_BYTES = 16 * 1024
#: Off-loop steps running at once (each on a daemon thread of the worker's own).
PAGE_THREADS = 4
#: The niceness of those threads (Linux): 5 gives the loop three times their share of a core.
PAGE_NICE = 5

T = TypeVar("T")


class ParseTimeout(Exception):
    """The page's processing took longer than its budget (``parse_timeout_seconds``)."""

    def __init__(self, budget: float) -> None:
        super().__init__(
            f"processing the page took longer than {budget:g}s (parse_timeout_seconds)"
        )
        self.budget = budget


#: How long a leaving worker still waits for a page's work under way (seconds).
LEAVING_GRACE = 1.0


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
        # Below the loop's priority: under a busy CPU the loop (heartbeats, other hosts'
        # requests, signals) runs first, and the pages' work takes what is left.
        self._threads = DaemonThreads(threads, name="page", nice=PAGE_NICE)
        self._leaving = leaving
        self._leave: asyncio.Future[Any] | None = None

    def for_page(self, size: int) -> PageBudget:
        """The budget of one page of ``size`` bytes (its body)."""
        return PageBudget(self, inline=size <= self.inline_bytes)

    async def _off_loop(self, remaining: float, function: Callable[..., T], *args: Any) -> T:
        started = time.monotonic()
        work = asyncio.ensure_future(self._threads.run(function, *args))
        waits: set[asyncio.Future[Any]] = {work}
        if self._leaving is not None:
            waits.add(self._leave_waiter(self._leaving))
        await asyncio.wait(waits, timeout=remaining, return_when=asyncio.FIRST_COMPLETED)
        if not work.done() and self._leaving is not None and self._leaving.is_set():
            # A page's ordinary work ends in milliseconds: a worker on its way out waits a
            # moment for it, so a page it fetched is committed, not fetched again after the
            # resume. Only work that outlasts the grace (a pathological page) is abandoned.
            left = remaining - (time.monotonic() - started)
            await asyncio.wait({work}, timeout=max(0.0, min(LEAVING_GRACE, left)))
        if work.done():
            result: T = work.result()
            return result
        work.cancel()  # abandoned: its thread runs on at nice 19, then ends
        if self._leaving is not None and self._leaving.is_set():
            raise Abandoned
        raise ParseTimeout(self.budget)

    def _leave_waiter(self, leaving: asyncio.Event) -> asyncio.Future[Any]:
        """One task for the worker's life that ends when it leaves, which every page's wait
        shares: a task of its own per page cost as much as the thread hop itself."""
        if self._leave is None or (self._leave.done() and not leaving.is_set()):
            self._leave = asyncio.ensure_future(leaving.wait())
        return self._leave

    def close(self) -> None:
        """Let idle threads end; one still inside a step ends when its step does."""
        if self._leave is not None:
            self._leave.cancel()
        self._threads.close()


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
