"""Handing leases in hand to fetch slots, host by host.

A plain FIFO would hand a slot the next lease even when its host is already at its
politeness limit, and the slot would sit waiting while other hosts have free capacity
(leases arrive clustered by host, in admission order). Here a slot only gets a lease of a
host with a free request slot, the host that may start soonest first.
"""

from __future__ import annotations

import asyncio
from collections import Counter, deque

from sitesync.fetch.politeness import HostLimiter
from sitesync.models import Lease


class HostDispatcher:
    def __init__(self, limiter: HostLimiter) -> None:
        self._limiter = limiter
        self._waiting: dict[str, deque[Lease]] = {}
        self._busy: Counter[str] = Counter()
        self._changed = asyncio.Event()

    def put(self, lease: Lease) -> None:
        self._waiting.setdefault(lease.host, deque()).append(lease)
        self._changed.set()

    def clear(self) -> list[Lease]:
        """Take every lease not yet handed out."""
        dropped = [lease for queue in self._waiting.values() for lease in queue]
        self._waiting.clear()
        return dropped

    def __len__(self) -> int:
        return sum(len(queue) for queue in self._waiting.values())

    async def get(self) -> Lease:
        """The next lease a slot may fetch now; the host counts as busy until done()."""
        while True:
            lease = self._pick()
            if lease is not None:
                self._busy[lease.host] += 1
                return lease
            self._changed.clear()
            await self._changed.wait()

    def done(self, host: str) -> None:
        self._busy[host] -= 1
        if self._busy[host] <= 0:
            del self._busy[host]
        self._changed.set()

    def _pick(self) -> Lease | None:
        best = self._limiter.soonest(self._waiting, self._busy)
        if best is None:
            return None
        queue = self._waiting[best]
        lease = queue.popleft()
        if not queue:
            del self._waiting[best]
        return lease
