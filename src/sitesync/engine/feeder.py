"""Lease feeding: the leases a worker holds, acquired in batches, handed to fetch slots.

At most ``held_limit`` leases are held (leased, being fetched, or waiting to be committed)
at any time; that is all a SIGKILL can cost. Hosts the worker already holds enough of, or
that asked it to back off, are skipped, so that other hosts' tasks come instead.
"""

from __future__ import annotations

import asyncio
import logging
from collections import Counter
from collections.abc import Awaitable, Callable, Sequence

from sitesync.engine.beforefetch import DEFER_AFTER_SECONDS
from sitesync.engine.claims import ClaimKeeper
from sitesync.engine.dispatch import HostDispatcher
from sitesync.engine.ending import Ending, WorkerExit
from sitesync.engine.options import WorkerOptions
from sitesync.engine.waits import wait_set
from sitesync.fetch.politeness import HostLimiter
from sitesync.models import Lease, RunStatus
from sitesync.store.base import Store

#: A worker holding nothing looks for work again after this, then twice as long each
#: time up to ``poll_interval``.
FIRST_IDLE_WAIT = 0.05

log = logging.getLogger(__name__)


class LeaseFeeder:
    def __init__(
        self,
        store: Store,
        *,
        run_id: int,
        worker_id: str,
        options: WorkerOptions,
        limiter: HostLimiter,
        claims: ClaimKeeper,
        ending: Ending,
    ) -> None:
        self.store = store
        self.run_id = run_id
        self.worker_id = worker_id
        self.options = options
        self.limiter = limiter
        self.claims = claims
        self.ending = ending
        self.queue = HostDispatcher(limiter)  # leases in hand, not yet handed to a slot
        self._held: Counter[str] = Counter()
        self._held_total = 0
        self._room = asyncio.Event()
        self._first_idle_wait = min(FIRST_IDLE_WAIT, options.poll_interval)
        self._idle_wait = self._first_idle_wait  # doubles while there is nothing to lease
        #: Called when a host beyond the share has nothing of ours in flight any more (the
        #: worker has its claims refreshed then: see Upkeep.look_now).
        self.on_surplus_drained: Callable[[], None] = lambda: None
        #: Awaited with each batch of leases before they are handed out (the worker reads
        #: what the store kept of their URLs then: see Revalidation.prefetch).
        self.on_leased: Callable[[Sequence[Lease]], Awaitable[None]] | None = None

    async def feed(self) -> None:
        options = self.options
        min_batch = max(1, options.held_limit // 4)
        while True:
            room = options.held_limit - self._held_total
            if room >= min_batch or (room > 0 and self._held_total == 0):
                leases = await self.store.acquire(
                    self.run_id,
                    worker_id=self.worker_id,
                    limit=room,
                    lease_seconds=options.lease_seconds,
                    exclude_hosts=self._hosts_to_skip(),
                    claimed_only=True,
                    per_host=options.held_per_host if options.per_host_concurrency else None,
                )
                if leases and self.on_leased is not None:
                    await self.on_leased(leases)
                for lease in leases:
                    self._held[lease.host] += 1
                    self._held_total += 1
                    self.queue.put(lease)
                if leases:
                    self._idle_wait = self._first_idle_wait
                    continue
                # Nothing from the hosts we hold: maybe new hosts have work, or ours ran dry.
                held_before = set(self.claims.hosts)
                await self.claims.refresh()
                if not set(self.claims.hosts) <= held_before:
                    continue  # hosts new to this worker: lease from them at once
                if self._held_total == 0:
                    await self._wait_for_work()
                    continue
            self._room.clear()
            # Not asyncio.wait_for: it can swallow the shutdown's cancel (see runs.waits).
            await wait_set(self._room, options.poll_interval)

    def wake(self) -> None:
        """Look for work now (hosts or tasks may have become available)."""
        self._room.set()

    def let_go(self, host: str) -> None:
        """One lease of ``host`` is no longer held (reported or given back)."""
        self._held[host] -= 1
        self._held_total -= 1
        self._room.set()
        if self._held[host] <= 0 and host in self.claims.surplus:
            self.on_surplus_drained()  # the host can go to another worker now

    async def give_back_waiting(self) -> None:
        """Leases not yet handed to a slot go back to pending now."""
        leases = self.queue.clear()
        if not leases:
            return
        try:
            released = await self.store.release(self.run_id, leases)
        except Exception as exc:  # the shutdown's release_worker gives them back later
            log.warning("could not give back %d leased tasks yet: %s", len(leases), exc)
            return
        for lease in leases:
            self.let_go(lease.host)
        log.info("gave back %d leased tasks not yet started", released)

    def _hosts_to_skip(self) -> list[str]:
        """Hosts this worker holds enough of, or that asked us to back off."""
        full = [h for h, n in self._held.items() if n >= self.options.held_per_host]
        paused = self.limiter.paused_hosts(longer_than=DEFER_AFTER_SECONDS)
        return [*full, *paused, *self.claims.surplus]

    async def _wait_for_work(self) -> None:
        """Nothing eligible and nothing in hand: finish, or sleep until something may be."""
        run = await self.store.get_run(self.run_id)
        if run.status is not RunStatus.RUNNING:
            self.ending.run_left(run.status)
            return
        if run.counters.pending == 0 and run.counters.assigned == 0:
            if await self.store.complete_if_drained(self.run_id):
                self.ending.finish(WorkerExit.DRAINED)
            return
        # Pending tasks waiting for a retry time, tasks on hosts other workers hold, or
        # tasks leased by someone else (which may discover more, or whose leases may yet
        # expire): look again, sooner at first (a worker joining a run gets its share soon
        # after the others let go of their surplus), then less often (idle workers at a
        # run's tail once asked the store 90 times a second each). Not by the run's next
        # retry time: finding it reads every pending task of the run (180 ms at 200,000 on
        # SQLite), and a retry waits at most poll_interval longer without it.
        wait = self._idle_wait
        self._idle_wait = min(self._idle_wait * 2, self.options.poll_interval)
        await asyncio.sleep(wait)
