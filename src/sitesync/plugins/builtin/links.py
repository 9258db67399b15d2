"""Built-in plugin ``links``: records what the crawl's link extraction found on each page.

The extraction itself is the crawl's (``sitesync.fetch.html``): this plugin reads its result,
``artifact.links``, and the tree it parsed.
"""

from __future__ import annotations

from typing import Any

from sitesync.models import AssetRecord, CrawlArtifact
from sitesync.plugins.base import ParsedPage, PluginContext
from sitesync.plugins.builtin._common import SiteTest, data_record, is_answered_html


class LinksPlugin:
    """Built-in plugin ``links``: one record of kind ``links`` per HTML page.

    Its data lists the page's links as internal (same site) or external, and which ones the
    page asks crawlers not to follow (``rel=nofollow``, or ``<meta name=robots
    content=nofollow>`` for all of them). The links come from ``artifact.links``, extracted
    once by the crawl; only ``rel=nofollow`` anchors are looked up again. ``truncated`` (only
    on a page with more links than ``max_links_per_page``) counts the links left out.
    """

    def __init__(self, context: PluginContext) -> None:
        pass

    def process(self, artifact: CrawlArtifact, page: ParsedPage) -> tuple[AssetRecord, ...]:
        if not is_answered_html(artifact, page):
            return ()
        site = SiteTest(artifact.final_url)
        internal: list[str] = []
        external: list[str] = []
        for url in artifact.links:
            (internal if site.internal(url) else external).append(url)
        page_nofollow = _page_nofollow(page)
        nofollow = list(artifact.links) if page_nofollow else _nofollow(page)
        data: dict[str, Any] = {
            "internal": internal,
            "external": external,
            "nofollow": nofollow,
            "page_nofollow": page_nofollow,
        }
        if artifact.links_truncated:  # only then: records of ordinary pages keep their hash
            data["truncated"] = artifact.links_truncated
        return (data_record(LINKS_KIND, artifact.final_url, data),)


LINKS_KIND = "links"


def _nofollow(page: ParsedPage) -> list[str]:
    """Targets of ``<a rel="nofollow ...">``, normalized, once each."""
    marked: list[str | None] = []
    for anchor in page.tags("a"):  # by tag name, not CSS: see ParsedPage.tags
        attributes = anchor.attributes
        rel = attributes.get("rel")
        if rel and "nofollow" in rel.lower().split():
            marked.append(page.resolve(attributes.get("href")))
    return [url for url in dict.fromkeys(marked) if url is not None]


def _page_nofollow(page: ParsedPage) -> bool:
    for meta in page.tags("meta"):
        attributes = meta.attributes
        name = (attributes.get("name") or "").lower()
        if name == "robots" and "nofollow" in (attributes.get("content") or "").lower():
            return True
    return False
