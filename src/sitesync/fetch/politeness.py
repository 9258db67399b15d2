"""Per-host concurrency and spacing between request starts."""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass, field


@dataclass(slots=True)
class _HostState:
    semaphore: asyncio.Semaphore
    next_start: float = 0.0
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)


class HostLimiter:
    """At most ``concurrency`` requests per host at once, starts at least ``delay`` apart.

    ``concurrency`` 0 means no per-host cap (the benchmark's setting).
    """

    def __init__(self, *, concurrency: int, delay: float) -> None:
        self.concurrency = concurrency
        self.delay = delay
        self._hosts: dict[str, _HostState] = {}

    @contextlib.asynccontextmanager
    async def slot(self, host: str) -> AsyncIterator[None]:
        if self.concurrency <= 0 and self.delay <= 0:
            yield
            return
        state = self._hosts.get(host)
        if state is None:
            size = self.concurrency if self.concurrency > 0 else 1_000_000
            state = self._hosts[host] = _HostState(asyncio.Semaphore(size))
        async with state.semaphore:
            if self.delay > 0:
                # The lock makes waiters take their turns in order, each one delay apart.
                async with state.lock:
                    wait = state.next_start - time.monotonic()
                    if wait > 0:
                        await asyncio.sleep(wait)
                    state.next_start = time.monotonic() + self.delay
            yield
