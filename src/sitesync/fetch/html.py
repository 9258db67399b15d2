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


#: Searched for in the lower-cased part of a page too large to parse, one after the other,
#: not as one pattern: ``<a\s[^>]*?\bhref`` backtracks over the rest of the page for every
#: ``<a `` that has no ``>`` (quadratic in the tail).
_ANCHOR_START = re.compile(rb"<a\s")
_EQUALS = re.compile(rb"\s*=")
_WORD_BYTES = frozenset(b"abcdefghijklmnopqrstuvwxyz0123456789_")


def count_anchors(html: bytes | memoryview) -> int:
    """Anchors with an href in ``html``, counted without parsing it, in linear time.

    An anchor's href is looked for up to the end of its tag (the next ``>``); when it has
    none, no anchor that starts before that ``>`` has one either, so the scan goes on from
    there: no byte is read more than a bounded number of times.
    """
    data = bytes(html).lower()
    count = 0
    position = 0
    tag_end = -1
    while (start := _ANCHOR_START.search(data, position)) is not None:
        if tag_end < start.end():
            found = data.find(b">", start.end())
            tag_end = len(data) if found < 0 else found
        href_end = _href_end(data, start.end(), tag_end)
        if href_end is None:
            position = tag_end
            continue
        count += 1
        position = href_end
    return count


def _href_end(data: bytes, start: int, end: int) -> int | None:
    r"""Where the first ``href\s*=`` (``href`` a word of its own) in ``data[start:end]`` ends."""
    at = data.find(b"href", start, end)
    while at >= 0:
        if at == 0 or data[at - 1] not in _WORD_BYTES:
            equals = _EQUALS.match(data, at + 4, end)
            if equals is not None:
                return equals.end()
        at = data.find(b"href", at + 4, end)
    return None
