"""A worker's side of domain claims: which hosts it may fetch from, and until when.

The store decides who holds what (fair shares, expiry, take-over). The worker keeps the
expiry times it was given and starts a fetch on a host only while its claim has at least
``safety`` seconds left (the longest a fetch can take), so a fetch never outlives the
claim it started under, even if renewals then fail.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable

from sitesync.models import ClaimGrant
from sitesync.store.base import Store

log = logging.getLogger(__name__)

#: How long the list of hosts other workers hold is reused before it is read again.
OTHERS_TTL_SECONDS = 1.0

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
        self._expires: dict[str, float] = {}
        self._surplus: set[str] = set()
        self._others: set[str] = set()
        self._others_read_at = float("-inf")

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
        if now - self._others_read_at > OTHERS_TTL_SECONDS:
            claims = await self.store.list_claims(self.run_id)
            self._others = {
                c.host for c in claims if c.worker_id != self.worker_id and c.expires_at > now
            }
            self._others_read_at = now
        return host not in self._others

    async def refresh(self) -> ClaimGrant:
        """Renew, rebalance and extend this worker's claims (one store transaction)."""
        if self._before_letting_go is not None and self._expires:
            await self._before_letting_go(list(self._expires))
        grant = await self.store.claim_hosts(
            self.run_id,
            worker_id=self.worker_id,
            claim_seconds=self.claim_seconds,
            worker_ttl=self.worker_ttl,
            max_hosts=self.max_hosts,
            busy_hosts=self._busy_hosts(),
        )
        before = set(self._expires)
        self._expires = {claim.host: claim.expires_at for claim in grant.claims}
        self._surplus = set(grant.hosts[grant.share :])
        for host in self._expires.keys() - before:
            await self._on_new_host(host)
        lost = before - self._expires.keys()
        if lost:
            log.debug("claims given up or lost: %s", ", ".join(sorted(lost)))
        return grant

    async def release_all(self) -> None:
        if self._before_letting_go is not None and self._expires:
            await self._before_letting_go(list(self._expires))
        self._expires = {}
        await self.store.release_claims(self.run_id, worker_id=self.worker_id)
