"""A worker that joins a busy run gets its share of hosts soon, not at the holders' next
claim refresh (issue 13: four workers started together spent their first 3.4 s waiting
for the first one to let hosts go).

The holder's upkeep runs for real against a real store of each backend; the refresh
interval is set far beyond the test's timeout, so only the membership check can make the
holder let go in time.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any

import pytest

from sitesync.engine import upkeep as upkeep_module
from sitesync.engine.claims import ClaimKeeper
from sitesync.engine.ending import Ending
from sitesync.engine.feeder import LeaseFeeder
from sitesync.engine.liveness import this_process
from sitesync.engine.options import WorkerOptions
from sitesync.engine.upkeep import Upkeep
from sitesync.fetch.politeness import HostLimiter
from sitesync.models import ClaimGrant, TaskReport
from sitesync.store.base import Store
from tests.contract.test_coordination import HOSTS, claim, join, run_with_hosts

CHECK = 0.02  # seconds between the holder's looks at who works on the run


class CountedRefreshes:
    """A real store that counts the claim refreshes asked of it."""

    def __init__(self, store: Store) -> None:
        self._store = store
        self.refreshes = 0

    def __getattr__(self, name: str) -> Any:
        return getattr(self._store, name)

    async def claim_hosts(self, *args: Any, **kwargs: Any) -> ClaimGrant:
        self.refreshes += 1
        return await self._store.claim_hosts(*args, **kwargs)


async def _nothing(host: str) -> None:
    return None


@pytest.fixture(autouse=True)
def _fast_membership_slow_refresh(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(upkeep_module, "CLAIM_REFRESH_SECONDS", 3600.0)
    monkeypatch.setattr(upkeep_module, "MEMBERSHIP_CHECK_SECONDS", CHECK)


@dataclass
class Holder:
    """Worker w1, holding every host of a run, its claims rebalanced by its real upkeep."""

    run_id: int
    claims: ClaimKeeper
    store: CountedRefreshes
    upkeep: Upkeep


@asynccontextmanager
async def holding_every_host(store: Store, busy: list[str]) -> AsyncIterator[Holder]:
    """``busy``: hosts with a request of w1 under way, kept through a refresh."""
    run_id = await run_with_hosts(store)
    await join(store, run_id, "w1")
    counted = CountedRefreshes(store)
    claims = ClaimKeeper(
        counted,  # type: ignore[arg-type]
        run_id=run_id, worker_id="w1", claim_seconds=30, worker_ttl=30, safety=1,
        max_hosts=None, on_new_host=_nothing, busy_hosts=lambda: list(busy),
    )  # fmt: skip
    upkeep = Upkeep(
        counted,  # type: ignore[arg-type]
        run_id=run_id, worker_id="w1", identity=this_process(),
        options=WorkerOptions(heartbeat_seconds=3600), claims=claims,
        on_hosts_changed=lambda: None,
    )  # fmt: skip
    await claims.refresh()
    assert set(claims.hosts) == set(HOSTS)
    task = asyncio.create_task(upkeep.rebalance_claims())
    try:
        yield Holder(run_id, claims, counted, upkeep)
    finally:
        task.cancel()


async def until(condition: Any) -> None:
    """Wait for ``condition`` (5 s at most: the refresh interval alone would take an hour)."""
    async with asyncio.timeout(5):
        while not condition():  # noqa: ASYNC110 - the keeper's state has no event to wait on
            await asyncio.sleep(CHECK / 2)


async def test_a_holder_lets_hosts_go_soon_after_a_worker_joins(store: Store) -> None:
    async with holding_every_host(store, busy=[]) as w1:
        await join(store, w1.run_id, "w2")
        await until(lambda: len(w1.claims.hosts) == 2)
        assert await claim(store, w1.run_id, "w2") == set(HOSTS) - set(w1.claims.hosts)


async def test_a_holder_over_its_share_looks_again_until_its_busy_hosts_drained(
    store: Store,
) -> None:
    busy = list(HOSTS[:3])
    async with holding_every_host(store, busy) as w1:
        await join(store, w1.run_id, "w2")
        await until(lambda: w1.claims.surplus != set())  # saw the joiner, kept 3 of 4
        assert len(w1.claims.hosts) == 3
        busy.clear()  # the requests ended: nobody new joined, but the surplus goes now
        await until(lambda: len(w1.claims.hosts) == 2)


async def test_a_holder_hands_hosts_over_as_they_run_dry_though_nobody_joined(
    store: Store,
) -> None:
    """Hosts run dry at different times: once w2's are done, w1 holds both hosts with work
    left, one over its share, and w2 idles until w1 looks again. It looks at its next
    membership check, not at the claim refresh an hour away (issue 33: a crawl's second
    process sat idle for up to two seconds at the end of every crawl)."""
    async with holding_every_host(store, busy=[]) as w1:
        await join(store, w1.run_id, "w2")
        await until(lambda: len(w1.claims.hosts) == 2)
        theirs = await claim(store, w1.run_id, "w2")
        assert len(theirs) == 2
        leases = await store.acquire(
            w1.run_id, worker_id="w2", limit=100, lease_seconds=30, claimed_only=True
        )
        assert {lease.host for lease in leases} == theirs
        await store.report(
            w1.run_id, [TaskReport(lease=lease, ok=True, http_status=200) for lease in leases]
        )
        # w2 finds nothing more to lease: its claims on the finished hosts go.
        assert await claim(store, w1.run_id, "w2") == set()
        await until(lambda: len(w1.claims.hosts) == 1)  # share: 2 hosts with work, 2 workers
        assert len(await claim(store, w1.run_id, "w2")) == 1


async def test_a_surplus_host_drained_is_let_go_at_once(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The feeder tells the upkeep when the last lease of a host beyond the share is let
    go: the host goes then, not at the next membership check (an hour away here)."""
    monkeypatch.setattr(upkeep_module, "MEMBERSHIP_CHECK_SECONDS", 3600.0)
    async with holding_every_host(store, busy=[]) as w1:
        await join(store, w1.run_id, "w2")
        feeder = LeaseFeeder(
            w1.store,  # type: ignore[arg-type]
            run_id=w1.run_id, worker_id="w1", options=WorkerOptions(),
            limiter=HostLimiter(concurrency=1, delay=0), claims=w1.claims, ending=Ending(),
        )  # fmt: skip
        feeder.on_surplus_drained = w1.upkeep.look_now
        leases = await store.acquire(
            w1.run_id, worker_id="w1", limit=100, lease_seconds=30, claimed_only=True
        )
        for lease in leases:
            feeder._held[lease.host] += 1  # as the feeder's acquire counts them
        await w1.claims.refresh()  # w1 sees w2: two hosts over its share, all in flight
        assert len(w1.claims.surplus) == 2 and len(w1.claims.hosts) == 4
        for lease in leases:
            if lease.host in w1.claims.surplus:
                await store.release(w1.run_id, [lease])
                feeder.let_go(lease.host)
        await until(lambda: len(w1.claims.hosts) == 2)
        assert len(await claim(store, w1.run_id, "w2")) == 2


async def test_nobody_joining_costs_no_refresh(store: Store) -> None:
    async with holding_every_host(store, busy=[]) as w1:
        await until(lambda: w1.store.refreshes == 2)  # the first look: members not known yet
        await asyncio.sleep(20 * CHECK)
        assert w1.store.refreshes == 2
