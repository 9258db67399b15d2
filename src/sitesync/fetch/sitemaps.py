"""Sitemaps as a discovery source: robots.txt ``Sitemap:`` lines and ``/sitemap.xml``.

Parsing extracts ``<loc>`` values with a regular expression instead of an XML parser:
sitemaps in the wild are often malformed, and never expanding entities or DTDs makes
XXE and entity-expansion bombs impossible by construction. Gzipped sitemaps are
decompressed with a cap, so a gzip bomb stops at ``max_bytes``.
"""

from __future__ import annotations

import html
import re
import zlib
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from sitesync.fetch.base import FetchOutcome, FetchResult

_LOC = re.compile(rb"<(?:\w+:)?loc>\s*(.*?)\s*</(?:\w+:)?loc>", re.IGNORECASE | re.DOTALL)
_INDEX = re.compile(rb"<(?:\w+:)?sitemapindex[\s>]", re.IGNORECASE)


@dataclass(frozen=True, slots=True)
class Sitemap:
    urls: tuple[str, ...]  # page URLs (from a <urlset>)
    children: tuple[str, ...]  # nested sitemap URLs (from a <sitemapindex>)


class SitemapTooLarge(Exception):
    """A sitemap decompressed past the cap."""


def gunzip_capped(data: bytes, max_bytes: int) -> bytes:
    inflater = zlib.decompressobj(wbits=16 + zlib.MAX_WBITS)
    out = inflater.decompress(data, max_bytes + 1)
    if len(out) > max_bytes:
        raise SitemapTooLarge(f"gzipped sitemap inflates past {max_bytes} bytes")
    return out


def parse_sitemap(body: bytes, *, max_bytes: int, max_urls: int = 50_000) -> Sitemap:
    """URLs of a sitemap or sitemap index body (gzipped or not)."""
    if body[:2] == b"\x1f\x8b":
        body = gunzip_capped(body, max_bytes)
    locs = []
    for match in _LOC.finditer(body):
        loc = html.unescape(match.group(1).decode("utf-8", errors="replace")).strip()
        if loc:
            locs.append(loc)
        if len(locs) >= max_urls:
            break
    if _INDEX.search(body[:4096]):
        return Sitemap(urls=(), children=tuple(locs))
    return Sitemap(urls=tuple(locs), children=())


Fetch = Callable[[str], Awaitable[FetchResult]]
#: How a body is parsed (body, max_urls): :func:`parse_sitemap` off the event loop.
Parse = Callable[[bytes, int], Awaitable[Sitemap]]


async def collect_sitemap_urls(
    roots: list[str],
    fetch: Fetch,
    *,
    max_bytes: int,
    max_sitemaps: int = 50,
    max_urls: int = 100_000,
    parse: Parse | None = None,
) -> tuple[list[str], list[str]]:
    """Walk sitemaps breadth first from ``roots``; return (page URLs, problems)."""
    queue = list(dict.fromkeys(roots))
    seen = set(queue)
    urls: list[str] = []
    problems: list[str] = []
    fetched = 0
    while queue and fetched < max_sitemaps and len(urls) < max_urls:
        sitemap_url = queue.pop(0)
        fetched += 1
        result = await fetch(sitemap_url)
        if result.outcome is not FetchOutcome.SUCCESS or result.status != 200:
            if result.status != 404:  # no /sitemap.xml is normal, not a problem
                problems.append(f"{sitemap_url}: {result.error or result.outcome.value}")
            continue
        try:
            if parse is not None:
                parsed = await parse(result.body, max_urls)
            else:
                parsed = parse_sitemap(result.body, max_bytes=max_bytes, max_urls=max_urls)
        except (SitemapTooLarge, zlib.error) as exc:
            problems.append(f"{sitemap_url}: {exc}")
            continue
        urls.extend(parsed.urls[: max_urls - len(urls)])
        for child in parsed.children:
            if child not in seen:
                seen.add(child)
                queue.append(child)
    return urls, problems
