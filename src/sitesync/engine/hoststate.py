"""What a worker knows of its hosts: their politeness limiter (pauses, adaptive paces),
robots.txt and dead hosts; and what it learns of them, kept in the store so that it holds
for the fleet: whoever holds a host next starts from it.
"""

from __future__ import annotations

import time

from sitesync.engine.deadhosts import DeadHosts
from sitesync.engine.options import WorkerOptions
from sitesync.fetch.adaptive import LearnedPace
from sitesync.fetch.base import Fetcher
from sitesync.fetch.politeness import HostLimiter
from sitesync.fetch.robots import RobotsCache
from sitesync.store.base import Store
from sitesync.urls import url_host


class HostStateSync:
    def __init__(
        self,
        store: Store,
        *,
        run_id: int,
        robots_fetcher: Fetcher,
        user_agent: str,
        options: WorkerOptions,
    ) -> None:
        self.store = store
        self.run_id = run_id
        self.limiter = HostLimiter(
            concurrency=options.per_host_concurrency,
            delay=options.delay,
            max_delay=options.max_crawl_delay,
            adaptive=options.adaptive,
            clock=store.now,  # pauses and paces are shared through the store: its clock
        )
        self.robots = (
            RobotsCache(
                robots_fetcher,
                user_agent=user_agent,
                error_ttl=options.robots_recheck_seconds,
                persist=self._persist_robots,
                clock=store.now,
            )
            if options.respect_robots
            else None
        )
        self.dead_hosts = DeadHosts(
            store,
            limiter=self.limiter,
            robots=self.robots,
            attempts=options.dead_host_attempts,
            recheck=options.dead_host_recheck,
        )

    async def load(self, host: str) -> None:
        """A host just claimed: honour what earlier holders learned about it."""
        await self.dead_hosts.load(self.run_id, host)
        state = await self.store.get_host_state(host)
        if state is None:
            return
        if state.paused_until > self.store.now():
            self.limiter.pause(host, state.paused_until)
        if state.pace_delay is not None and state.pace_since is not None and state.pace_reason:
            self.limiter.restore(
                host,
                LearnedPace(
                    delay=state.pace_delay,
                    concurrency=state.pace_concurrency or 1,
                    reason=state.pace_reason,
                    since=state.pace_since,
                ),
            )
        if (
            self.robots is not None
            and state.robots_origin
            and state.robots_status is not None
            and state.robots_expires_at
        ):
            self.robots.preload(
                state.robots_origin,
                status=state.robots_status,
                body=state.robots_body,
                expires_at=state.robots_expires_at,
            )

    async def save_next_starts(self, hosts: list[str]) -> None:
        """Store when each host may next be asked, before its claim may pass to another
        worker: the delay then holds across the hand-over, not only within one worker."""
        now, mono = self.store.now(), time.monotonic()
        for host in hosts:
            wait = self.limiter.next_start(host) - mono
            if wait > 0:
                await self.store.save_host_pause(host, until=now + wait)
        await self.save_paces(hosts)  # and the adaptive pace: the next holder keeps it

    async def save_pauses(self) -> None:
        """Every pause in force, so that one learned just before a stop outlives this
        worker: the next holder of the host reads it from the store."""
        for host in self.limiter.paused_hosts():
            await self.store.save_host_pause(host, until=self.limiter.paused_until(host))

    async def save_paces(self, hosts: list[str]) -> None:
        """Store each host's adaptive pace as it is now, before the host may pass to another
        worker: the next holder continues from it (recovery included)."""
        for host in hosts:
            learned = self.limiter.learned(host)
            if learned is not None:
                await self.keep_pace(host, learned)

    async def keep_pace(self, host: str, learned: LearnedPace) -> None:
        """Keep a host's changed adaptive pace in the store, where every worker of the fleet
        (the host's next holder) reads it (the worker's gate's ``keep_pace``)."""
        await self.store.save_host_pace(
            host,
            delay=learned.delay,
            concurrency=learned.concurrency,
            reason=learned.reason,
            since=learned.since,
        )

    async def _persist_robots(
        self, origin: str, status: int, body: str | None, expires_at: float
    ) -> None:
        host = url_host(origin + "/")
        await self.store.save_host_robots(
            host, origin=origin, status=status, body=body, expires_at=expires_at
        )
