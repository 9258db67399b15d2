"""The Playwright fetcher against a real headless system Chromium and a loopback site.

No mocks and no skips: if Chromium is missing or cannot start, these tests fail
(``scripts/ensure-system-deps.sh`` installs it).
"""

from __future__ import annotations

import asyncio
import sys
from collections.abc import AsyncIterator, Callable
from pathlib import Path

import pytest
import pytest_asyncio
from aiohttp import web

from sitesync.config import load_settings
from sitesync.engine.deadhosts import host_failure
from sitesync.engine.wiring import fetch_limits, network_policy
from sitesync.errors import ConfigError, FetchError
from sitesync.fetch.base import FetchLimits, FetchOutcome, RedirectHop
from sitesync.fetch.browser import BrowserFetcher
from sitesync.fetch.redirects import Refusal, take_every_hop, walk
from sitesync.models import RunStatus, TaskState
from sitesync.runs.crawl import crawl
from sitesync.runs.request import CrawlRequest, prepare_run
from sitesync.store.sqlite.store import SqliteStore
from sitesync.testing import OPEN_LOOPBACK, OUT_OF_SCOPE_IPS, Handler, LoopbackSite, SiteSpec
from tests.faults.test_dead_hosts import dropping_origin

# One event loop for the module, so that one browser serves every test that needs one.
pytestmark = pytest.mark.asyncio(loop_scope="module")

SiteFactory = Callable[[SiteSpec], LoopbackSite]

# Only the handlers' pages and a few generated ones are fetched: no filler, no traps.
SMALL = SiteSpec(
    hosts=1,
    pages_per_host=3,
    links_per_page=2,
    page_bytes=0,
    cross_host_links=False,
    variant_links=False,
    out_of_scope_links=False,
)

JS_INSERTED_LINK = """<!DOCTYPE html><html><head><title>app</title></head><body>
<div id=app></div>
<script>document.getElementById('app').innerHTML = '<a href="/p/1.html">inserted</a>'</script>
</body></html>"""


def html(text: str, *, status: int = 200) -> Handler:
    async def handler(request: web.Request) -> web.Response:
        return web.Response(text=text, status=status, content_type="text/html")

    return handler


def redirect(location: str, status: int) -> Handler:
    async def handler(request: web.Request) -> web.Response:
        return web.Response(status=status, headers={"Location": location})

    return handler


def paths_requested(site: LoopbackSite) -> list[str]:
    return [record.path for record in site.requests]


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def browser() -> AsyncIterator[BrowserFetcher]:
    # Each fetch has a fresh browser context, so tests sharing the browser share no state.
    # The sites are on loopback, which fetchers refuse unless it is opened.
    fetcher = BrowserFetcher(
        limits=FetchLimits(total_timeout=15), settle_ms=300, network=OPEN_LOOPBACK
    )
    async with fetcher:
        yield fetcher


async def test_javascript_inserted_content_is_in_the_body(
    site_factory: SiteFactory, browser: BrowserFetcher
) -> None:
    site = site_factory(SMALL)
    site.set_handler("/app", html(JS_INSERTED_LINK))
    url = f"http://{site.hosts[0]}/app"

    result = await browser.fetch(url)

    assert result.outcome is FetchOutcome.SUCCESS and result.status == 200
    assert b'<a href="/p/1.html">inserted</a>' in result.body
    assert result.final_url == url and result.redirects == ()
    assert result.headers["content-type"] == "text/html; charset=utf-8" and result.is_html
    assert site.requests[0].user_agent == browser.user_agent


async def test_a_redirect_chain_is_recorded_hop_by_hop(
    site_factory: SiteFactory, browser: BrowserFetcher
) -> None:
    site = site_factory(SMALL)
    origin = f"http://{site.hosts[0]}"
    site.set_handler("/old", redirect("/moved", 302))
    site.set_handler("/moved", redirect(f"{origin}/p/1.html", 301))

    # One navigation per hop, walked as every chain is (sitesync.fetch.redirects).
    result = await walk(f"{origin}/old", browser.fetch, take_every_hop, max_redirects=10)

    assert result.outcome is FetchOutcome.SUCCESS and result.status == 200
    assert result.redirects == (
        RedirectHop(f"{origin}/old", f"{origin}/moved", 302),
        RedirectHop(f"{origin}/moved", f"{origin}/p/1.html", 301),
    )
    assert result.final_url == f"{origin}/p/1.html"
    assert b"Host 0 page 1" in result.body


