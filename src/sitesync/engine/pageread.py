"""What a page's CPU work is: its body decoded (up to ``max_parse_bytes``), its links
extracted and counted, and those in scope: the steps :mod:`sitesync.plugins.offloop` runs off the
event loop for a large page, within its budget. Nothing here awaits: it may run on a thread.
"""

from __future__ import annotations

from sitesync.fetch.base import FetchOutcome, FetchResult
from sitesync.fetch.decode import Undecodable, decode_html_checked
from sitesync.fetch.html import PageLinks, count_anchors, extract_links
from sitesync.fetch.text import safe_text
from sitesync.frontier.frontier import Frontier
from sitesync.models import CrawlArtifact, Lease, NewTask, TaskReport
from sitesync.plugins.offloop import ParseTimeout


class PageReader:
    def __init__(
        self,
        *,
        frontier: Frontier,
        max_links: int | None,
        max_parse_bytes: int | None,
        decode_all: bool,
    ) -> None:
        self.frontier = frontier
        self.max_links = max_links  # links admitted per page (plugins' included)
        self.max_parse_bytes = max_parse_bytes  # HTML parsed per page; the rest is counted
        self.decode_all = decode_all  # plugins read every HTML body, not only successes'

    def read(
        self, lease: Lease, result: FetchResult
    ) -> tuple[str | None, list[str], tuple[NewTask, ...]]:
        """The page's text, its links (normalized) and those in scope: the CPU work of a
        page, off the loop when the page is large."""
        # Decoded once, for the link extraction and the plugins alike.
        wanted = self.decode_all or result.outcome is FetchOutcome.SUCCESS
        text = self._html_text(result) if wanted else None
        if result.outcome is not FetchOutcome.SUCCESS or text is None:
            return text, [], ()
        if result.retryable or result.status == 0:
            return text, [], ()
        links = self._links(text, result)
        found = self.frontier.candidates(links, depth=lease.depth + 1, found_from=lease.task_id)
        return text, links, tuple(found)

    def _html_text(self, result: FetchResult) -> str | None:
        """The HTML body as text, up to ``max_parse_bytes``: what is parsed is bounded,
        however large a body the fetch was allowed."""
        if not (result.is_html and result.body):
            return None
        body = result.body
        cut = self._parse_cut(body)
        if cut is not None:
            body = body[:cut]
        text, clean = decode_html_checked(body, result.headers.get("content-type", ""))
        return text if clean else Undecodable(text)

    def _parse_cut(self, body: bytes) -> int | None:
        """Where the parsed part of ``body`` ends (at a ``<``, so that no tag is cut in two
        and the rest can be counted exactly), or None when all of it is parsed."""
        limit = self.max_parse_bytes
        if limit is None or len(body) <= limit:
            return None
        cut = body.rfind(b"<", 0, limit + 1)
        return cut if cut > 0 else limit

    def _links(self, text: str, result: FetchResult) -> PageLinks:
        links = extract_links(text, result.final_url or result.url, limit=self.max_links)
        cut = self._parse_cut(result.body)
        if cut is not None:
            # Not parsed, but counted: the links record says how many were left out.
            links.truncated += count_anchors(memoryview(result.body)[cut:])
        return links


def parse_timeout_report(lease: Lease, result: FetchResult, exc: ParseTimeout) -> TaskReport:
    """A page whose processing ran past its budget: fetched, but not read (no links, no
    records); completed like a body ``too_large``, its outcome ``parse_timeout``."""
    return TaskReport(
        lease=lease,
        ok=True,
        http_status=result.status,
        outcome=FetchOutcome.PARSE_TIMEOUT,
        final_url=result.final_url if result.final_url != lease.url else None,
        redirects=tuple((h.from_url, h.to_url, h.status) for h in result.redirects),
        bytes_fetched=len(result.body),
        error=f"{FetchOutcome.PARSE_TIMEOUT.value}: {exc}",
    )


def describe(result: FetchResult) -> str:
    """A failed fetch's error line: its outcome, and what went wrong or its HTTP status."""
    if result.error:
        return f"{result.outcome.value}: {safe_text(result.error)}"
    return f"{result.outcome.value}: HTTP {result.status}"


def artifact_of(
    lease: Lease, result: FetchResult, report: TaskReport, links: list[str], text: str | None
) -> CrawlArtifact:
    """What the plugins see of a page: the fetch, its text and the links read from it."""
    return CrawlArtifact(
        run_id=lease.run_id,
        task_id=lease.task_id,
        requested_url=lease.url,
        final_url=result.final_url or lease.url,
        depth=lease.depth,
        status=result.status,
        outcome=result.outcome,
        headers=result.headers,
        body=result.body,
        text=text,
        redirects=report.redirects,
        elapsed=result.elapsed,
        links=tuple(links),
        links_truncated=getattr(links, "truncated", 0),
    )
