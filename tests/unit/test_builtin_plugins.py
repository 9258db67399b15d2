"""The built-in plugins (SPEC P2) on pages as a crawl hands them over.

Artifacts are built the way a page attempt builds them: the HTML as text and its links
extracted (and normalized) by the crawl's own link extractor.
"""

from __future__ import annotations

import hashlib
from dataclasses import replace

import pytest

from sitesync.config import load_settings
from sitesync.fetch.base import FetchOutcome
from sitesync.fetch.html import extract_links
from sitesync.models import AssetRecord, CrawlArtifact
from sitesync.plugins import ParsedPage, PluginContext
from sitesync.plugins.builtin._common import word_count
from sitesync.plugins.builtin.assets import AssetPlugin
from sitesync.plugins.builtin.links import LinksPlugin
from sitesync.plugins.builtin.navigation import NavigationSampler
from sitesync.plugins.builtin.page_metadata import PageMetadataPlugin

ROOT = "http://site.test/"
CONTEXT = PluginContext(settings=load_settings())


def artifact(
    html: str,
    url: str = ROOT,
    *,
    depth: int = 0,
    status: int = 200,
    outcome: str = "success",
    headers: dict[str, str] | None = None,
) -> CrawlArtifact:
    body = html.encode()
    return CrawlArtifact(
        run_id=1,
        task_id=1,
        requested_url=url,
        final_url=url,
        depth=depth,
        status=status,
        outcome=FetchOutcome(outcome),
        headers=headers or {"content-type": "text/html; charset=utf-8"},
        body=body,
        text=html if status and html else None,
        redirects=(),
        elapsed=0.01,
        links=tuple(extract_links(html, url)) if status and html else (),
    )


def run(plugin: object, art: CrawlArtifact) -> list[AssetRecord]:
    return list(plugin.process(art, ParsedPage(art)))  # type: ignore[attr-defined]


def anchors(paths: list[str]) -> str:
    return "".join(f'<a href="{path}">{path}</a>' for path in paths)


# -- page metadata ------------------------------------------------------------------------


def test_page_metadata_records_what_the_page_says_about_itself() -> None:
    html = (
        '<html lang="de"><head><title>  Die   Seite </title>'
        '<meta name="Description" content="Alles  über uns">'
        '<link rel="canonical" href="/kanonisch"></head>'
        "<body><p>eins zwei drei</p><script>var nicht = gezaehlt;</script>"
        "<p>vier</p></body></html>"
    )
    [record] = run(PageMetadataPlugin(CONTEXT), artifact(html, ROOT + "seite?x=1"))
    digest = hashlib.sha256(html.encode()).hexdigest()
    assert (record.key, record.kind, record.content_hash) == (
        "page:http://site.test/seite?x=1",
        "page",
        digest,
    )
    assert record.body == html.encode()
    data = record.data
    assert data["title"] == "Die Seite" and data["description"] == "Alles über uns"
    assert data["canonical"] == "http://site.test/kanonisch" and data["language"] == "de"
    assert data["word_count"] == 4 and data["content_hash"] == digest
    assert data["status"] == 200 and data["headers"]["content-type"].startswith("text/html")


def test_page_metadata_skips_error_pages_and_keeps_non_html_bodies() -> None:
    assert (
        run(
            PageMetadataPlugin(CONTEXT),
            artifact("gone", status=404, outcome=FetchOutcome.HTTP_ERROR),
        )
        == []
    )
    pdf = artifact("%PDF-1.7", ROOT + "a.pdf", headers={"content-type": "application/pdf"})
    [record] = run(PageMetadataPlugin(CONTEXT), replace(pdf, text=None, links=()))
    assert record.body == b"%PDF-1.7" and "title" not in record.data


@pytest.mark.parametrize("text", ["", " ", "one", " two  words\n", "tab\tand\nlines  ", "é ü ß"])
def test_word_count_counts_like_split(text: str) -> None:
    assert word_count(text) == len(text.split())


# -- links --------------------------------------------------------------------------------


def test_links_are_sorted_into_internal_external_and_nofollow() -> None:
    html = (
        '<a href="/a">a</a><a href="http://www.site.test/b">b</a>'
        '<a href="http://blog.site.test/c">c</a><a href="https://other.test/">o</a>'
        '<a rel="nofollow ugc" href="/paid">p</a>'
    )
    [record] = run(LinksPlugin(CONTEXT), artifact(html))
    assert record.key == "links:http://site.test/"
    assert record.data["internal"] == [
        "http://site.test/a",
        "http://www.site.test/b",
        "http://blog.site.test/c",
        "http://site.test/paid",
    ]
    assert record.data["external"] == ["https://other.test/"]
    assert record.data["nofollow"] == ["http://site.test/paid"]
    assert record.data["page_nofollow"] is False


def test_a_robots_nofollow_meta_makes_every_link_nofollow() -> None:
    html = '<meta name="ROBOTS" content="noindex, NoFollow"><a href="/x">x</a>'
    [record] = run(LinksPlugin(CONTEXT), artifact(html))
    assert record.data["nofollow"] == ["http://site.test/x"] and record.data["page_nofollow"]


