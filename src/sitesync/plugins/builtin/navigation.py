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

#: Where navigational links are looked for, most navigational first: ``<nav>`` (and
#: ``role=navigation``), ``<header>``, menus (a class or id that says ``menu`` or ``nav``),
#: ``<footer>``. An anchor belongs to the first of them any of its ancestors is.
_SOURCES = ("nav", "header", "menu", "footer")


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
    """(where found, normalized URL), navigation regions first; resolved only when needed.

    One pass over the anchors, each ancestor looked at once per page (not a CSS query per
    region: ``nav a[href]`` walks every anchor's ancestors, quadratic on a deep page).
    """
    regions: dict[int, int | None] = {}
    by_source: list[list[Any]] = [[] for _ in _SOURCES]
    for node in page.tags("a"):
        if "href" in node.attributes:
            region = _region_above(node, regions)
            if region is not None:
                by_source[region].append(node)
    for source, nodes in zip(_SOURCES, by_source, strict=True):
        for node in nodes:
            url = page.resolve(node.attributes.get("href"))
            if url is not None:
                yield source, url
    # The rest of the page: links the crawl already extracted and normalized.
    for url in page.artifact.links:
        yield "page", url


def _region_above(node: Any, regions: dict[int, int | None]) -> int | None:
    """The most navigational region (index in ``_SOURCES``) among ``node``'s ancestors.
    ``regions`` remembers it per element (for everything below it), so each element of the
    page is looked at once however many anchors lie below it."""
    unknown: list[Any] = []
    parent = node.parent
    best: int | None = None
    while parent is not None:
        known = regions.get(parent.mem_id, -1)
        if known != -1:
            best = known
            break
        unknown.append(parent)
        parent = parent.parent
    for element in reversed(unknown):  # from the top down
        own = _region_of(element)
        if own is not None and (best is None or own < best):
            best = own
        regions[element.mem_id] = best
    return best


def _region_of(element: Any) -> int | None:
    """The region an element makes of what is below it (index in ``_SOURCES``), or None."""
    tag = element.tag
    attributes = element.attributes
    if tag == "nav" or attributes.get("role") == "navigation":
        return 0
    if tag == "header":
        return 1
    names = (attributes.get("class") or "") + " " + (attributes.get("id") or "")
    if "menu" in names or "nav" in names:
        return 2
    return 3 if tag == "footer" else None


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
