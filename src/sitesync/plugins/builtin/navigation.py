"""Built-in plugin ``navigation``: a sample of each site's navigational URLs.

From a site's root page (the depth-0 URL of a run) it picks up to 10 deduplicated internal
URLs: first the links of ``<nav>`` (and ``role=navigation``), then ``<header>``, then menus
(elements whose class or id says ``menu`` or ``nav``), then ``<footer>``, then any other
internal link of the page. Fewer than 10 come with a shortfall reason: "site unreachable",
"robots.txt disallows", "root page answered HTTP 404", "only 4 internal navigational links".

One record of kind ``navigation`` per site, keyed by its root (``navigation:https://a.org/``).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from sitesync.models import AssetRecord, CrawlArtifact, FetchOutcome
from sitesync.plugins.base import ParsedPage, PluginContext
from sitesync.plugins.builtin._common import (
    SiteTest,
    asset_kind,
    data_record,
)

KIND = "navigation"
SAMPLE_SIZE = 10

#: Where navigational links are looked for, most navigational first.
_SOURCES = (
    ("nav", "nav a[href], [role=navigation] a[href]"),
    ("header", "header a[href]"),
    ("menu", "[class*=menu] a[href], [id*=menu] a[href], [class*=nav] a[href], [id*=nav] a[href]"),
    ("footer", "footer a[href]"),
)


class NavigationSampler:
    #: Also see a root that could not be fetched, to say why its site has no sample.
    sees_failed_roots = True

    def __init__(self, context: PluginContext) -> None:
        self.sample_size = SAMPLE_SIZE

    def process(self, artifact: CrawlArtifact, page: ParsedPage) -> tuple[AssetRecord, ...]:
        if artifact.depth != 0:
            return ()
        sample: list[dict[str, str]] = []
        shortfall = _failure(artifact, page)
        if shortfall is None:
            sample = list(self._sample(artifact, page))
            if len(sample) < self.sample_size:
                shortfall = _too_few(len(sample))
        root = _origin(artifact.requested_url)
        data = {
            "root_url": root,
            "final_url": artifact.final_url,
            "status": artifact.status,
            "urls": sample,
            "shortfall": shortfall,
        }
        return (data_record(KIND, root, data),)

    def _sample(self, artifact: CrawlArtifact, page: ParsedPage) -> Iterator[dict[str, str]]:
        site = SiteTest(artifact.final_url)
        skip = {artifact.requested_url, artifact.final_url, _origin(artifact.final_url)}
        taken = 0
        for source, url in _candidates(page):
            if url in skip or not site.internal(url) or asset_kind(url) is not None:
                continue
            skip.add(url)
            yield {"url": url, "found_in": source}
            taken += 1
            if taken == self.sample_size:
                return


def _candidates(page: ParsedPage) -> Iterator[tuple[str, str]]:
    """(where found, normalized URL), navigation regions first; resolved only when needed."""
    tree: Any = page.tree
    for source, selector in _SOURCES:
        for node in tree.css(selector):
            url = page.resolve(node.attributes.get("href"))
            if url is not None:
                yield source, url
    # The rest of the page: links the crawl already extracted and normalized.
    for url in page.artifact.links:
        yield "page", url


def _failure(artifact: CrawlArtifact, page: ParsedPage) -> str | None:
    """Why the root page yields no sample at all, or None if it can be sampled."""
    if artifact.status == 0:
        blocked = artifact.outcome == FetchOutcome.BLOCKED
        return "robots.txt disallows" if blocked else "site unreachable"
    if artifact.status >= 400:
        return f"root page answered HTTP {artifact.status}"
    if artifact.outcome != FetchOutcome.SUCCESS:  # a redirect out of scope, a body too large...
        return f"root page unusable ({artifact.outcome})"
    if page.tree is None:
        return "root page is not HTML"
    return None


def _too_few(count: int) -> str:
    if count == 0:
        return "no internal navigational links"
    noun = "link" if count == 1 else "links"
    return f"only {count} internal navigational {noun}"


def _origin(url: str) -> str:
    """``scheme://host[:port]/`` of a normalized URL: the site's root."""
    end = url.find("/", url.find("//") + 2)
    return url if end == -1 else url[: end + 1]