@pytest.mark.parametrize(
    ("status", "outcome"),
    [(404, FetchOutcome.HTTP_ERROR), (403, FetchOutcome.BLOCKED)],
)
async def test_error_statuses_map_to_outcomes(
    site_factory: SiteFactory, browser: BrowserFetcher, status: int, outcome: FetchOutcome
) -> None:
    site = site_factory(SMALL)
    site.set_handler("/error", html(f"<h1>{status}</h1>", status=status))

    result = await browser.fetch(f"http://{site.hosts[0]}/error")

    assert result.outcome is outcome and result.status == status
    assert result.error == f"HTTP {status}"


async def test_connection_refused_is_unreachable(
    site_factory: SiteFactory, browser: BrowserFetcher
) -> None:
    site = site_factory(SMALL)
    # The site's port on an address nothing listens on: refused at once, never a timeout.
    result = await browser.fetch(f"http://{OUT_OF_SCOPE_IPS[0]}:{site.port}/")

    assert result.outcome is FetchOutcome.UNREACHABLE and result.status == 0
    assert result.error is not None and "net::ERR_CONNECTION_REFUSED" in result.error
    assert result.retryable


async def test_a_connection_never_answered_is_unreachable_like_a_refused_one() -> None:
    """The guard proxy gives up connecting after ``connect_timeout``: Chromium's
    ERR_CONNECTION_TIMED_OUT, a host-level failure that counts towards a dead host."""
    fetcher = BrowserFetcher(
        limits=FetchLimits(connect_timeout=0.5, total_timeout=15), network=OPEN_LOOPBACK
    )
    with dropping_origin() as dropping:
        async with fetcher:
            result = await fetcher.fetch(f"{dropping}/")

    assert result.outcome is FetchOutcome.UNREACHABLE and result.status == 0
    assert result.error is not None and "net::ERR_CONNECTION_TIMED_OUT" in result.error
    assert host_failure(result)


async def test_a_redirect_the_walker_refuses_is_never_requested(
    site_factory: SiteFactory, browser: BrowserFetcher
) -> None:
    site = site_factory(SMALL)
    origin = f"http://{site.hosts[0]}"
    site.set_handler("/jump", redirect("/p/2.html", 302))
    asked: list[str] = []

    async def may_follow(url: str, location: str, chain: tuple[RedirectHop, ...]) -> Refusal | None:
        asked.append(url)
        if url.endswith("/p/2.html"):
            return FetchOutcome.REDIRECT_NOT_FOLLOWED, f"redirect to {location} (out of scope)"
        return None

    result = await walk(f"{origin}/jump", browser.fetch, may_follow, max_redirects=10)

    assert result.outcome is FetchOutcome.REDIRECT_NOT_FOLLOWED and result.status == 302
    assert result.redirects == (RedirectHop(f"{origin}/jump", f"{origin}/p/2.html", 302),)
    assert result.final_url == f"{origin}/jump" and result.body == b""
    assert asked == [f"{origin}/p/2.html"]
    assert paths_requested(site) == ["/jump"]  # the target was never requested


async def test_a_redirect_to_a_non_http_url_is_not_followed(
    site_factory: SiteFactory, browser: BrowserFetcher
) -> None:
    site = site_factory(SMALL)
    site.set_handler("/mail", redirect("mailto:webmaster@example.invalid", 302))

    result = await browser.fetch(f"http://{site.hosts[0]}/mail")

    assert result.outcome is FetchOutcome.REDIRECT_NOT_FOLLOWED and result.status == 302
    assert result.redirects[-1].to_url == "mailto:webmaster@example.invalid"


