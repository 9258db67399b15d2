"""Per-host politeness: concurrency, spacing between requests, and back-off.

A request starts ``delay`` after the previous one started and after the previous one ended.

The spacing of a host is the larger of the configured delay and the host's robots.txt
Crawl-delay. A host that answered 429/503 with Retry-After is paused until then: nothing
starts on it before, and the worker defers that host's tasks instead of holding slots.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass, field


@dataclass(slots=True)
class _Host:
    semaphore: asyncio.Semaphore
    delay: float
    # Monotonic time the last request started. The next one is due ``delay`` later, computed
    # when it asks: a Crawl-delay learned from robots.txt (itself the previous request) then
    # spaces the very next request, not only the ones after it.
    last_start: float = float("-inf")
    # Monotonic time the last request ended: the delay also runs from there, so a host gets
    # ``delay`` of quiet after each answer however long the answer took (and the spacing
    # holds as the server sees it, not only as sent).
    last_end: float = float("-inf")
    paused_until: float = 0.0  # wall clock (comparable with the store's eligibility times)
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)

    def due(self) -> float:
        """Monotonic time the next request may start."""
        return max(self.last_start, self.last_end) + self.delay


class HostLimiter:
    """At most ``concurrency`` requests per host at once, each starting at least ``delay``
    after the previous one started and after the previous one ended.

    ``concurrency`` 0 means no per-host cap (the benchmark's setting).
    """

    def __init__(self, *, concurrency: int, delay: float, max_delay: float = 60.0) -> None:
        self.concurrency = concurrency
        self.delay = delay
        self.max_delay = max_delay
        self._hosts: dict[str, _Host] = {}

    def _host(self, host: str) -> _Host:
        state = self._hosts.get(host)
        if state is None:
            size = self.concurrency if self.concurrency > 0 else 1_000_000
            state = self._hosts[host] = _Host(asyncio.Semaphore(size), self.delay)
        return state

    def honour_crawl_delay(self, host: str, crawl_delay: float | None) -> None:
        """Space this host's requests by its robots.txt Crawl-delay (capped at max_delay)."""
        if crawl_delay is not None:
            self._host(host).delay = max(self.delay, min(crawl_delay, self.max_delay))

    def pause(self, host: str, until: float) -> None:
        """Start nothing on ``host`` before wall-clock time ``until`` (Retry-After)."""
        state = self._host(host)
        state.paused_until = max(state.paused_until, until)

    def next_start(self, host: str) -> float:
        """Monotonic time the host's next request may start (0: any time)."""
        state = self._hosts.get(host)
        return 0.0 if state is None else max(0.0, state.due())

    def paused_until(self, host: str) -> float:
        state = self._hosts.get(host)
        return 0.0 if state is None else state.paused_until

    def paused_hosts(self, *, longer_than: float = 0.0) -> list[str]:
        horizon = time.time() + longer_than
        return [name for name, state in self._hosts.items() if state.paused_until > horizon]

    @contextlib.asynccontextmanager
    async def slot(self, host: str) -> AsyncIterator[None]:
        if self.concurrency <= 0 and self.delay <= 0 and host not in self._hosts:
            yield
            return
        state = self._host(host)
        async with state.semaphore:
            # The lock makes waiters take their turns in order, each one delay apart.
            async with state.lock:
                pause = state.paused_until - time.time()
                if pause > 0:
                    await asyncio.sleep(pause)
                # Re-read after each sleep: a Crawl-delay may have lengthened the spacing
                # while this request waited.
                while True:
                    wait = state.due() - time.monotonic()
                    if wait <= 0:
                        break
                    await asyncio.sleep(wait)
                state.last_start = time.monotonic()
            try:
                yield
            finally:
                state.last_end = time.monotonic()
