"""What the linear-time parsers of site bytes read (issue 29): sitemaps as XML, text and
gzip, and page encodings as a browser chooses them (WHATWG labels only)."""

from __future__ import annotations

import datetime
import gzip

import pytest

from sitesync.fetch.decode import decode_html_checked, page_encoding
from sitesync.fetch.encodings import encoding_for_label
from sitesync.fetch.sitemaps import (
    Sitemap,
    SitemapEntry,
    lastmod_time,
    parse_sitemap,
    sitemap_entries,
)

MB = 1024 * 1024
URLSET = b"""<?xml version="1.0" encoding="UTF-8"?>
<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">
  <url><loc>http://a.test/1</loc><lastmod>2026-01-01</lastmod></url>
  <url><LOC>
     http://a.test/2?x=1&amp;y=2
  </LOC></url>
  <url><image:loc>http://a.test/3.png</image:loc></url>
  <url><loc></loc></url>
</urlset>"""


def test_an_xml_sitemap_gives_its_locs_in_order() -> None:
    parsed = parse_sitemap(URLSET, max_bytes=MB)
    # 2026-01-01 read as late as it can mean: the end of that day at UTC-12.
    jan_2_noon_utc = 1767355200.0
    assert parsed == Sitemap(
        urls=("http://a.test/1", "http://a.test/2?x=1&y=2", "http://a.test/3.png"),
        children=(),
        dates=(("http://a.test/1", jan_2_noon_utc),),
    )
    first = next(iter(sitemap_entries(URLSET)))
    assert first == SitemapEntry(loc="http://a.test/1", lastmod=jan_2_noon_utc)


def test_lastmod_is_a_w3c_date_read_as_late_as_it_can_mean() -> None:
    utc = datetime.UTC
    assert (
        lastmod_time("2026-01-01T10:00:00Z")
        == datetime.datetime(2026, 1, 1, 10, tzinfo=utc).timestamp()
    )
    assert (
        lastmod_time("2026-01-01T10:00+02:00")
        == datetime.datetime(2026, 1, 1, 8, tzinfo=utc).timestamp()
    )
    assert (
        lastmod_time("2026-01-01T10:00:00.25-05:00")
        == datetime.datetime(2026, 1, 1, 15, tzinfo=utc).timestamp()
    )
    # No zone: the latest one's (UTC-12); a date, month or year alone: its end there.
    assert (
        lastmod_time("2026-01-01T10:00:00")
        == datetime.datetime(2026, 1, 1, 22, tzinfo=utc).timestamp()
    )
    assert lastmod_time("2026-02") == datetime.datetime(2026, 3, 1, 12, tzinfo=utc).timestamp()
    assert lastmod_time("2026") == datetime.datetime(2027, 1, 1, 12, tzinfo=utc).timestamp()
    for junk in ("", "yesterday", "2026-13-01", "2026-02-30", "20260101", "2026-01-01T25:00Z"):
        assert lastmod_time(junk) is None, junk
    # A <lastmod> belongs to the <loc> before it; one too long to be a date is none.
    body = (b"<urlset><url><loc>http://a.test/1</loc></url><url><loc>http://a.test/2</loc>"
            b"<lastmod>2026-01-01T00:00:00Z</lastmod></url><url><loc>http://a.test/3</loc>"
            b"<lastmod>" + b"2" * 100 + b"</lastmod></url></urlset>")  # fmt: skip
    assert [e.lastmod is not None for e in sitemap_entries(body)] == [False, True, False]


def test_a_sitemap_index_gives_children_and_gzip_is_read() -> None:
    index = b"<sitemapindex><sitemap><loc>http://a.test/s1.xml</loc></sitemap></sitemapindex>"
    parsed = parse_sitemap(gzip.compress(index), max_bytes=MB)
    assert parsed == Sitemap(urls=(), children=("http://a.test/s1.xml",))


