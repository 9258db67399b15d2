"""Sitemap dates (issue 30): a ``<lastmod>`` orders the frontier (pages a sitemap dates
after the store's last check of them, and pages the store never fetched, come first) and,
when ``sitemap_skips_unchanged`` allows it, spares a request for a page it dates before
that check: the page ends ``unchanged_per_sitemap``, handled as a 304 (its records seen
again, its links admitted from the store).

The dates a scan read are kept in the store for the run (table ``sitemap_dates``), so
whichever worker leases a page knows its date; an earlier scan's dates are never used.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace

from sitesync.frontier.frontier import Frontier
from sitesync.models import FetchOutcome, Lease, NewTask, Revisit, TaskReport
from sitesync.store.base import Store

#: The frontier's priority of a page a sitemap says changed (or that the store never
#: fetched); every other task has 0, and the highest priority is leased first.
CHANGED_FIRST = 1


class SitemapDates:
    def __init__(self, store: Store, frontier: Frontier, revalidates: bool, skips: bool) -> None:
        self.store = store
        self.frontier = frontier
        # A skip stands for what a 304 does: only where a 304 would be taken.
        self.skips = skips and revalidates

    async def admitted(
        self, run_id: int, found: Sequence[NewTask], dates: Mapping[str, float]
    ) -> list[NewTask]:
        """``found`` (a sitemap's pages) with the changed ones first and prioritized; the
        dates kept for the run."""
        if not dates:
            return list(found)
        await self.store.save_sitemap_dates(run_id, dates)
        checked = await self.store.last_checked([t.url for t in found if t.url in dates])

        def changed(task: NewTask) -> bool:  # or never fetched: dated, and not before
            return task.url in dates and dates[task.url] >= checked.get(task.url, 0.0)

        first = [replace(t, priority=CHANGED_FIRST) for t in found if changed(t)]
        return [*first, *(t for t in found if not changed(t))]

    async def skipped(self, lease: Lease) -> TaskReport | None:
        """The report of a page the scan's sitemap dates before its last check (no request
        made), or None: fetch it."""
        if not self.skips or lease.depth == 0:
            return None
        lastmod = await self.store.sitemap_lastmod(lease.run_id, lease.url)
        if lastmod is None:
            return None
        last = await self.store.last_fetch(lease.url)
        if last is None or last.earlier is None or lastmod >= last.checked_at:
            return None
        found = self.frontier.candidates(
            last.earlier.links, depth=lease.depth + 1, found_from=lease.task_id
        )
        revisit = Revisit(url=lease.url, validators=last.validators,
                          resighted=last.earlier.records)  # fmt: skip
        return TaskReport(
            lease=lease,
            ok=True,
            outcome=FetchOutcome.UNCHANGED_PER_SITEMAP,
            discovered=tuple(found),
            revisit=revisit,
        )
