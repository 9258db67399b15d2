"""Pages that disappear are recorded (issue 30, item 4): whole crawls of a real loopback
site that loses pages between scans, on both backends."""

from __future__ import annotations

from pathlib import Path

from sitesync.config import load_settings
from sitesync.models import Run, RunStatus
from sitesync.runs.crawl import crawl
from sitesync.runs.request import CrawlRequest, prepare_run
from sitesync.store.base import Store
from tests._changing_site import ChangingSite, Page, serving


def pages() -> dict[str, Page]:
    return {
        "/": Page(("/a", "/b", "/c", "/d"), text="home"),
        "/a": Page(("/a1",), text="a"),
        "/a1": Page(text="a1"),
        "/b": Page(text="b"),
        "/c": Page(text="c"),
        "/d": Page(text="d"),
    }


async def scan(
    store: Store,
    site: ChangingSite,
    tmp_path: Path,
    *seeds: str,
    max_pages: int | None = None,
    **settings: object,
) -> Run:
    values: dict[str, object] = {
        "db": str(tmp_path / "unused.db"), "concurrency": 2, "per_host_concurrency": 0,
        "delay": 0, "retry_backoff": 0.01, "retry_backoff_max": 0.05, "max_retries": 1,
        "respect_robots": False, "sitemaps": False, **settings,
    }  # fmt: skip
    request = CrawlRequest(seeds=seeds or (site.url("/"),), max_pages=max_pages)
    run, ready = await prepare_run(store, request, load_settings(**values))
    return await crawl(store, run, ready)


async def latest(store: Store, site: ChangingSite, path: str) -> tuple[int, str, str | None]:
    """(version, run, reason) of the page record's latest version."""
    history = await store.record_history(f"page:{site.url(path)}")
    last = history[-1]
    return last.version, str(last.run_id), last.data.get("reason") if last.gone else None


async def test_a_404_a_410_and_an_unlinked_page_get_tombstones_from_the_scan_that_found_them(
    store: Store, tmp_path: Path
) -> None:
    async with serving(pages()) as site:
        first = await scan(store, site, tmp_path)
        assert first.status is RunStatus.COMPLETED
        site.pages["/b"] = Page(status=410)
        del site.pages["/c"]  # a 404
        site.pages["/"] = Page(("/a", "/b", "/c"), text="home")  # /d no longer linked
        second = await scan(store, site, tmp_path)
        assert second.status is RunStatus.COMPLETED
        assert await latest(store, site, "/b") == (2, str(second.id), "http_410")
        assert await latest(store, site, "/c") == (2, str(second.id), "http_404")
        assert await latest(store, site, "/d") == (2, str(second.id), "unreached")
        assert await latest(store, site, "/a1") == (1, str(first.id), None)  # still reached
        assert await store.last_fetch(site.url("/d")) is None  # a return is fetched in full
        # Asked again (another worker seeing the same end): nothing is marked twice.
        assert await store.mark_gone(second.id) == 0

        # /d comes back: a new version after its tombstone, written by the scan that saw it.
        site.pages["/"] = Page(("/a", "/d"), text="home")
        third = await scan(store, site, tmp_path)
        history = await store.record_history(f"page:{site.url('/d')}")
        assert [(v.version, v.run_id, v.gone) for v in history] == [
            (1, first.id, False), (2, second.id, True), (3, third.id, False)
        ]  # fmt: skip
        # /b and /c are not marked again; nor are they pages of the third's previous scan.
        assert await latest(store, site, "/b") == (2, str(second.id), "http_410")


async def test_pages_behind_a_failing_page_are_not_called_gone(
    store: Store, tmp_path: Path
) -> None:
    """A page the scan could not fetch (a 500) may still link to pages that exist: on its
    host, unreached pages are not judged."""
    async with serving(pages()) as site:
        await scan(store, site, tmp_path)
        site.pages["/a"] = Page(status=500)
        second = await scan(store, site, tmp_path)
        assert second.status is RunStatus.COMPLETED
        assert await latest(store, site, "/a1") == (1, str(second.id - 1), None)
        assert await latest(store, site, "/a") == (1, str(second.id - 1), None)  # not a 404


async def test_only_a_scan_of_the_same_seeds_is_the_previous_scan(
    store: Store, tmp_path: Path
) -> None:
    async with serving(pages()) as site:
        await scan(store, site, tmp_path)
        other = await scan(store, site, tmp_path, site.url("/b"))  # another crawl: just /b...
        assert other.status is RunStatus.COMPLETED
        assert await store.mark_gone(other.id) == 0
        assert await latest(store, site, "/a") == (1, str(other.id - 1), None)  # ...not a loss


async def test_a_capped_scan_marks_only_404_and_410(store: Store, tmp_path: Path) -> None:
    """Under a page cap the cap decides what is reached, not the site: only an answer
    (404, 410) says a page is gone (so it is for a stopped or cancelled scan)."""
    async with serving(pages()) as site:
        first = await scan(store, site, tmp_path, max_pages=50)
        site.pages["/"] = Page(("/b",), text="home")
        site.pages["/b"] = Page(status=410)
        second = await scan(store, site, tmp_path, max_pages=50)
        assert second.status is RunStatus.COMPLETED
        assert await latest(store, site, "/b") == (2, str(second.id), "http_410")
        assert await latest(store, site, "/d") == (1, str(first.id), None)
