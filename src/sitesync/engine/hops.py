"""Fetching a page one polite request per redirect hop.

Each hop is a request of its own: it waits for its host's politeness slot, and its target
must be in scope, on a host this worker may ask, and allowed by robots.txt before it is
requested. A target that is not is recorded (the hop is on the chain) but never fetched.
A seed's redirects also say where its site lives (its canonical host and aliases).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from contextlib import AbstractAsyncContextManager
from dataclasses import replace

from sitesync.engine.claims import ClaimKeeper
from sitesync.engine.revalidation import Revalidated, Revalidation
from sitesync.fetch.base import Fetcher, FetchLimits, FetchOutcome, FetchResult, RedirectHop
from sitesync.fetch.politeness import HostLimiter, Turn
from sitesync.fetch.redirects import Refusal, walk
from sitesync.fetch.robots import RobotsCache
from sitesync.frontier.frontier import Frontier
from sitesync.models import EarlierFetch, Lease, Validators
from sitesync.store.base import Store
from sitesync.urls import origin_of, resolve_link, same_site, url_host

#: The host's politeness slot for a request on behalf of a lease (see PageTurns.turn).
TurnFor = Callable[[str, Lease], AbstractAsyncContextManager[Turn]]


class HopFetcher:
    def __init__(
        self,
        *,
        store: Store,
        fetcher: Fetcher,
        frontier: Frontier,
        claims: ClaimKeeper,
        limiter: HostLimiter,
        robots: RobotsCache | None,
        turn: TurnFor,
        learn: Callable[[Turn, FetchResult], Awaitable[None]],
        follow_offsite_seed_redirects: bool,
        revalidation: Revalidation,
    ) -> None:
        self.store = store
        self.revalidation = revalidation
        self.fetcher = fetcher
        self.frontier = frontier
        self.claims = claims
        self.limiter = limiter
        self.robots = robots
        self.turn = turn
        self.learn = learn  # the gate's: the host's pace learned from each answer
        self.follow_offsite_seed_redirects = follow_offsite_seed_redirects
        self.max_redirects = getattr(fetcher, "limits", FetchLimits()).max_redirects

    async def fetch(self, lease: Lease) -> tuple[FetchResult, float, Revalidated]:
        """Fetch ``lease.url``, following its redirects one hop at a time (the one walker,
        sitesync.fetch.redirects); when its first request started (on the store's clock:
        the gap a retry must not shorten); and what its conditional request came to."""
        requested_at: float | None = None
        revalidated = Revalidated()

        async def request(url: str) -> FetchResult:
            nonlocal requested_at, revalidated
            result, started, revalidated = await self._revalidating(lease, url)
            requested_at = started if requested_at is None else requested_at
            return result

        async def check(
            target: str, location: str, chain: tuple[RedirectHop, ...]
        ) -> Refusal | None:
            return await self._hop_refusal(lease, target, location)

        result = await walk(lease.url, request, check, max_redirects=self.max_redirects)
        assert requested_at is not None  # the walk sends at least its first request
        return result, requested_at, revalidated

    async def _revalidating(self, lease: Lease, url: str) -> tuple[FetchResult, float, Revalidated]:
        """One request for ``url``, conditional when the store kept validators for it; a
        304 the store cannot stand for is followed by one request in full."""
        asked = await self.revalidation.ask(url)
        result, started = await self._request(lease, url, asked.validators)
        if result.status != 304:
            return result, started, Revalidated(note=asked.note)
        earlier = self.revalidation.after_304(asked)
        if isinstance(earlier, EarlierFetch):
            return result, started, Revalidated(earlier, asked.note)
        again, _ = await self._request(lease, url, None)
        if again.status == 304:  # no body to be had: nothing to record as the page
            error = f"{earlier}, twice"
            again = replace(again, outcome=FetchOutcome.INVALID, error=error)
        return again, started, Revalidated(note=f"fetched again in full: {earlier}")

    async def _request(
        self, lease: Lease, url: str, validators: Validators | None
    ) -> tuple[FetchResult, float]:
        async with self.turn(url_host(url), lease) as turn:
            result = await self.fetcher.fetch(url, validators=validators)
        await self.learn(turn, result)
        return result, turn.started

    async def _hop_refusal(self, lease: Lease, target: str, location: str) -> Refusal | None:
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
            target, origin_of(target), gate=lambda: self.turn(host, lease)
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

    async def record_root_redirect(self, lease: Lease, result: FetchResult) -> None:
        final = result.final_url or lease.url
        if result.outcome in (FetchOutcome.REDIRECT_NOT_FOLLOWED, FetchOutcome.BLOCKED):
            # Not followed (another site, robots.txt): the site still says it lives there.
            final = resolve_link(final, result.redirects[-1].to_url) or final
        canonical = url_host(final)
        hosts = [url_host(hop.from_url) for hop in result.redirects]
        aliases = [h for h in dict.fromkeys(hosts) if h != canonical]
        await self.store.record_root_redirect(lease.host, canonical_host=canonical, aliases=aliases)
        if canonical in self.frontier.scope.seed_hosts:
            return
        if same_site(lease.host, canonical) or self.follow_offsite_seed_redirects:
            run = await self.store.extend_scope(lease.run_id, [canonical])
            self.frontier.refresh(run)
