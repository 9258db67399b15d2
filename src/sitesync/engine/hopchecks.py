"""Whether a page's redirect hop is taken: its target in scope (a seed's: on its site), on
a host this worker may ask, and allowed by robots.txt. A hop that is not is recorded on
the chain but never requested (sitesync.fetch.redirects walks it; engine/hops.py asks).
"""

from __future__ import annotations

from sitesync.engine.claims import ClaimKeeper
from sitesync.engine.pageturns import PageTurns
from sitesync.fetch.base import FetchOutcome
from sitesync.fetch.gate import RequestGate
from sitesync.fetch.redirects import Refusal
from sitesync.frontier.frontier import Frontier
from sitesync.models import Lease
from sitesync.urls import origin_of, same_site, url_host


class HopChecks:
    def __init__(
        self,
        *,
        frontier: Frontier,
        claims: ClaimKeeper,
        gate: RequestGate,
        turns: PageTurns,
        follow_offsite_seed_redirects: bool,
    ) -> None:
        self.frontier = frontier
        self.claims = claims
        # The gate's host limiter and robots.txt: a target's verdict and its Crawl-delay.
        self.limiter, self.robots = gate.limiter, gate.robots
        self.turns = turns  # a target's robots.txt is fetched in the page's turn
        self.follow_offsite_seed_redirects = follow_offsite_seed_redirects

    async def refusal(self, lease: Lease, target: str, location: str) -> Refusal | None:
        """Why a page's hop to ``target`` (``location`` as sent) is not taken, or None."""
        if not self._may_follow(lease, target):
            return FetchOutcome.REDIRECT_NOT_FOLLOWED, f"redirect to {location} (out of scope)"
        host = url_host(target)
        if host != lease.host and not await self.claims.may_request(host):
            # Another worker holds that host: only it sends the host requests.
            why = f"redirect to {target} (its host is held by another worker: queued for it)"
            return FetchOutcome.REDIRECT_NOT_FOLLOWED, why
        if self.robots is None:
            return None
        verdict = await self.robots.check(
            target, origin_of(target), gate=lambda: self.turns.turn(host, lease)
        )
        self.limiter.honour_crawl_delay(host, verdict.crawl_delay)
        if verdict.allowed:
            return None
        return FetchOutcome.BLOCKED, f"redirect to {target} not followed: {verdict.reason}"

    def _may_follow(self, lease: Lease, target: str) -> bool:
        host = url_host(target)
        if lease.depth == 0:
            # A seed's redirects within its site define it (http -> https, bare -> www);
            # one to another site is recorded as its canonical host but not followed, unless
            # the operator said so (the flag, or that domain in allowed_domains).
            if self.follow_offsite_seed_redirects or same_site(lease.host, host):
                return True
            return self.frontier.scope.domain_allowed(host)
        return self.frontier.scope.admits(target, host, lease.depth)
