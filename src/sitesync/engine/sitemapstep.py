"""A root's sitemap step: the pages its site's sitemaps list join the root's discoveries,
the ones a sitemap dates as changed first (engine/sitemapdates.py).
"""

from __future__ import annotations

import functools
from dataclasses import replace

from sitesync.engine.seeding import SitemapReader
from sitesync.engine.sitemapdates import SitemapDates
from sitesync.frontier.frontier import Frontier
from sitesync.models import Lease, TaskReport
from sitesync.plugins.offloop import PageWork


class SitemapStep:
    """``sitemaps`` None: the run reads none (``sitemaps = false``)."""

    def __init__(
        self,
        sitemaps: SitemapReader | None,
        *,
        frontier: Frontier,
        dates: SitemapDates,
        work: PageWork,
    ) -> None:
        self.sitemaps = sitemaps
        self.frontier = frontier
        self.dates = dates
        self.work = work  # scoping a long sitemap runs off the loop, under a page's budget

    async def add_urls(self, lease: Lease, report: TaskReport) -> TaskReport:
        """``report`` with its site's sitemap pages discovered, if it is a root's success."""
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
        found = await self.dates.admitted(lease.run_id, found, dates)
        return replace(report, discovered=(*found, *report.discovered))