async def test_a_redirect_loop_is_invalid(
    site_factory: SiteFactory, browser: BrowserFetcher
) -> None:
    site = site_factory(SMALL)
    site.set_handler("/loop", redirect("/loop", 302))

    result = await walk(
        f"http://{site.hosts[0]}/loop", browser.fetch, take_every_hop, max_redirects=10
    )

    assert result.outcome is FetchOutcome.INVALID
    assert result.error is not None and result.error.startswith("redirect loop")
    assert paths_requested(site) == ["/loop"]


async def test_a_page_navigating_away_by_script_keeps_its_own_document(
    site_factory: SiteFactory, browser: BrowserFetcher
) -> None:
    site = site_factory(SMALL)
    page = "<p id=stay>first</p><script>location.href = '/p/2.html'</script>"
    site.set_handler("/leave", html(page))

    result = await browser.fetch(f"http://{site.hosts[0]}/leave")

    assert result.outcome is FetchOutcome.SUCCESS and b'<p id="stay">first</p>' in result.body
    assert paths_requested(site) == ["/leave"]


async def test_a_body_over_the_cap_is_too_large_and_dropped(site_factory: SiteFactory) -> None:
    site = site_factory(SMALL)
    site.set_handler("/big", html("<p>" + "x" * 50_000 + "</p>"))

    limits = FetchLimits(max_body_bytes=10_000)
    async with BrowserFetcher(limits=limits, network=OPEN_LOOPBACK) as fetcher:
        result = await fetcher.fetch(f"http://{site.hosts[0]}/big")

    assert result.outcome is FetchOutcome.TOO_LARGE and result.status == 200
    assert result.body == b""


async def test_a_crawl_with_the_browser_follows_javascript_inserted_links(
    site_factory: SiteFactory, tmp_path: Path
) -> None:
    site = site_factory(SMALL)
    site.set_handler("/", html(JS_INSERTED_LINK))  # the root's only link exists after JS runs
    settings = load_settings(
        db=str(tmp_path / "crawl.db"),
        concurrency=4,
        per_host_concurrency=0,
        delay=0,
        retry_backoff=0.01,
        retry_backoff_max=0.05,
    )
    fetcher = BrowserFetcher(
        limits=fetch_limits(settings),
        user_agent=settings.user_agent,
        settle_ms=300,
        network=network_policy(settings),
    )
    store = await SqliteStore.open(settings.db)
    try:
        run, settings = await prepare_run(store, CrawlRequest(seeds=(site.root_urls[0],)), settings)
        final = await crawl(store, run, settings, fetcher=fetcher)
        tasks = {task.url: task for task in await store.list_tasks(run.id, limit=100)}
    finally:
        await store.close()

    assert final.status is RunStatus.COMPLETED
    linked = f"http://{site.hosts[0]}/p/1.html"
    assert linked in tasks and tasks[linked].state is TaskState.COMPLETED
    assert all(task.state is TaskState.COMPLETED for task in tasks.values())


async def test_a_missing_chromium_is_a_setup_error_naming_the_path() -> None:
    fetcher = BrowserFetcher(executable_path="/nonexistent/chromium")
    with pytest.raises(FetchError, match=r"/nonexistent/chromium.*install Debian's 'chromium'"):
        async with fetcher:
            pass


async def test_without_playwright_the_module_imports_and_the_fetcher_says_what_to_install(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # None in sys.modules makes "import playwright..." raise ImportError, as if not installed.
    monkeypatch.setitem(sys.modules, "playwright", None)
    monkeypatch.setitem(sys.modules, "playwright.async_api", None)
    with pytest.raises(ConfigError) as raised:
        BrowserFetcher()
    assert str(raised.value) == (
        "the browser fetcher needs the 'browser' extra: pip install 'sitesync[browser]'"
    )
    check = "import sys, sitesync.fetch.browser; assert 'playwright' not in sys.modules"
    process = await asyncio.create_subprocess_exec(sys.executable, "-c", check)
    assert await process.wait() == 0