def test_a_text_sitemap_gives_one_url_a_line() -> None:
    body = b"\xef\xbb\xbfhttp://a.test/1\r\n\n  https://a.test/2  \nnot a url\nhttp://a.test/3"
    assert parse_sitemap(body, max_bytes=MB).urls == (
        "http://a.test/1", "https://a.test/2", "http://a.test/3"
    )  # fmt: skip


def test_a_loc_never_closed_ends_the_scan_and_the_entry_cap_counts_empty_ones() -> None:
    assert parse_sitemap(b"<loc>http://a.test/1</loc><loc>http://a.test/2", max_bytes=MB).urls == (
        "http://a.test/1",
    )
    body = b"<loc></loc>" * 10 + b"<loc>http://a.test/late</loc>"
    assert parse_sitemap(body, max_bytes=MB, max_urls=10).urls == ()


def test_a_loc_python_cannot_unescape_or_too_long_for_a_url_is_a_bad_entry() -> None:
    """``&#`` and 5,000 digits made html.unescape raise (Python's int conversion limit): the
    exception left parse_sitemap and the sitemap walk."""
    body = b"<loc>&#" + b"1" * 5000 + b"</loc><loc>" + b"a" * (65 * 1024) + b"</loc>"
    body += b"<loc>http://a.test/ok</loc>"
    assert parse_sitemap(body, max_bytes=MB).urls == ("&#" + "1" * 5000, "http://a.test/ok")


@pytest.mark.parametrize(
    ("label", "encoding"),
    [
        ("latin1", "windows-1252"),
        (" ISO-8859-1 ", "windows-1252"),
        ("ascii", "windows-1252"),
        ("Shift_JIS", "Shift_JIS"),
        ("utf-16", "UTF-16LE"),
        ("iso-2022-kr", "replacement"),
        ("punycode", None),
        ("utf-7", None),
        ("rot13", None),
        ("latin-1", None),  # Python's alias, no WHATWG label
        ("unicode_escape", None),
        ("\u212aoi8-r", None),  # KELVIN SIGN: only ASCII case is folded
    ],
)
def test_only_whatwg_labels_name_an_encoding(label: str, encoding: str | None) -> None:
    assert encoding_for_label(label) == encoding


def test_the_encoding_is_chosen_as_a_browser_chooses_it() -> None:
    meta = b'<meta charset="iso-8859-2">'
    assert page_encoding(b"\xef\xbb\xbf" + meta, "text/html; charset=latin1") == "UTF-8"  # BOM
    assert page_encoding(meta, "text/html; charset=latin1") == "windows-1252"  # header
    assert page_encoding(meta, "text/html; charset=punycode") == "ISO-8859-2"  # then <meta>
    assert page_encoding(b'<meta http-equiv="Content-Type" content="text/html; charset=koi8-r">',
                         "text/html") == "KOI8-R"  # fmt: skip
    assert page_encoding(b'<meta charset="utf-16">', "text/html") == "UTF-8"  # as the standard
    assert page_encoding(b" " * 1024 + meta, "text/html") == "UTF-8"  # past the prescan


def test_decoding_follows_the_standard() -> None:
    # windows-1252's five undefined bytes are their C1 controls: never invalid.
    assert decode_html_checked(b"caf\xe9\x81", "text/html; charset=latin1") == ("caf\xe9\x81", True)
    assert decode_html_checked(b"caf\xe9", "text/html; charset=latin-1") == ("caf\ufffd", False)
    assert decode_html_checked(b"a-b", "text/html; charset=punycode") == ("a-b", True)
    assert decode_html_checked(b"x", "text/html; charset=hz-gb-2312") == ("\ufffd", False)
    assert decode_html_checked(b"a\x80", "text/html; charset=x-user-defined") == ("a\uf780", True)
    assert decode_html_checked(b"\xff\xfeh\x00i\x00", "text/html") == ("hi", True)
