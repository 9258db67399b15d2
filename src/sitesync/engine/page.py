"""One attempt at one leased URL: robots.txt, politeness, fetch, and what to report.

Everything a server can do ends in a :class:`TaskReport` (or a :class:`Deferral` when the
host asked us to back off before we even tried), never in an exception.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable
from dataclasses import replace

from sitesync.engine.beforefetch import BeforeFetch
from sitesync.engine.claims import ClaimKeeper
from sitesync.engine.deadhosts import DeadHosts
from sitesync.engine.deferral import Deferral
from sitesync.engine.hops import HopFetcher
from sitesync.engine.hostsignals import HostSignals
from sitesync.engine.pageread import PageReader, describe, parse_timeout_report
from sitesync.engine.pageturns import Halted, PageTurns
from sitesync.engine.pluginstep import ArtifactProcessor, PluginStep
from sitesync.engine.retrywait import RetryWaits
from sitesync.engine.revalidation import Revalidated, Revalidation, unchanged_report
from sitesync.engine.seeding import SitemapReader
from sitesync.engine.sitemapdates import SitemapDates
from sitesync.fetch.base import Fetcher, FetchOutcome, FetchResult
from sitesync.fetch.decode import Undecodable, declared_charset
from sitesync.fetch.gate import HostNotHeld, RequestGate
from sitesync.fetch.text import safe_text
from sitesync.frontier.frontier import Frontier
from sitesync.frontier.retry import RetryPolicy
from sitesync.models import HostStatus, Lease, NewTask, TaskReport
from sitesync.plugins.offloop import Abandoned, PageWork, ParseTimeout
from sitesync.store.base import Store

log = logging.getLogger(__name__)


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
        self.sitemaps = sitemaps
        revalidates = conditional_requests and getattr(fetcher, "revalidates", True)
        self.revalidation = Revalidation(store, enabled=revalidates)
        self.sitemap_dates = SitemapDates(store, frontier, revalidates, sitemap_skips_unchanged)
        self.hops = self._hop_fetcher(fetcher, follow_offsite_seed_redirects)
        self.before = BeforeFetch(
            store=store, claims=claims, gate=gate, turns=self.turns, waits=self.waits,
            plugin_step=self.plugin_step, dead_hosts=dead_hosts, sitemap_dates=self.sitemap_dates,
        )  # fmt: skip
        self.signals = HostSignals(
            store=store, limiter=self.limiter, dead_hosts=dead_hosts,
            plugin_step=self.plugin_step, max_retry_after=max_retry_after,
        )  # fmt: skip

    def _hop_fetcher(self, fetcher: Fetcher, follow_offsite_seed_redirects: bool) -> HopFetcher:
        """The page's requests, hop by hop, each in a turn of :attr:`turns` (the gate's)."""
        return HopFetcher(
            store=self.store, fetcher=fetcher, frontier=self.frontier, claims=self.claims,
            limiter=self.limiter, robots=self.robots, turn=self.turns.turn,
            learn=self.turns.learn,
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
        report = await self._answered(lease, result, revalidated)
        return await self.waits.no_shorter(report, requested_at)

    async def _answered(
        self, lease: Lease, result: FetchResult, revalidated: Revalidated
    ) -> TaskReport:
        """The report of a fetch that got this far: links, sitemaps, plugins (none for a
        304 the store stands for: its records are seen again, its links admitted again)."""
        if revalidated.earlier is not None:
            earlier = revalidated.earlier
            found = self.frontier.candidates(
                earlier.links, depth=lease.depth + 1, found_from=lease.task_id
            )
            report = unchanged_report(lease, result, earlier, found, revalidated.note)
            return await self._add_sitemap_urls(lease, report)
        budget = self.work.for_page(len(result.body))
        try:
            text, links, discovered = await budget.run(self.reader.read, lease, result)
            report = self._report(lease, result, text, discovered, links)
            if report.ok and revalidated.note:  # fetched in full, and why not conditionally
                report = replace(report, error=report.error or revalidated.note)
            if result.outcome is FetchOutcome.REDIRECT_NOT_FOLLOWED and report.ok:
                report = self.hops.hand_over_target(lease, result, report)
            report = await self._add_sitemap_urls(lease, report)
        except ParseTimeout as exc:
            return await self._parse_timed_out(lease, result, exc)
        if lease.depth == 0 and report.outcome is FetchOutcome.BLOCKED:
            await self.store.set_host_status(lease.run_id, lease.host, HostStatus.BLOCKED)
        # A root's failures too: the navigation sampler records that a site is unreachable.
        if self.plugin_step.on and (report.ok or lease.depth == 0):
            try:
                report = await self.plugin_step.run(lease, result, report, links, text, budget)
            except ParseTimeout as exc:
                return await self._parse_timed_out(lease, result, exc)
        return report

    async def _parse_timed_out(
        self, lease: Lease, result: FetchResult, exc: ParseTimeout
    ) -> TaskReport:
        """A page whose processing ran past its budget: fetched, not read (no links, no
        records); the plugins see its outcome, so a root's navigation sample says why."""
        log.warning("%s: %s", safe_text(lease.url), exc)
        report = parse_timeout_report(lease, result, exc)
        if self.plugin_step.on and lease.depth == 0:
            timed_out = replace(result, outcome=FetchOutcome.PARSE_TIMEOUT)
            report = await self.plugin_step.run(lease, timed_out, report, [])
        return report

    async def _add_sitemap_urls(self, lease: Lease, report: TaskReport) -> TaskReport:
        if lease.depth != 0 or not report.ok or self.sitemaps is None:
            return report
        urls, dates = await self.sitemaps.pages(lease.url)
        if not urls:
            return report
        # Up to 100,000 URLs to scope: off the loop, like a large page's links.
        budget = self.work.for_page(len(urls) * 16)
        found = await budget.run(
            functools.partial(self.frontier.candidates, urls, depth=lease.depth + 1)
        )
        # First: a page also linked keeps the sitemap's priority (the link is a duplicate).
        found = await self.sitemap_dates.admitted(lease.run_id, found, dates)
        return replace(report, discovered=(*found, *report.discovered))

    def _report(
        self,
        lease: Lease,
        result: FetchResult,
        text: str | None,
        discovered: tuple[NewTask, ...],
        links: list[str],
    ) -> TaskReport:
        """The report of a fetch whose page was read (its ``text``, and the links in it in
        scope: see :meth:`_read`)."""
        # Built in one go on the common path (a page a report, and a report a few fields).
        base = functools.partial(
            TaskReport,
            lease=lease,
            http_status=result.status,
            outcome=result.outcome,
            final_url=result.final_url if result.final_url != lease.url else None,
            redirects=tuple((h.from_url, h.to_url, h.status) for h in result.redirects),
        )
        if result.outcome is FetchOutcome.NOT_FETCHED:  # a dry run: done, nothing asked
            return base(ok=True)
        if result.retryable:
            delay = self.waits.backoff(lease, result.retry_after)
            return base(ok=False, error=describe(result), retry_delay=delay)
        if result.status == 0:
            # No response and nothing transient about it (redirect loop, bad URL, ...).
            return base(ok=False, error=describe(result), give_up=True)
        outcome = result.outcome
        error = None if outcome is FetchOutcome.SUCCESS else describe(result)
        if outcome is FetchOutcome.SUCCESS and isinstance(text, Undecodable):
            # Recorded as what happened, not as a success: the links (almost always ASCII)
            # are still followed, read with replacement characters.
            charset = declared_charset(result.headers.get("content-type", "")) or "utf-8"
            outcome = FetchOutcome.UNDECODABLE
            error = f"{FetchOutcome.UNDECODABLE.value}: body is not valid {charset}"
        return base(
            ok=True,
            outcome=outcome,
            bytes_fetched=len(result.body),
            discovered=discovered,
            error=error,
            revisit=self.revalidation.full_fetch(result, links) if not error else None,
        )
