"""Sitemaps as a discovery source: robots.txt ``Sitemap:`` lines and ``/sitemap.xml``.

XML sitemaps are read by a scan for ``<loc>`` elements instead of an XML parser: sitemaps
in the wild are often malformed, and never expanding entities or DTDs makes XXE and
entity-expansion bombs impossible by construction. The scan runs in time linear in the
body (a site chooses the bytes: no pattern may backtrack over them). Plain-text sitemaps
(one URL a line) are read too. Gzipped sitemaps are decompressed with a cap, so a gzip
bomb stops at ``max_bytes``.
"""

from __future__ import annotations

import datetime
import html
import re
import zlib
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass

from sitesync.fetch.base import FetchOutcome, FetchResult

# Each is searched from a position on, never backtracks past the next ``<``: linear.
_LOC_OPEN = re.compile(rb"<(?:\w+:)?loc>", re.IGNORECASE)
_LOC_CLOSE = re.compile(rb"</(?:\w+:)?loc>", re.IGNORECASE)
_INDEX = re.compile(rb"<(?:\w+:)?sitemapindex[\s>]", re.IGNORECASE)
_LASTMOD_OPEN = re.compile(rb"<(?:\w+:)?lastmod>", re.IGNORECASE)
_LASTMOD_CLOSE = re.compile(rb"</(?:\w+:)?lastmod>", re.IGNORECASE)
#: "2026-11-28T14:05:00.123456+05:30" is 32 bytes: a longer <lastmod> is no date.
MAX_LASTMOD_BYTES = 64
_W3C_DATE = re.compile(
    r"(\d{4})(?:-(\d{2})(?:-(\d{2})(?:T(\d{2}):(\d{2})(?::(\d{2})(?:\.\d+)?)?"
    r"(Z|[+-]\d{2}:\d{2})?)?)?)?"
)
_BOM = b"\xef\xbb\xbf"
#: A longer ``<loc>`` is no URL anyone can fetch (sitemaps.org allows 2,048 characters): it
#: is read as an empty entry, its text never copied nor unescaped.
MAX_LOC_BYTES = 64 * 1024


@dataclass(frozen=True, slots=True)
class Sitemap:
    urls: tuple[str, ...]  # page URLs (from a <urlset>)
    children: tuple[str, ...]  # nested sitemap URLs (from a <sitemapindex>)
    # (page URL, its <lastmod> as epoch seconds, read late: see lastmod_time) for the
    # page URLs that have a readable one.
    dates: tuple[tuple[str, float], ...] = ()


@dataclass(frozen=True, slots=True)
class SitemapEntry:
    """One entry of a sitemap: its ``<loc>`` (or a text sitemap's line), and its
    ``<lastmod>`` (None: none, or not a W3C date)."""

    loc: str
    lastmod: float | None = None


class SitemapTooLarge(Exception):
    """A sitemap decompressed past the cap."""


def gunzip_capped(data: bytes, max_bytes: int) -> bytes:
    inflater = zlib.decompressobj(wbits=16 + zlib.MAX_WBITS)
    out = inflater.decompress(data, max_bytes + 1)
    if len(out) > max_bytes:
        raise SitemapTooLarge(f"gzipped sitemap inflates past {max_bytes} bytes")
    return out


def parse_sitemap(body: bytes, *, max_bytes: int, max_urls: int = 50_000) -> Sitemap:
    """URLs of a sitemap or sitemap index body (gzipped or not, XML or plain text).

    At most ``max_urls`` entries are read (empty ones count too): a million tiny entries
    cost no more than the cap's worth.
    """
    if body[:2] == b"\x1f\x8b":
        body = gunzip_capped(body, max_bytes)
    locs = []
    dates = []
    for count, entry in enumerate(sitemap_entries(body), start=1):
        if entry.loc:
            locs.append(entry.loc)
            if entry.lastmod is not None:
                dates.append((entry.loc, entry.lastmod))
        if count >= max_urls:
            break
    if _INDEX.search(body[:4096]):
        return Sitemap(urls=(), children=tuple(locs))
    return Sitemap(urls=tuple(locs), children=(), dates=tuple(dates))


def sitemap_entries(body: bytes) -> Iterator[SitemapEntry]:
    """The entries of a (decompressed) sitemap, in order: XML, or text when the body does
    not start with markup."""
    start = body[:1024].lstrip(b" \t\r\n").removeprefix(_BOM).lstrip(b" \t\r\n")
    if start and not start.startswith(b"<"):
        return _text_entries(body)
    return _xml_entries(body)


