"""Handing leases in hand to fetch slots, host by host.

A plain FIFO would hand a slot the next lease even when its host is already at its
politeness limit, and the slot would sit waiting while other hosts have free capacity
(leases arrive clustered by host, in admission order). Here a slot only gets a lease of a
host with a free request slot, the host that may start soonest first.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections import Counter, deque

from sitesync.fetch.politeness import HostLimiter
from sitesync.models import Lease


class HostDispatcher:
    def __init__(self, limiter: HostLimiter) -> None:
        self._limiter = limiter
        self._waiting: dict[str, deque[Lease]] = {}
        self._busy: Counter[str] = Counter()
        # Slots waiting for a lease, woken one at a time: each put or done lets at most
        # one more lease go, and a slot that takes one wakes the next (see get). A shared
        # event woke every waiting slot to find one lease, a third of them at each fetch.
        self._sleepers: deque[asyncio.Future[None]] = deque()

    def put(self, lease: Lease) -> None:
        self._waiting.setdefault(lease.host, deque()).append(lease)
        self._wake_one()

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
                if self._waiting:
                    self._wake_one()  # there may be another lease a slot can take now
                return lease
            waker = asyncio.get_running_loop().create_future()
            self._sleepers.append(waker)
            try:
                await waker
            except asyncio.CancelledError:
                if waker.cancelled():
                    with contextlib.suppress(ValueError):  # a wake may have passed it over
                        self._sleepers.remove(waker)
                else:
                    self._wake_one()  # woken, then cancelled: the wake is another slot's
                raise

    def done(self, host: str) -> None:
        self._busy[host] -= 1
        if self._busy[host] <= 0:
            del self._busy[host]
        self._wake_one()

    def _wake_one(self) -> None:
        while self._sleepers:
            waker = self._sleepers.popleft()
            if not waker.done():
                waker.set_result(None)
                return

    def _pick(self) -> Lease | None:
        best = self._limiter.soonest(self._waiting, self._busy)
        if best is None:
            return None
        queue = self._waiting[best]
        lease = queue.popleft()
        if not queue:
            del self._waiting[best]
        return lease
