"""A page's HTML as the crawl reads it: parsed once, its links extracted.

The crawl's hot path. A page attempt decodes the body once and extracts its links here
(:func:`extract_links`); the tree the extraction parsed travels with the links
(:class:`PageLinks`) to the plugins, which read the same text and the same tree instead of
decoding and parsing the page again. Lexbor (selectolax) does the parsing.
"""

from __future__ import annotations

import re
from typing import Any

from selectolax.lexbor import LexborHTMLParser

from sitesync.urls import LinkResolver

__all__ = ["PageLinks", "count_anchors", "extract_links"]


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
    resolver = LinkResolver(base_url)
    for base in tree.tags("base"):
        base_href = base.attributes.get("href")
        if base_href:
            resolver = LinkResolver(resolver.resolve(base_href) or base_url)
            break
    anchors = tree.tags("a")
    if limit is not None and len(anchors) > limit:
        return _capped_links(tree, anchors, resolver, limit)
    # dict, not set: admission order (and so crawl order) must not depend on hashing.
    hrefs = dict.fromkeys(node.attributes.get("href") for node in anchors)
    resolve = resolver.resolve
    links = []
    for href in hrefs:
        if href:
            url = resolve(href)
            if url is not None:
                links.append(url)
    return PageLinks(links, tree)


def _capped_links(
    tree: LexborHTMLParser, anchors: list[Any], resolver: LinkResolver, limit: int
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
        url = resolver.resolve(href)
        if url is not None:
            links.append(url)
    return PageLinks(links, tree, truncated)


#: An anchor with an href, as counted in the part of a page too large to parse.
_ANCHOR_WITH_HREF = re.compile(rb"<a\s[^>]*?\bhref\s*=", re.IGNORECASE)


def count_anchors(html: bytes | memoryview) -> int:
    """Anchors with an href in ``html``, counted without parsing it (constant memory)."""
    return sum(1 for _ in _ANCHOR_WITH_HREF.finditer(html))