def _xml_entries(body: bytes) -> Iterator[SitemapEntry]:
    opening = _LOC_OPEN.search(body)
    while opening is not None:
        closing = _LOC_CLOSE.search(body, opening.end())
        if closing is None:
            return  # no later <loc> can close either: the rest is not read again
        raw = body[opening.end() : closing.start()].strip()
        loc = _text(raw) if len(raw) <= MAX_LOC_BYTES else ""
        # The entry's <lastmod> follows its <loc> (the schema's order), before the next
        # <loc>: each stretch of the body is searched once, so the walk stays linear.
        following = _LOC_OPEN.search(body, closing.end())
        end = following.start() if following is not None else len(body)
        yield SitemapEntry(loc=loc, lastmod=_lastmod(body, closing.end(), end))
        opening = following


def _lastmod(body: bytes, start: int, end: int) -> float | None:
    opening = _LASTMOD_OPEN.search(body, start, end)
    if opening is None:
        return None
    closing = _LASTMOD_CLOSE.search(body, opening.end(), end)
    if closing is None or closing.start() - opening.end() > MAX_LASTMOD_BYTES:
        return None
    return lastmod_time(body[opening.end() : closing.start()].decode("ascii", "replace"))


def lastmod_time(text: str) -> float | None:
    """A W3C datetime (sitemaps.org's ``<lastmod>``) as epoch seconds, read as late as it
    can mean: a date alone is the end of that day anywhere on Earth (UTC-12), a time without
    a zone the latest zone's (UTC-12): a page is never taken as older than it may be."""
    match = _W3C_DATE.fullmatch(text.strip())
    if match is None:
        return None
    year, month, day, hour, minute, second, zone = match.groups()
    try:
        when = datetime.datetime(
            int(year), int(month or 1), int(day or 1), int(hour or 0), int(minute or 0),
            int(second or 0), tzinfo=datetime.UTC,
        )  # fmt: skip
    except ValueError:
        return None
    if hour is None:  # a date (or month, or year) alone: its last moment, wherever
        step = datetime.timedelta(days=1) if day else _period(when, month is not None)
        return (when + step).timestamp() + 12 * 3600
    if zone is None:
        return when.timestamp() + 12 * 3600
    if zone != "Z":
        sign = 1 if zone[0] == "+" else -1
        when -= sign * datetime.timedelta(hours=int(zone[1:3]), minutes=int(zone[4:6]))
    return when.timestamp()


def _period(start: datetime.datetime, monthly: bool) -> datetime.timedelta:
    """The length of the month (``monthly``) or year that starts at ``start``."""
    if monthly:
        following = (start.replace(day=28) + datetime.timedelta(days=4)).replace(day=1)
    else:
        following = start.replace(year=start.year + 1)
    return following - start


def _text(raw: bytes) -> str:
    """A ``<loc>``'s text, its character references resolved. A reference Python cannot
    resolve (``&#`` and thousands of digits: over its int conversion limit) leaves the
    text as it is: a bad entry, never an exception for the crawl."""
    text = raw.decode("utf-8", errors="replace")
    try:
        return html.unescape(text).strip()
    except ValueError:
        return text


def _text_entries(body: bytes) -> Iterator[SitemapEntry]:
    """A text sitemap (sitemaps.org): one absolute URL a line. Every line is an entry (an
    empty one unless it holds a URL), so that the cap on entries bounds the lines read."""
    body = body.removeprefix(_BOM)
    position = 0
    while position < len(body):
        end = body.find(b"\n", position)
        end = len(body) if end < 0 else end
        text = body[position:end].strip().decode("utf-8", errors="replace")
        yield SitemapEntry(loc=text if text.startswith(("http://", "https://")) else "")
        position = end + 1


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
    dates: dict[str, float] | None = None,
) -> tuple[list[str], list[str]]:
    """Walk sitemaps breadth first from ``roots``; return (page URLs, problems). The pages'
    ``<lastmod>`` dates go into ``dates`` (by page URL, as listed), if given."""
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
        if dates is not None:
            dates.update(parsed.dates)
        for child in parsed.children:
            if child not in seen:
                seen.add(child)
                queue.append(child)
    return urls, problems
