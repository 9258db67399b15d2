"""The plugins' step of a page attempt: what they make of an answer (records, more links)
joins the page's report, so it is committed with it.

Every ending of a root reaches them too, a failure before any request included: the
navigation sampler records why a site could not be crawled.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any, Protocol

from sitesync.engine.pageread import artifact_of
from sitesync.fetch.base import FetchOutcome, FetchResult
from sitesync.frontier.frontier import Frontier
from sitesync.models import CrawlArtifact, Lease, ProcessedArtifact, TaskReport
from sitesync.plugins.offloop import PageBudget


class ArtifactProcessor(Protocol):
    """The plugin pipeline, as a page attempt sees it."""

    async def process(
        self, artifact: CrawlArtifact, *, tree: Any = None, budget: PageBudget | None = None
    ) -> ProcessedArtifact:
        """``tree``: the page as the link extraction parsed it, so it is parsed only once;
        ``budget``: where the synchronous built-ins run (off the loop for a large page)."""
        ...


class PluginStep:
    def __init__(
        self, plugins: ArtifactProcessor | None, frontier: Frontier, *, max_links: int | None
    ) -> None:
        self.plugins = plugins
        self.frontier = frontier  # scopes the links plugins add
        self.max_links = max_links  # links admitted per page (plugins' included)

    @property
    def on(self) -> bool:
        """Whether the run has plugins at all."""
        return self.plugins is not None

    async def for_root(
        self, lease: Lease, result: FetchResult | None, report: TaskReport
    ) -> TaskReport:
        """Plugins see a root that failed for good too (the navigation sampler records it)."""
        if self.plugins is None or lease.depth != 0:
            return report
        return await self.run(lease, result, report, [])

    async def run(
        self,
        lease: Lease,
        result: FetchResult | None,
        report: TaskReport,
        links: list[str],
        text: str | None = None,
        budget: PageBudget | None = None,
    ) -> TaskReport:
        """Plugins see every answered fetch; what they make is committed with the report."""
        assert self.plugins is not None
        if result is None:  # robots.txt (or a dead host) kept us from asking
            outcome = report.outcome or FetchOutcome.BLOCKED
            result = FetchResult(url=lease.url, outcome=outcome, error=report.error)
        artifact = artifact_of(lease, result, report, links, text)
        tree = getattr(links, "tree", None)
        if budget is None or budget.inline:  # a small page: every plugin on the loop
            produced = await self.plugins.process(artifact, tree=tree)
        else:
            produced = await self.plugins.process(artifact, tree=tree, budget=budget)
        discovered = report.discovered
        room = len(produced.links) if self.max_links is None else self.max_links - len(links)
        if produced.links and room > 0:
            extra = self.frontier.candidates(
                produced.links[:room], depth=lease.depth + 1, found_from=lease.task_id
            )
            discovered = (*discovered, *extra)
        errors = "; ".join(produced.errors)
        revisit = report.revisit
        if revisit is not None and produced.links and room > 0:  # the next scan's too
            revisit = replace(revisit, links=(*revisit.links, *produced.links[:room]))
        return replace(
            report,
            records=produced.records,
            revisit=revisit,
            discovered=discovered,
            error=report.error if not errors else f"{report.error or 'plugins'}: {errors}",
        )
