"""Every parser of site-controlled bytes runs in time linear in its input (issue 29).

The pathological inputs found for each (and a few of the same families), at 1x, 10x and
100x size: a case fails when its time grows faster than about linearly, or when its largest
input takes longer than its budget. Before the fixes of issue 29, ``<urlset><loc>`` and 2,000
spaces took 7.4 s; ``<a `` 10,000 times 2.9 s; punycode of 160 KB 2.0 s; ``<`` 40,000 times
in a record's similarity 1.6 s; the largest inputs here did not finish in 30 s.
"""

from __future__ import annotations

import gzip

import pytest
from protego import Protego
from selectolax.lexbor import LexborHTMLParser

from sitesync.cli.domain_files import read_domain_list
from sitesync.fetch.base import parse_retry_after
from sitesync.fetch.decode import declared_charset, decode_html_checked
from sitesync.fetch.html import count_anchors, extract_links
from sitesync.fetch.sitemaps import parse_sitemap
from sitesync.fetch.text import header_text
from sitesync.plugins import ParsedPage
from sitesync.plugins.builtin.navigation import _candidates
from sitesync.plugins.builtin.page_metadata import _word_count
from sitesync.store._records import _shingles
from sitesync.urls import LinkResolver
from tests.complexity._growth import Case, assert_linear
from tests.unit.test_builtin_plugins import artifact

MB = 1024 * 1024


def sitemap(body: bytes) -> object:
    return parse_sitemap(body, max_bytes=20 * MB, max_urls=100_000)


def html_as(charset: str) -> object:
    def decode(body: bytes) -> object:
        return decode_html_checked(body, f"text/html; charset={charset}")

    return decode


