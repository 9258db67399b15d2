"""Sitemap dates (issue 30, item 3): a ``<lastmod>`` before the store's last check of a page
spares its request when ``sitemap_skips_unchanged`` is on, and orders the frontier always;
whole crawls of a real loopback site with a sitemap, on both backends."""

from __future__ import annotations

from pathlib import Path

from sitesync.models import FetchOutcome, RunStatus
from sitesync.store.base import Store
from tests._changing_site import ChangingSite, Page, serving
from tests.integration.test_gone_pages import scan

OLD = "2020-01-01"  # before any fetch of this test
LATER = "2100-01-01T00:00:00Z"  # after every fetch of this test


def site_pages() -> dict[str, Page]:
    return {
        "/": Page(("/a", "/b", "/c"), text="home"),
        "/a": Page(("/a1",), text="a"),
        "/a1": Page(text="a1"),
        "/b": Page(text="b"),
        "/c": Page(text="c"),
        "/d": Page(text="d, only in the sitemap"),
    }


def requested(site: ChangingSite) -> dict[str, int]:
    return {path: status for path, status, _ in site.served if path != "/sitemap.xml"}


async def test_an_old_lastmod_skips_the_page_and_a_new_one_puts_it_first(
    store: Store, tmp_path: Path
) -> None:
    async with serving(site_pages()) as site:
        site.sitemap = {"/a": OLD, "/b": OLD, "/c": None, "/d": OLD}
        first = await scan(store, site, tmp_path, sitemaps=True, sitemap_skips_unchanged=True)
        assert first.status is RunStatus.COMPLETED
        assert set(requested(site)) == {"/", "/a", "/a1", "/b", "/c", "/d"}  # nothing to skip
        tasks = {t.url: t for t in await store.list_tasks(first.id, limit=100)}
        # Never fetched and dated: first in the frontier; undated, or found by links: not.
        assert {u for u, t in tasks.items() if t.priority > 0} == {
            site.url("/a"), site.url("/b"), site.url("/d")
        }  # fmt: skip

        site.pages["/b"] = Page(text="b, rewritten")
        site.sitemap["/b"] = LATER
        site.served.clear()
        second = await scan(store, site, tmp_path, sitemaps=True, sitemap_skips_unchanged=True)

    asked = requested(site)
    assert "/a" not in asked and "/d" not in asked  # dated before their last fetch: skipped
    assert asked["/b"] == 200 and asked["/c"] == 304 and asked["/a1"] == 304
    tasks = {t.url: t for t in await store.list_tasks(second.id, limit=100)}
    skipped = {u for u, t in tasks.items() if t.outcome is FetchOutcome.UNCHANGED_PER_SITEMAP}
    assert skipped == {site.url("/a"), site.url("/d")}
    assert tasks[site.url("/a1")].outcome is FetchOutcome.NOT_MODIFIED  # /a's links, kept
    assert {u for u, t in tasks.items() if t.priority > 0} == {site.url("/b")}
    # The skipped pages' records are seen again; only /b has a new version.
    seen = {r.key: r.version for r in await store.records_of_run(second.id, kind="page")}
    assert seen[f"page:{site.url('/a')}"] == 1 and seen[f"page:{site.url('/d')}"] == 1
    diff = await store.diff_runs(first.id, second.id)
    assert [c.url for c in diff.changed if c.kind == "page"] == [site.url("/b")]
    assert not diff.removed
    report = await store.change_report(second.id)
    assert (report.total.unchanged_per_sitemap, report.total.changed) == (2, 1)
    assert report.total.bytes_full_fetch > report.total.bytes_downloaded


async def test_by_default_a_dated_page_is_still_asked_conditionally(
    store: Store, tmp_path: Path
) -> None:
    async with serving(site_pages()) as site:
        site.sitemap = {"/a": OLD, "/d": OLD}
        await scan(store, site, tmp_path, sitemaps=True)
        site.served.clear()
        second = await scan(store, site, tmp_path, sitemaps=True)
    asked = requested(site)
    assert asked["/a"] == 304 and asked["/d"] == 304
    outcomes = {t.outcome for t in await store.list_tasks(second.id, limit=100)}
    assert FetchOutcome.UNCHANGED_PER_SITEMAP not in outcomes
    assert second.settings is not None and second.settings["sitemap_skips_unchanged"] is False
