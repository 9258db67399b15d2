"""Link extraction from HTML with lexbor (selectolax): the crawl's hot path."""

from __future__ import annotations

from selectolax.lexbor import LexborHTMLParser

from sitesync.urls import resolve_link


def extract_links(body: str | bytes, base_url: str) -> list[str]:
    """Normalized, crawlable URLs of every ``<a href>`` (and ``<base href>``-aware)."""
    tree = LexborHTMLParser(body)
    base = tree.css_first("base[href]")
    if base is not None:
        base_href = base.attributes.get("href")
        if base_href:
            base_url = resolve_link(base_url, base_href) or base_url
    # dict, not set: admission order (and so crawl order) must not depend on hashing.
    hrefs = dict.fromkeys(node.attributes.get("href") for node in tree.css("a[href]"))
    links = []
    for href in hrefs:
        if href:
            url = resolve_link(base_url, href)
            if url is not None:
                links.append(url)
    return links
