"""A host a claim refresh lets go gets no request from its old holder (issue 13, item 3).

CI once saw two workers with requests to one host 70 ms apart: a worker's refresh let the
host go while a request of that worker was starting (its lease acquired, or its redirect hop
let through, after the refresh had named the worker's busy hosts). Every request now asks
the claim keeper last, once it counts as under way; these tests hold a refresh in the store
(a real store of each backend) and start requests meanwhile.
"""

from __future__ import annotations

import asyncio
from typing import Any

from sitesync.engine.claims import ClaimKeeper
from sitesync.fetch.politeness import HostLimiter
from sitesync.models import ClaimGrant
from sitesync.store.base import Store
from tests.contract.test_coordination import HOSTS, claim, join, run_with_hosts


class RefreshHeldInStore:
    """A real store whose ``claim_hosts`` waits for ``go`` once ``gated`` is set: the
    refresh is then in the store for as long as the test likes."""

    def __init__(self, store: Store) -> None:
        self._store = store
        self.gated = False
        self.entered = asyncio.Event()
        self.go = asyncio.Event()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._store, name)

    async def claim_hosts(self, *args: Any, **kwargs: Any) -> ClaimGrant:
        if self.gated:
            self.entered.set()
            await self.go.wait()
        return await self._store.claim_hosts(*args, **kwargs)


async def _nothing(host: str) -> None:
    return None


def keeper(store: RefreshHeldInStore, run_id: int, limiter: HostLimiter) -> ClaimKeeper:
    return ClaimKeeper(
        store,  # type: ignore[arg-type]
        run_id=run_id, worker_id="w1", claim_seconds=30, worker_ttl=30, safety=1,
        max_hosts=None, on_new_host=_nothing, busy_hosts=limiter.busy_hosts,
    )  # fmt: skip


async def request(limiter: HostLimiter, claims: ClaimKeeper, host: str) -> bool:
    """What a worker does to send ``host`` a request: its turn, then the claim's word."""
    async with limiter.slot(host):
        return await claims.confirm(host)


async def test_a_request_starting_while_a_refresh_lets_its_host_go_is_not_sent(
    store: Store,
) -> None:
    run_id = await run_with_hosts(store)
    await join(store, run_id, "w1")
    held = RefreshHeldInStore(store)
    limiter = HostLimiter(concurrency=2, delay=0)
    claims = keeper(held, run_id, limiter)
    await claims.refresh()
    assert set(claims.hosts) == set(HOSTS)

    # w2 joins: w1's next refresh lets two hosts go. It is held in the store, after it named
    # the hosts where w1 is busy (none), while a request starts on every host.
    await join(store, run_id, "w2")
    held.gated = True
    refresh = asyncio.create_task(claims.refresh())
    await held.entered.wait()
    requests = {host: asyncio.create_task(request(limiter, claims, host)) for host in HOSTS}
    # Turns of the loop for every request to reach its wait (no I/O is under way but the
    # refresh held above, so none can finish by any other path on a loaded machine).
    await asyncio.sleep(0.05)
    assert not any(r.done() for r in requests.values()), "a request started mid-refresh"
    held.go.set()
    await refresh
    sent = {host: await r for host, r in requests.items()}

    kept = set(claims.hosts)
    assert len(kept) == 2
    assert sent == {host: host in kept for host in HOSTS}
    # The hosts let go are not w1's to ask even before w2 has claimed them (the claims
    # table shows nobody holding them yet), and w2 then gets exactly those.
    let_go = set(HOSTS) - kept
    assert not any([await claims.may_request(host) for host in let_go])
    assert await claim(store, run_id, "w2") == let_go


async def test_a_request_under_way_keeps_its_host_through_a_refresh(store: Store) -> None:
    run_id = await run_with_hosts(store)
    await join(store, run_id, "w1")
    held = RefreshHeldInStore(store)
    limiter = HostLimiter(concurrency=0, delay=0)  # no pacing: under way is still counted
    claims = keeper(held, run_id, limiter)
    await claims.refresh()
    await join(store, run_id, "w2")
    async with limiter.slot(HOSTS[0]), limiter.slot(HOSTS[1]), limiter.slot(HOSTS[2]):
        assert sorted(limiter.busy_hosts()) == HOSTS[:3]
        await claims.refresh()  # over its share by two, but busy on three hosts
        assert set(claims.hosts) >= set(HOSTS[:3])
    assert limiter.busy_hosts() == []
    await claims.refresh()
    assert len(claims.hosts) == 2
