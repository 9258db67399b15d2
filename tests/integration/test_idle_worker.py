"""A worker with nothing to lease waits without loading the store, and leases at once from
hosts a refresh hands it (a real store of each backend).

At a run's tail a worker whose hosts ran dry, while the run's due work sat on hosts another
worker held, asked the store about 90 times a second; and a helper joining a crawl waited
half a second after its first look, while the crawl's first hosts were already free.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from typing import Any

from sitesync.engine.claims import ClaimKeeper
from sitesync.engine.ending import Ending
from sitesync.engine.feeder import LeaseFeeder
from sitesync.engine.options import WorkerOptions
from sitesync.fetch.politeness import HostLimiter
from sitesync.models import ClaimGrant, Lease, Run
from sitesync.store.base import Store
from tests.contract.test_coordination import HOSTS, claim, join, run_with_hosts


class Watched:
    """A real store that notes when the worker asks it what."""

    def __init__(self, store: Store) -> None:
        self._store = store
        self.looks: list[float] = []  # get_run: an idle worker's "done, or anything yet?"
        self.granted_at: float | None = None  # the first refresh that gave hosts
        self.leased_at: float | None = None  # the first acquire that gave leases
        self.looks_when_granted = self.looks_when_leased = -1  # len(looks) at each
        self.leased = asyncio.Event()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._store, name)

    async def get_run(self, run_id: int) -> Run:
        self.looks.append(time.monotonic())
        return await self._store.get_run(run_id)

    async def next_eligible_at(self, run_id: int) -> float | None:
        raise AssertionError("reads every pending task of the run: not for a waiting worker")

    async def claim_hosts(self, *args: Any, **kwargs: Any) -> ClaimGrant:
        grant = await self._store.claim_hosts(*args, **kwargs)
        if grant.hosts and self.granted_at is None:
            self.granted_at = time.monotonic()
            self.looks_when_granted = len(self.looks)
        return grant

    async def acquire(self, *args: Any, **kwargs: Any) -> list[Lease]:
        leases = await self._store.acquire(*args, **kwargs)
        if leases and self.leased_at is None:
            self.leased_at = time.monotonic()
            self.looks_when_leased = len(self.looks)
            self.leased.set()
        return leases


async def _nothing(host: str) -> None:
    return None


def feeder_of(store: Watched, run_id: int, worker: str) -> LeaseFeeder:
    limiter = HostLimiter(concurrency=2, delay=0)
    claims = ClaimKeeper(
        store,  # type: ignore[arg-type]
        run_id=run_id, worker_id=worker, claim_seconds=30, worker_ttl=30, safety=1,
        max_hosts=None, on_new_host=_nothing, busy_hosts=limiter.busy_hosts,
    )  # fmt: skip
    return LeaseFeeder(
        store,  # type: ignore[arg-type]
        run_id=run_id, worker_id=worker, options=WorkerOptions(), limiter=limiter,
        claims=claims, ending=Ending(),
    )  # fmt: skip


async def run_for(feeder: LeaseFeeder, seconds: float) -> asyncio.Task[None]:
    task = asyncio.create_task(feeder.feed())
    # Real time: the feeder's waits are asyncio timers, and the tests count its looks at the
    # store over a span; the bounds they assert are ranges of looks, not windows of time.
    await asyncio.sleep(seconds)
    return task


async def stop(task: asyncio.Task[None]) -> None:
    task.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await task


async def test_a_worker_whose_run_s_work_is_held_elsewhere_backs_off(store: Store) -> None:
    run_id = await run_with_hosts(store)
    await join(store, run_id, "w1")
    assert await claim(store, run_id, "w1") == set(HOSTS)  # alone: every host is its share
    await join(store, run_id, "w2")
    watched = Watched(store)

    task = await run_for(feeder_of(watched, run_id, "w2"), 1.2)
    await stop(task)

    # Due work, all of it on w1's hosts: w2 looks again after 0.05 s, then twice as long
    # each time up to poll_interval (0.5 s), instead of every 10 ms.
    assert watched.leased_at is None
    assert 2 <= len(watched.looks) <= 6, len(watched.looks)


async def test_a_worker_leases_at_once_from_hosts_a_refresh_hands_it(store: Store) -> None:
    run_id = await run_with_hosts(store)
    await join(store, run_id, "w1")
    await claim(store, run_id, "w1")
    await join(store, run_id, "w2")
    watched = Watched(store)

    task = await run_for(feeder_of(watched, run_id, "w2"), 1.0)  # backed off to 0.5 s
    await store.release_claims(run_id, worker_id="w1")
    released_at = time.monotonic()
    try:
        await asyncio.wait_for(watched.leased.wait(), 5)
    finally:
        await stop(task)

    assert watched.granted_at is not None and watched.leased_at is not None
    # Its next look finds the hosts free, and it leases from them in the same turn instead
    # of sleeping first: no look between the grant and the lease, at most one (the one
    # under way) between the release and the lease. Judged by turns, not by wall time.
    assert watched.looks_when_leased == watched.looks_when_granted
    assert len([t for t in watched.looks if released_at < t <= watched.leased_at]) <= 1
