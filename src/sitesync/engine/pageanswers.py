"""What a page's answer becomes: its report, with the links in it (read off the loop when
the page is large), its site's sitemap pages for a root, and what the plugins make of it.
A 304 the store stands for becomes the earlier fetch seen again; a page whose reading ran
past its budget is reported fetched but not read.
"""

from __future__ import annotations

import functools
import logging
from dataclasses import replace

from sitesync.engine.pageread import PageReader, describe, parse_timeout_report
from sitesync.engine.pluginstep import PluginStep
from sitesync.engine.retrywait import RetryWaits
from sitesync.engine.revalidation import Revalidated, Revalidation, unchanged_report
from sitesync.engine.sitemapstep import SitemapStep
from sitesync.fetch.base import FetchOutcome, FetchResult
from sitesync.fetch.decode import Undecodable, declared_charset
from sitesync.fetch.text import safe_text
from sitesync.frontier.frontier import Frontier
from sitesync.models import HostStatus, Lease, NewTask, TaskReport
from sitesync.plugins.offloop import PageWork, ParseTimeout
from sitesync.store.base import Store
from sitesync.urls import resolve_link

# The page attempt's logger, as before the split: its lines keep the name operators filter on.
log = logging.getLogger("sitesync.engine.page")


class PageAnswers:
    def __init__(
        self,
        *,
        store: Store,
        frontier: Frontier,
        reader: PageReader,
        work: PageWork,
        waits: RetryWaits,
        revalidation: Revalidation,
        plugin_step: PluginStep,
        sitemap_step: SitemapStep,
    ) -> None:
        self.store = store
        self.frontier = frontier  # a 304's links and a redirect target handed over: scoped
        # What a page's CPU work is (decode, links, scoping), and where it runs.
        self.reader, self.work = reader, work
        self.waits = waits  # a failed request's wait before its retry
        self.revalidation = revalidation  # what a success leaves for the next scan
        self.plugin_step = plugin_step
        self.sitemap_step = sitemap_step

    async def report(
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
            return await self.sitemap_step.add_urls(lease, report)
        budget = self.work.for_page(len(result.body))
        try:
            text, links, discovered = await budget.run(self.reader.read, lease, result)
            report = self._report(lease, result, text, discovered, links)
            if report.ok and revalidated.note:  # fetched in full, and why not conditionally
                report = replace(report, error=report.error or revalidated.note)
            if result.outcome is FetchOutcome.REDIRECT_NOT_FOLLOWED and report.ok:
                report = self._hand_over_target(lease, result, report)
            report = await self.sitemap_step.add_urls(lease, report)
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

    def _report(
        self,
        lease: Lease,
        result: FetchResult,
        text: str | None,
        discovered: tuple[NewTask, ...],
        links: list[str],
    ) -> TaskReport:
        """The report of a fetch whose page was read (its ``text``, and the links in it in
        scope: see :meth:`PageReader.read`)."""
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

    def _hand_over_target(
        self, lease: Lease, result: FetchResult, report: TaskReport
    ) -> TaskReport:
        """A redirect target not followed becomes a task of its own if it is in scope: its
        host's claim holder fetches it (this worker only requests hosts it holds)."""
        target = resolve_link(result.url, result.redirects[-1].to_url)
        if target is None:
            return report
        found = self.frontier.candidates([target], depth=lease.depth)
        return replace(report, discovered=(*report.discovered, *found)) if found else report
