"""Link extraction from HTML with lexbor (selectolax): the crawl's hot path.

Also the built-in plugin ``links``, which records what the extraction found.
"""

from __future__ import annotations

import re
from typing import Any

from selectolax.lexbor import LexborHTMLParser

from sitesync.models import AssetRecord, CrawlArtifact
from sitesync.plugins.base import ParsedPage, PluginContext, record_key
from sitesync.plugins.builtin._common import SiteTest, data_hash, is_answered_html
from sitesync.urls import resolve_link


class PageLinks(list[str]):
    """The links of a page, and the parsed page they came from: the plugins reuse the tree
    instead of parsing the page a second time. ``truncated``: links left out by the cap."""

    __slots__ = ("tree", "truncated")

    def __init__(self, links: list[str], tree: LexborHTMLParser, truncated: int = 0) -> None:
        super().__init__(links)
        self.tree = tree
        self.truncated = truncated


def extract_links(body: str | bytes, base_url: str, *, limit: int | None = None) -> PageLinks:
    """Normalized, crawlable URLs of every ``<a href>`` (and ``<base href>``-aware).

    At most ``limit`` distinct hrefs are resolved; the anchors after them are only counted
    (``truncated``), so a page of a million links costs its parse, not a million URLs.
    """
    tree = LexborHTMLParser(body)
    # Elements by tag name rather than CSS: lexbor builds its CSS engine per document, and
    # that costs about as much as the parse itself.
    for base in tree.tags("base"):
        base_href = base.attributes.get("href")
        if base_href:
            base_url = resolve_link(base_url, base_href) or base_url
            break
    anchors = tree.tags("a")
    if limit is not None and len(anchors) > limit:
        return _capped_links(tree, anchors, base_url, limit)
    # dict, not set: admission order (and so crawl order) must not depend on hashing.
    hrefs = dict.fromkeys(node.attributes.get("href") for node in anchors)
    links = []
    for href in hrefs:
        if href:
            url = resolve_link(base_url, href)
            if url is not None:
                links.append(url)
    return PageLinks(links, tree)


def _capped_links(
    tree: LexborHTMLParser, anchors: list[Any], base_url: str, limit: int
) -> PageLinks:
    """The first ``limit`` distinct hrefs resolved, the anchors with an href after them counted."""
    seen: set[str] = set()
    links: list[str] = []
    truncated = 0
    for node in anchors:
        href = node.attributes.get("href")
        if not href:
            continue
        if len(seen) >= limit:
            truncated += href not in seen
            continue
        if href in seen:
            continue
        seen.add(href)
        url = resolve_link(base_url, href)
        if url is not None:
            links.append(url)
    return PageLinks(links, tree, truncated)


#: An anchor with an href, as counted in the part of a page too large to parse.
_ANCHOR_WITH_HREF = re.compile(rb"<a\s[^>]*?\bhref\s*=", re.IGNORECASE)


def count_anchors(html: bytes | memoryview) -> int:
    """Anchors with an href in ``html``, counted without parsing it (constant memory)."""
    return sum(1 for _ in _ANCHOR_WITH_HREF.finditer(html))


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
        url = artifact.final_url
        key = record_key(LINKS_KIND, url)
        record = AssetRecord(
            key=key, kind=LINKS_KIND, url=url, content_hash=data_hash(data), data=data
        )
        return (record,)


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
