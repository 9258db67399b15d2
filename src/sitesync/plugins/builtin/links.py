"""Link extraction from HTML with lexbor (selectolax): the crawl's hot path.

Also the built-in plugin ``links``, which records what the extraction found.
"""

from __future__ import annotations

from selectolax.lexbor import LexborHTMLParser

from sitesync.models import AssetRecord, CrawlArtifact
from sitesync.plugins.base import ParsedPage, PluginContext, record_key
from sitesync.plugins.builtin._common import SiteTest, data_hash, is_answered_html
from sitesync.urls import resolve_link


class PageLinks(list[str]):
    """The links of a page, and the parsed page they came from: the plugins reuse the tree
    instead of parsing the page a second time."""

    __slots__ = ("tree",)

    def __init__(self, links: list[str], tree: LexborHTMLParser) -> None:
        super().__init__(links)
        self.tree = tree


def extract_links(body: str | bytes, base_url: str) -> PageLinks:
    """Normalized, crawlable URLs of every ``<a href>`` (and ``<base href>``-aware)."""
    tree = LexborHTMLParser(body)
    # Elements by tag name rather than CSS: lexbor builds its CSS engine per document, and
    # that costs about as much as the parse itself.
    for base in tree.tags("base"):
        base_href = base.attributes.get("href")
        if base_href:
            base_url = resolve_link(base_url, base_href) or base_url
            break
    # dict, not set: admission order (and so crawl order) must not depend on hashing.
    hrefs = dict.fromkeys(node.attributes.get("href") for node in tree.tags("a"))
    links = []
    for href in hrefs:
        if href:
            url = resolve_link(base_url, href)
            if url is not None:
                links.append(url)
    return PageLinks(links, tree)


class LinksPlugin:
    """Built-in plugin ``links``: one record of kind ``links`` per HTML page.

    Its data lists the page's links as internal (same site) or external, and which ones the
    page asks crawlers not to follow (``rel=nofollow``, or ``<meta name=robots
    content=nofollow>`` for all of them). The links come from ``artifact.links``, extracted
    once by the crawl; only ``rel=nofollow`` anchors are looked up again.
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
        data = {
            "internal": internal,
            "external": external,
            "nofollow": nofollow,
            "page_nofollow": page_nofollow,
        }
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
