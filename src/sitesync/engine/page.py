"""One attempt at one leased URL: robots.txt, politeness, fetch, and what to report.

Everything a server can do ends in a :class:`TaskReport` (or a :class:`Deferral` when the
host asked us to back off before we even tried), never in an exception.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

from sitesync.engine.beforefetch import BeforeFetch
from sitesync.engine.claims import ClaimKeeper
from sitesync.engine.deadhosts import DeadHosts
from sitesync.engine.deferral import Deferral
from sitesync.engine.hopchecks import HopChecks
from sitesync.engine.hops import HopFetcher
from sitesync.engine.hostsignals import HostSignals
from sitesync.engine.pageanswers import PageAnswers
from sitesync.engine.pageread import PageReader
from sitesync.engine.pageturns import Halted, PageTurns
from sitesync.engine.pluginstep import ArtifactProcessor, PluginStep
from sitesync.engine.retrywait import RetryWaits
from sitesync.engine.revalidation import Revalidation
from sitesync.engine.seeding import SitemapReader
from sitesync.engine.sitemapdates import SitemapDates
from sitesync.engine.sitemapstep import SitemapStep
from sitesync.fetch.base import Fetcher
from sitesync.fetch.gate import HostNotHeld, RequestGate
from sitesync.frontier.frontier import Frontier
from sitesync.frontier.retry import RetryPolicy
from sitesync.models import Lease, TaskReport
from sitesync.plugins.offloop import Abandoned, PageWork
from sitesync.store.base import Store


def _never() -> bool:
    return False


class PageAttempts:
    def __init__(
        self,
        *,
        store: Store,
        claims: ClaimKeeper,
        fetcher: Fetcher,
        frontier: Frontier,
        gate: RequestGate,
        retry: RetryPolicy,
        max_retry_after: float,
        plugins: ArtifactProcessor | None = None,
        halted: Callable[[], bool] = _never,
        max_links: int | None = None,
        max_parse_bytes: int | None = None,
        dead_hosts: DeadHosts | None = None,
        sitemaps: SitemapReader | None = None,
        follow_offsite_seed_redirects: bool = False,
        worker_id: str | None = None,
        work: PageWork | None = None,
        conditional_requests: bool = True,
        sitemap_skips_unchanged: bool = False,
    ) -> None:
        self.worker_id = worker_id
        self.work = work or PageWork(budget=float("inf"))  # its CPU work's thread and budget
        self.store = store
        self.claims = claims
        self.frontier = frontier
        # Every request of the page path starts at the worker's one gate (fetch/gate.py).
        self.gate = gate
        self.limiter, self.robots = gate.limiter, gate.robots
        self.turns = PageTurns(gate, halted)
        self.waits = RetryWaits(store, retry, max_retry_after=max_retry_after)
        self.plugin_step = PluginStep(plugins, frontier, max_links=max_links)
        # What a page's CPU work is (decode, links, scoping), wherever it runs.
        self.reader = PageReader(frontier=frontier, max_links=max_links,
                                 max_parse_bytes=max_parse_bytes,
                                 decode_all=plugins is not None)  # fmt: skip
        revalidates = conditional_requests and getattr(fetcher, "revalidates", True)
        self.revalidation = Revalidation(store, enabled=revalidates)
        self.sitemap_dates = SitemapDates(store, frontier, revalidates, sitemap_skips_unchanged)
        self.hops = self._hop_fetcher(fetcher, follow_offsite_seed_redirects)
        self.before = BeforeFetch(
            store=store, claims=claims, gate=gate, turns=self.turns, waits=self.waits,
            plugin_step=self.plugin_step, dead_hosts=dead_hosts, sitemap_dates=self.sitemap_dates,
        )  # fmt: skip
        self.sitemap_step = SitemapStep(
            sitemaps, frontier=frontier, dates=self.sitemap_dates, work=self.work
        )
        self.answers = PageAnswers(
            store=store, frontier=frontier, reader=self.reader, work=self.work,
            waits=self.waits, revalidation=self.revalidation, plugin_step=self.plugin_step,
            sitemap_step=self.sitemap_step,
        )  # fmt: skip
        self.signals = HostSignals(
            store=store, limiter=self.limiter, dead_hosts=dead_hosts,
            plugin_step=self.plugin_step, max_retry_after=max_retry_after,
        )  # fmt: skip

    def _hop_fetcher(self, fetcher: Fetcher, follow_offsite_seed_redirects: bool) -> HopFetcher:
        """The page's requests, hop by hop, each in a turn of :attr:`turns` (the gate's)."""
        return HopFetcher(
            store=self.store, fetcher=fetcher, frontier=self.frontier, turns=self.turns,
            checks=HopChecks(
                frontier=self.frontier, claims=self.claims, gate=self.gate, turns=self.turns,
                follow_offsite_seed_redirects=follow_offsite_seed_redirects,
            ),
            revalidation=self.revalidation,
            follow_offsite_seed_redirects=follow_offsite_seed_redirects,
        )  # fmt: skip

    @property
    def under_way(self) -> set[int]:
        """Tasks a request has started for: what the worker's pause waits for."""
        return self.turns.under_way

    async def attempt(self, lease: Lease) -> TaskReport | Deferral:
        started = self.store.now()
        try:
            outcome = await self._attempt(lease)
        except (Halted, HostNotHeld, Abandoned):
            # Paused (or stopped) while this lease waited for its host's turn, or the
            # host's claim was let go meanwhile (whoever holds it now fetches the page): it
            # goes back untried, and no request starts after the pause.
            return Deferral(lease, self.store.now())
        if isinstance(outcome, Deferral):
            return outcome
        # The attempt's history row: when it ran, and on which worker.
        return replace(
            outcome, started_at=started, ended_at=self.store.now(), worker_id=self.worker_id
        )

    async def _attempt(self, lease: Lease) -> TaskReport | Deferral:
        before = await self.before.ended(lease)
        if before is not None:
            return before
        result, requested_at, revalidated = await self.hops.fetch(lease)
        heard = await self.signals.heard(lease, result)
        if heard is not None:
            return heard
        if lease.depth == 0 and result.redirects:
            await self.hops.record_root_redirect(lease, result)
        report = await self.answers.report(lease, result, revalidated)
        return await self.waits.no_shorter(report, requested_at)
