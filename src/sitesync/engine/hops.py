"""Fetching a page one polite request per redirect hop.

Each hop is a request of its own: it waits for its host's turn (engine/pageturns.py), and
its target must pass the hop checks (engine/hopchecks.py: in scope, on a host this worker
may ask, allowed by robots.txt) before it is requested. A target that does not is recorded
(the hop is on the chain) but never fetched.
A seed's redirects also say where its site lives (its canonical host and aliases).
"""

from __future__ import annotations

from dataclasses import replace

from sitesync.engine.hopchecks import HopChecks
from sitesync.engine.pageturns import PageTurns
from sitesync.engine.revalidation import Revalidated, Revalidation
from sitesync.fetch.base import Fetcher, FetchLimits, FetchOutcome, FetchResult, RedirectHop
from sitesync.fetch.redirects import Refusal, walk
from sitesync.frontier.frontier import Frontier
from sitesync.models import EarlierFetch, Lease, Validators
from sitesync.store.base import Store
from sitesync.urls import resolve_link, same_site, url_host


class HopFetcher:
    def __init__(
        self,
        *,
        store: Store,
        fetcher: Fetcher,
        frontier: Frontier,
        turns: PageTurns,
        checks: HopChecks,
        revalidation: Revalidation,
        follow_offsite_seed_redirects: bool,
    ) -> None:
        self.store = store  # a seed's redirects say where its site lives: kept for the run
        self.revalidation = revalidation
        self.fetcher = fetcher
        self.frontier = frontier  # a seed's site moved: the run's scope follows it
        self.turns = turns  # each hop's request in its turn; the host's pace learned from it
        self.checks = checks
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
            return await self.checks.refusal(lease, target, location)

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
        async with self.turns.turn(url_host(url), lease) as turn:
            result = await self.fetcher.fetch(url, validators=validators)
        await self.turns.learn(turn, result)
        return result, turn.started

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
