"""A worker's side of domain claims: which hosts it may fetch from, and until when.

The store decides who holds what (fair shares, expiry, take-over). The worker keeps the
expiry times it was given and starts a fetch on a host only while its claim has at least
``safety`` seconds left (the longest a fetch can take), so a fetch never outlives the
claim it started under, even if renewals then fail.

A refresh may let hosts go. It names the hosts where a request of this worker is under way
(or waiting for its turn) and keeps those, but a request can start while the refresh is in
the store, after that list was taken: a lease acquired in the meantime, a redirect hop, a
robots.txt request. So every request, once it is counted as under way on its host, asks
:meth:`ClaimKeeper.confirm` last: that waits out a refresh in progress and then answers
from the claims it left. A refresh that starts later sees the request in the list.
"""

from __future__ import annotations

import asyncio
import logging
import math
from collections.abc import Awaitable, Callable

from sitesync.models import ClaimGrant
from sitesync.store.base import Store

log = logging.getLogger(__name__)

#: How long the list of hosts other workers hold is reused before it is read again.
OTHERS_TTL_SECONDS = 1.0

#: How long after it starts a worker of a crawl with several processes counts its sibling
#: processes as live even before they registered (they are forked with it, and join the
#: run a moment after it: without this, the first to claim took every host and handed half
#: of them over only once it saw the others, a second or more into the crawl). Long enough
#: for a sibling to start on a loaded machine; short, because a sibling that died at its
#: start keeps this one from taking the hosts it would have had until then.
SIBLINGS_JOINING_SECONDS = 10.0

OnNewHost = Callable[[str], Awaitable[None]]
#: Called with the hosts held before they may be given up (refresh, release).
BeforeLettingGo = Callable[[list[str]], Awaitable[None]]


class ClaimKeeper:
    def __init__(
        self,
        store: Store,
        *,
        run_id: int,
        worker_id: str,
        claim_seconds: float,
        worker_ttl: float,
        safety: float,
        max_hosts: int | None,
        on_new_host: OnNewHost,
        before_letting_go: BeforeLettingGo | None = None,
        busy_hosts: Callable[[], list[str]] = list,
        siblings: int = 1,
    ) -> None:
        self.store = store
        self.run_id = run_id
        self.worker_id = worker_id
        self.claim_seconds = claim_seconds
        self.worker_ttl = worker_ttl
        self.safety = safety
        self.max_hosts = max_hosts
        self._on_new_host = on_new_host
        self._before_letting_go = before_letting_go
        self._busy_hosts = busy_hosts  # hosts with a request of ours under way: kept
        #: Workers of this crawl, this one included, started together (its processes).
        self.siblings = siblings
        self._siblings_until: float | None = None  # set at the first refresh
        self._expires: dict[str, float] = {}
        self._surplus: set[str] = set()
        self._others: set[str] = set()
        self._others_read_at = float("-inf")
        #: Hosts this worker let go, and when: another worker may be about to claim one,
        #: and until it does, the claims table does not say so.
        self._let_go: dict[str, float] = {}
        self._changing = asyncio.Lock()  # held while a refresh or release is in the store

    @property
    def hosts(self) -> list[str]:
        return list(self._expires)

    @property
    def surplus(self) -> set[str]:
        """Claimed hosts beyond the fair share: take no new work there, let them drain."""
        return self._surplus

    def holds(self, host: str) -> bool:
        """May a fetch on ``host`` start now?"""
        return self._expires.get(host, 0.0) - self.store.now() > self.safety

    async def may_request(self, host: str) -> bool:
        """May this worker send ``host`` a request now (a redirect hop, a sitemap, an asset)?

        Yes if it holds the host's claim with time to spare; no if another worker holds it.
        A host nobody holds (outside the run's work: a CDN, a redirect target not yet
        queued) has no claim to take, and only this worker's limiter guards it.
        """
        if host in self._expires:
            return self.holds(host)
        now = self.store.now()
        if now - self._let_go.get(host, -math.inf) < self.claim_seconds:
            return False  # ours until a moment ago: its next holder may be taking it now
        if now - self._others_read_at > OTHERS_TTL_SECONDS:
            claims = await self.store.list_claims(self.run_id)
            self._others = {
                c.host for c in claims if c.worker_id != self.worker_id and c.expires_at > now
            }
            self._others_read_at = now
        return host not in self._others

    async def confirm(self, host: str) -> bool:
        """May a request to ``host``, already counted as under way, start now?

        Called last before the request is sent. A refresh in the store at this moment may
        have taken its list of busy hosts before this request was counted, and may be
        letting ``host`` go: wait for it to end, then answer from what it left.
        """
        if self._changing.locked():
            async with self._changing:
                pass
        return await self.may_request(host)

    async def refresh(self) -> ClaimGrant:
        """Renew, rebalance and extend this worker's claims (one store transaction)."""
        async with self._changing:
            return await self._refresh()

    async def _refresh(self) -> ClaimGrant:
        if self._before_letting_go is not None and self._expires:
            await self._before_letting_go(list(self._expires))
        grant = await self.store.claim_hosts(
            self.run_id,
            worker_id=self.worker_id,
            claim_seconds=self.claim_seconds,
            worker_ttl=self.worker_ttl,
            max_hosts=self.max_hosts,
            busy_hosts=self._busy_hosts(),
            min_workers=self._siblings_joining(),
        )
        before = set(self._expires)
        self._expires = {claim.host: claim.expires_at for claim in grant.claims}
        self._surplus = set(grant.hosts[grant.share :])
        for host in self._expires.keys() - before:
            await self._on_new_host(host)
        lost = before - self._expires.keys()
        now = self.store.now()
        self._let_go = {h: at for h, at in self._let_go.items() if now - at < self.claim_seconds}
        self._let_go.update(dict.fromkeys(lost, now))
        for host in self._expires:
            self._let_go.pop(host, None)
        if lost:
            log.debug("claims given up or lost: %s", ", ".join(sorted(lost)))
        return grant

    def _siblings_joining(self) -> int:
        """Workers to split the hosts among at the least: the crawl's processes at its
        start, whether or not they registered yet."""
        now = self.store.now()
        if self._siblings_until is None:
            self._siblings_until = now + SIBLINGS_JOINING_SECONDS
        return self.siblings if now < self._siblings_until else 1

    async def release_all(self) -> None:
        async with self._changing:
            if self._before_letting_go is not None and self._expires:
                await self._before_letting_go(list(self._expires))
            self._let_go.update(dict.fromkeys(self._expires, self.store.now()))
            self._expires = {}
            await self.store.release_claims(self.run_id, worker_id=self.worker_id)