SITEMAPS = [
    Case("sitemap: <loc> never closed", lambda n: b"<urlset><loc>" + b" " * n, sitemap, 100_000),
    Case("sitemap: <loc> repeated", lambda n: b"<loc>" * n, sitemap, 20_000),
    Case("sitemap: </loc> repeated", lambda n: b"<urlset>" + b"</loc>" * n, sitemap, 16_000),
    Case(
        "sitemap: <ns:loc> with long prefixes",
        lambda n: b"<" + b"x" * n + b":loc>",
        sitemap,
        100_000,
    ),
    Case(
        "sitemap: tiny entries",
        lambda n: b"<urlset>" + b"<loc>a</loc>" * (n // 6_000),
        sitemap,
        12_000,
    ),
    Case("sitemap: empty entries", lambda n: b"<loc></loc>" * (n // 11), sitemap, 5_500),
    Case(
        "sitemap: <lastmod> never closed",
        lambda n: b"<urlset><loc>http://a.test/</loc>" + b"<lastmod>" * (n // 9),
        sitemap,
        10_000,
    ),
    Case(
        "sitemap: entries with dates",
        lambda n: b"<url><loc>http://a.test/</loc><lastmod>2026-01-01</lastmod></url>" * (n // 66),
        sitemap,
        1_500,
    ),
    Case(
        "sitemap: a numeric reference of many digits",
        lambda n: b"<loc>&#" + b"1" * n + b"</loc>",
        sitemap,
        1_000,
    ),
    Case("sitemap: entities", lambda n: b"<loc>" + b"&amp;" * (n // 5) + b"</loc>", sitemap, 5_000),
    Case(
        "sitemap: gzip of <loc> never closed",
        lambda n: gzip.compress(b"<urlset><loc>" + b" " * n, 1),
        sitemap,
        100_000,
    ),
    Case("sitemap: text, one line", lambda n: b"http://a.test/" + b"a" * n, sitemap, 100_000),
    Case("sitemap: text, tiny lines", lambda n: b"http://a.test/\n" * (n // 15), sitemap, 7_500),
    Case("sitemap: text, blank lines", lambda n: b"x\n" + b"\n" * n, sitemap, 30_000),
]

ANCHORS = [
    Case("anchors: <a  with no >", lambda n: b"<a " * (n // 3), count_anchors, 30_000),
    Case("anchors: <a href= with no >", lambda n: b"<a href=" * (n // 8), count_anchors, 8_000),
    Case("anchors: href without =", lambda n: b"<a " + b"href " * (n // 5), count_anchors, 10_000),
    Case("anchors: whole anchors", lambda n: b"<a href=/x>" * (n // 11), count_anchors, 8_000),
]

DECODING = [
    Case("decode: punycode", lambda n: b"a" * n + b"-" + b"a" * n, html_as("punycode"), 20_000),
    Case("decode: utf-7", lambda n: b"+" + b"A" * n, html_as("utf-7"), 20_000),
    Case(
        "decode: iso-2022-jp escapes",
        lambda n: b"\x1b$B" * (n // 3),
        html_as("iso-2022-jp"),
        20_000,
    ),
    Case("decode: gb18030 invalid", lambda n: b"\x81" * n, html_as("gb18030"), 20_000),
    Case(
        "decode: utf-16 lone surrogates",
        lambda n: b"\x00\xd8" * (n // 10_000),
        html_as("utf-16"),
        20_000,
    ),
    Case(
        "decode: windows-1252", lambda n: bytes(range(256)) * (n // 256), html_as("latin1"), 10_240
    ),
    Case("decode: invalid utf-8", lambda n: b"\xff" * n, html_as("utf-8"), 20_000),
    Case(
        "decode: <meta> prescan",
        lambda n: b"<meta charset=" * (n // 14),
        html_as("nonsense"),
        20_000,
    ),
]

SIMILARITY = [
    Case("similarity: < repeated", lambda n: b"<" * n, _shingles, 5_120),
    Case("similarity: <script never closed", lambda n: b"<script>" * (n // 8), _shingles, 5_120),
    Case("similarity: <style never closed", lambda n: b"<style " * (n // 7), _shingles, 5_120),
    Case("similarity: <!-- never closed", lambda n: b"<!--" * (n // 4), _shingles, 5_120),
    Case("similarity: words", lambda n: b"word " * (n // 5), _shingles, 5_120),
]


class _Parsed(str):
    """A robots.txt (its size is the input's) with its rules parsed beforehand: only the
    matching is timed."""

    def __init__(self, body: str) -> None:
        self.rules = Protego.parse(body)
        self.rules.can_fetch("http://a.test/", "sitesync")  # protego indexes on first use


ROBOTS = [
    Case(
        "robots: one long line",
        lambda n: "User-agent: *\nDisallow: /" + "a" * n,
        Protego.parse,
        5_120,
    ),
    Case(
        "robots: many rules",
        lambda n: "User-agent: *\n" + "Disallow: /a\n" * (n // 2_560),
        Protego.parse,
        5_120,
    ),
    Case(
        "robots: wildcards",
        lambda n: "User-agent: *\nDisallow: /" + "*a" * (n // 2),
        Protego.parse,
        5_120,
    ),
    Case(
        "robots: many agents",
        lambda n: "User-agent: x\n" * (n // 14) + "Disallow: /\n",
        Protego.parse,
        5_120,
    ),
    Case("robots: carriage returns", lambda n: "\r" * n, Protego.parse, 5_120),
    # Matching, as well as parsing: every wildcard rule of the group is tried for a URL.
    Case(
        "robots check: wildcard rules",
        lambda n: _Parsed(
            "User-agent: *\n" + "".join(f"Disallow: /*a{i}$\n" for i in range(n // 18))
        ),
        lambda robots: robots.rules.can_fetch("http://a.test/" + "a" * 2_000, "sitesync"),
        5_120,
    ),
    Case(
        "robots check: one rule of many wildcards",
        lambda n: _Parsed("User-agent: *\nDisallow: /" + "*a" * (n // 2) + "*b"),
        lambda robots: robots.rules.can_fetch("http://a.test/" + "a" * 2_000, "sitesync"),
        5_120,
    ),
    Case(
        "robots: sitemaps", lambda n: "Sitemap: http://a.test/\n" * (n // 24), Protego.parse, 5_120
    ),
]

HEADERS = [
    Case(
        "headers: many parameters",
        lambda n: "text/html" + ";a=b" * (n // 4),
        declared_charset,
        8_000,
    ),
    Case("headers: Latin-1 bytes", lambda n: "caf\udce9" * (n // 4), header_text, 8_000),
    Case(
        "headers: Retry-After",
        lambda n: "Mon, " + " " * n + "GMT",
        lambda value: parse_retry_after(503, {"retry-after": value}),
        8_000,
    ),
]


def links(html: str) -> object:
    return extract_links(html, "http://site.test/", limit=1000)


class Parsed(str):
    """A page's HTML, parsed beforehand: the case times a plugin, not lexbor."""

    page: ParsedPage


def parsed(html: str) -> Parsed:
    text = Parsed(html)
    text.page = ParsedPage(artifact(html))
    assert text.page.tree is not None
    return text


def word_count(html: Parsed) -> object:
    return _word_count(html.page.tree, html.page)


def navigation(html: Parsed) -> object:
    return list(_candidates(html.page))


HTML = [
    Case("html: one long line", lambda n: "<p>" + "word " * (n // 5), links, 40_000),
    Case("html: many anchors", lambda n: '<a href="/x">' * (n // 13), links, 8_000),
    Case("html: unclosed formatting", lambda n: "<b><i><u>" * (n // 9), links, 8_000),
    Case("html: nested tables", lambda n: "<table>" * (n // 7), links, 20_000),
    Case("html: nested spans", lambda n: "<span>" * (n // 6), links, 10_000),
    Case("html: duplicate attributes", lambda n: "<a " + "x=1 " * (n // 4) + ">", links, 20_000),
    Case(
        "html: scripts at every nesting level",
        lambda n: parsed("<body>" + "<span><script>a</script>" * (n // 24)),
        word_count,
        5_000,
    ),
    Case(
        "html: anchors deep inside a nav",
        lambda n: parsed("<nav>" + "<span>" * (n // 20) + '<a href="/x">' * (n // 20)),
        navigation,
        2_000,
    ),
    Case(
        "html: nested svg styles",
        lambda n: parsed("<body><svg>" + "<style>" * (n // 7)),
        word_count,
        2_000,
    ),
]

RESOLVE = LinkResolver("http://site.test/a/b").resolve
URLS = [
    Case("urls: dot segments", lambda n: "../" * (n // 3), RESOLVE, 1_000),
    Case("urls: path parameters", lambda n: "/x;a" * (n // 4), RESOLVE, 1_000),
    Case("urls: query pairs", lambda n: "/?" + "a=1&" * (n // 4), RESOLVE, 1_000),
    Case("urls: long host", lambda n: "http://" + "a." * (n // 2) + "test/", RESOLVE, 1_000),
]

DOMAINS = [
    Case(
        "domains: numeric hosts",
        lambda n: "0x7f.1\n2852039166\n" * (n // 500),
        read_domain_list,
        2_000,
    ),
    Case(
        "domains: distinct hosts with profile cells",
        lambda n: (
            "domain,headers,cookies\n"
            + "".join(f"h{i}.example,X-A: 1; X-B: 2,c=1\n" for i in range(n // 500))
        ),
        read_domain_list,
        2_000,
    ),
]

CASES = SITEMAPS + ANCHORS + DECODING + SIMILARITY + ROBOTS + HEADERS + HTML + URLS + DOMAINS


@pytest.mark.parametrize("case", CASES, ids=str)
def test_parse_time_grows_linearly(case: Case) -> None:
    assert_linear(case)


def test_the_parsers_still_read_what_they_read() -> None:
    """The linear scans keep their results: a few spot checks of the inputs above."""
    assert sitemap(b"<urlset><loc>http://a.test/</loc><LOC> http://b.test/?a=1&amp;b=2 </Loc>") == (
        parse_sitemap(
            b"<urlset><loc>http://a.test/</loc><x:loc>http://b.test/?a=1&b=2</x:loc>", max_bytes=MB
        )
    )
    assert count_anchors(b"<a href=1><a name=x><A\tHREF = 2 >") == 2
    assert decode_html_checked(b"caf\xe9", "text/html; charset=punycode") == ("caf\ufffd", False)
    assert LexborHTMLParser("<span>" * 3).body is not None