# -- navigation sampler -------------------------------------------------------------------


def test_rich_navigation_gives_exactly_ten_deduplicated_nav_links_first() -> None:
    nav = [f"/section/{n}" for n in range(7)] + ["/section/1", "/"]  # a duplicate, the root
    header = ["/login", "/section/2"]
    footer = ["/imprint", "/privacy", "/contact"]
    body = ["/article/1", "/article/2"]
    html = (
        f"<header>{anchors(header)}</header><nav>{anchors(nav)}</nav>"
        f"<main>{anchors(body)}<a href='/report.pdf'>pdf</a></main>"
        f"<footer>{anchors(footer)}</footer>"
    )
    [record] = run(NavigationSampler(CONTEXT), artifact(html))
    urls = [(e["found_in"], e["url"].removeprefix("http://site.test")) for e in record.data["urls"]]
    assert urls == [
        *(("nav", f"/section/{n}") for n in range(7)),
        ("header", "/login"),
        ("footer", "/imprint"),
        ("footer", "/privacy"),
    ]
    assert record.data["shortfall"] is None
    assert (record.key, record.kind) == ("navigation:http://site.test/", "navigation")


def test_menus_come_before_other_links_and_external_links_never_count() -> None:
    html = (
        f"<div class='main-menu'>{anchors(['/m1', '/m2'])}</div>"
        f"<p>{anchors(['/p1', 'https://elsewhere.test/x', '/p2'])}</p>"
    )
    [record] = run(NavigationSampler(CONTEXT), artifact(html))
    found = [(e["found_in"], e["url"]) for e in record.data["urls"]]
    assert found == [
        ("menu", ROOT + "m1"),
        ("menu", ROOT + "m2"),
        ("page", ROOT + "p1"),
        ("page", ROOT + "p2"),
    ]
    assert record.data["shortfall"] == "only 4 internal navigational links"


def test_a_site_with_three_internal_links_has_a_shortfall_saying_so() -> None:
    html = f"<nav>{anchors(['/a', '/b'])}</nav>{anchors(['/c', '/a', 'https://x.test/'])}"
    [record] = run(NavigationSampler(CONTEXT), artifact(html))
    assert len(record.data["urls"]) == 3
    assert record.data["shortfall"] == "only 3 internal navigational links"


@pytest.mark.parametrize(
    ("status", "outcome", "reason"),
    [
        (0, "unreachable", "site unreachable"),
        (0, "timeout", "site unreachable"),
        (0, "blocked", "robots.txt disallows"),
        (503, "http_error", "root page answered HTTP 503"),
    ],
)
def test_a_root_that_cannot_be_sampled_says_why(status: int, outcome: str, reason: str) -> None:
    [record] = run(NavigationSampler(CONTEXT), artifact("", status=status, outcome=outcome))
    assert record.data["urls"] == [] and record.data["shortfall"] == reason
    assert record.key == "navigation:http://site.test/"


def test_only_root_pages_are_sampled() -> None:
    assert run(NavigationSampler(CONTEXT), artifact(anchors(["/a"]), ROOT + "a", depth=1)) == []


# -- assets -------------------------------------------------------------------------------


def test_images_and_documents_are_found_once_each() -> None:
    html = (
        '<head><link rel="icon" href="/favicon.ico">'
        '<meta property="og:image" content="https://cdn.test/og.jpg"></head>'
        '<img src="/logo.png"><img src="/logo.png" alt="again">'
        '<img data-src="/lazy.webp" srcset="/s1.png 1x, /s2.png 2x">'
        '<picture><source srcset="/pic.avif"></picture><img src="data:image/png;base64,AA">'
        '<a href="/docs/Manual.PDF?v=2">manual</a><a href="/sheet.xlsx">x</a>'
        '<a href="/photo.JPG">photo</a><a href="/page.html">not an asset</a>'
    )
    records = run(AssetPlugin(CONTEXT), artifact(html))
    found = {(r.kind, r.url.removeprefix("http://site.test")) for r in records}
    assert found == {
        ("image", "/favicon.ico"),
        ("image", "https://cdn.test/og.jpg"),
        ("image", "/logo.png"),
        ("image", "/lazy.webp"),
        ("image", "/s1.png"),
        ("image", "/s2.png"),
        ("image", "/pic.avif"),
        ("document", "/docs/Manual.PDF?v=2"),
        ("document", "/sheet.xlsx"),
        ("image", "/photo.JPG"),
    }
    assert len(records) == len(found)
    logo = next(r for r in records if r.url.endswith("/logo.png"))
    assert logo.key == "image:http://site.test/logo.png" and logo.body is None
    assert logo.data == {"url": logo.url, "kind": "image", "extension": ".png", "downloaded": False}
    # Without downloads the hash names the asset, so another page's sighting is no change.
    [again] = run(AssetPlugin(CONTEXT), artifact('<img src="/logo.png">', ROOT + "x"))
    assert again.content_hash == logo.content_hash
