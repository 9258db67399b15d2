"""The dashboard in a real headless Chromium, watching a real crawl, pressing real buttons.

The crawl and the dashboard are the real CLI in subprocesses, sharing one SQLite file; the
site is a slow LoopbackSite so there is something to watch. A screenshot taken during the
crawl is kept at ``test-artifacts/dashboard.png`` (git-ignored) for people to look at.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from playwright.sync_api import Browser, Page

from sitesync.models import RunStatus
from sitesync.testing import LoopbackSite, SiteSpec
from tests._dashboard import running_dashboard, stop
from tests.acceptance._cli import read_run, sitesync

SCREENSHOT = Path(__file__).parents[2] / "test-artifacts" / "dashboard.png"


def wait_for(condition: Callable[[], bool], timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.1)


@pytest.fixture
def crawl_and_dashboard(
    site_factory: Callable[[SiteSpec], LoopbackSite], tmp_path: Path
) -> Iterator[tuple[str, Path]]:
    """A crawl of a slow two-host site, and the dashboard of its store; yields the URL."""
    site = site_factory(SiteSpec(hosts=2, pages_per_host=150, delay=0.1))
    db = tmp_path / "crawl.db"
    crawl = sitesync(
        "crawl", *site.root_urls, "--db", str(db), "--no-progress", "--no-robots",
        "--no-sitemaps", "--delay", "0", "--per-host-concurrency", "1",
        "--heartbeat-seconds", "0.5",
    )  # fmt: skip
    try:
        with running_dashboard(
            "--db", str(db), settings={"dashboard_sample_seconds": "0.5"}
        ) as url:
            yield url, db
    finally:
        # Killed: a graceful stop waits for in-flight pages, which this test does not need
        # (a SIGKILL loses nothing committed: tests/acceptance/test_crash_and_stop.py).
        stop(crawl, kill=True)


def run_status(db: Path) -> RunStatus:
    """The run's status in the store, read off this thread: Playwright's sync API runs an
    event loop on it, and the store is async."""
    with ThreadPoolExecutor(1) as pool:
        return pool.submit(read_run, db).result()[0].status


def pending_in_store(db: Path) -> int:
    """The run's pending counter in the store (off this thread, as :func:`run_status`)."""
    with ThreadPoolExecutor(1) as pool:
        return pool.submit(read_run, db).result()[0].counters.pending


def number(page: Page, testid: str) -> int:
    return int(page.get_by_test_id(testid).inner_text().replace(",", ""))


@pytest.mark.slow
def test_watch_a_crawl_then_pause_and_resume_it(
    crawl_and_dashboard: tuple[str, Path], chromium: Browser
) -> None:
    url, db = crawl_and_dashboard
    page = chromium.new_page(viewport={"width": 1400, "height": 1000})
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    page.goto(url)
    page.get_by_test_id("run-id").filter(has_text="1").wait_for(timeout=15_000)

    # Progress grows without a reload: read the numbers twice.
    first = number(page, "run-pages-fetched")
    # Polled from here: the page's Content-Security-Policy forbids evaluated strings.
    wait_for(lambda: number(page, "run-pages-fetched") > first, 10, "progress shown")
    assert page.get_by_test_id("run-status").inner_text() == "running"
    # The change report (issue 30): a first crawl, every page it saw is new.
    page.get_by_test_id("changes-since").filter(has_text="no earlier scan").wait_for(timeout=10_000)
    page.get_by_test_id("changes").locator("tbody tr td").first.wait_for(timeout=10_000)
    page.locator("#chart polyline.rate").wait_for(timeout=10_000)
    SCREENSHOT.parent.mkdir(exist_ok=True)
    page.screenshot(path=str(SCREENSHOT), full_page=True)
    print(f"dashboard screenshot: {SCREENSHOT}")

    dialogs: list[str] = []

    def accept(dialog: object) -> None:
        dialogs.append(dialog.message)  # type: ignore[attr-defined]
        dialog.accept()  # type: ignore[attr-defined]

    page.on("dialog", accept)
    page.get_by_test_id("action-pause").click()
    wait_for(lambda: run_status(db) is RunStatus.PAUSED, 10, "run 1 paused")
    page.get_by_test_id("run-status").filter(has_text="paused").wait_for(timeout=5000)
    # Paused, the counters settle: the page shows the store's pending work, not a placeholder.
    wait_for(
        lambda: number(page, "total-pending") == pending_in_store(db) > 0,
        10,
        "the store's pending count on the page",
    )
    page.get_by_test_id("action-resume").wait_for(state="visible")
    wait_for(page.get_by_test_id("action-resume").is_enabled, 5, "resume enabled")
    page.get_by_test_id("action-resume").click()
    wait_for(lambda: run_status(db) is RunStatus.RUNNING, 10, "run 1 running")
    assert dialogs == ["Pause run 1?", "Resume run 1?"]
    assert errors == []
