"""The browser's guard proxy serves its own browser alone, and the pages' other requests pass
the crawl's gate there: robots.txt (plain HTTP) and the host's pace (Crawl-delay).

Real headless Chromium, real loopback sites; no mocks and no skips.
"""

from __future__ import annotations

import asyncio
import base64
import itertools
from collections.abc import AsyncIterator, Callable
from pathlib import Path

import aiohttp
import pytest_asyncio
from aiohttp import web

from sitesync.config import load_settings
from sitesync.engine.wiring import fetch_limits, network_policy
from sitesync.fetch.browser import BrowserFetcher
from sitesync.fetch.guard_proxy import GuardProxy
from sitesync.models import RunStatus, TaskState
from sitesync.runs.crawl import crawl
from sitesync.runs.request import CrawlRequest, prepare_run
from sitesync.store.sqlite.store import SqliteStore
from sitesync.testing import OPEN_LOOPBACK, Handler, LoopbackSite, SiteSpec

SiteFactory = Callable[[SiteSpec], LoopbackSite]

ONE_PAGE = SiteSpec(
    hosts=1, pages_per_host=1, links_per_page=0, page_bytes=0, cross_host_links=False,
    variant_links=False, out_of_scope_links=False,
)  # fmt: skip


def text(body: str, content_type: str = "text/plain") -> Handler:
    async def handler(request: web.Request) -> web.Response:
        return web.Response(text=body, content_type=content_type)

    return handler


def basic(username: str, password: str) -> dict[str, str]:
    token = base64.b64encode(f"{username}:{password}".encode()).decode()
    return {"Proxy-Authorization": f"Basic {token}"}


@pytest_asyncio.fixture
async def proxy() -> AsyncIterator[tuple[GuardProxy, str]]:
    guard = GuardProxy(OPEN_LOOPBACK)
    url = await guard.start()
    try:
        yield guard, url
    finally:
        await guard.close()


async def test_the_proxy_refuses_a_client_without_its_credential(
    proxy: tuple[GuardProxy, str], site_factory: SiteFactory
) -> None:
    guard, proxy_url = proxy
    target = site_factory(ONE_PAGE)
    url = target.root_urls[0]
    async with aiohttp.ClientSession() as session:
        async with session.get(url, proxy=proxy_url) as anonymous:
            assert anonymous.status == 407
            assert anonymous.headers["Proxy-Authenticate"].startswith("Basic ")
        wrong = basic(guard.credentials[0], "not-the-password")
        async with session.get(url, proxy=proxy_url, headers=wrong) as guessed:
            assert guessed.status == 407
        assert target.requests == []  # nothing reached the target
        own = basic(*guard.credentials)
        async with session.get(url, proxy=proxy_url, headers=own) as allowed:
            assert allowed.status == 200
    assert [r.path for r in target.requests] == ["/"]


async def test_a_tunnel_without_the_credential_is_refused(
    proxy: tuple[GuardProxy, str], site_factory: SiteFactory
) -> None:
    _, proxy_url = proxy
    target = site_factory(ONE_PAGE).hosts[0]
    reader, writer = await asyncio.open_connection("127.0.0.1", int(proxy_url.rsplit(":")[-1]))
    try:
        writer.write(f"CONNECT {target} HTTP/1.1\r\nHost: {target}\r\n\r\n".encode())
        await writer.drain()
        status = await asyncio.wait_for(reader.readline(), 5)
    finally:
        writer.close()
    assert status.startswith(b"HTTP/1.1 407")


async def test_a_browser_crawl_asks_other_hosts_at_their_pace_and_as_their_robots_allow(
    site_factory: SiteFactory, tmp_path: Path
) -> None:
    """Pages of one host embed images of another whose robots.txt says Crawl-delay: 1 and
    disallows /private/: the images arrive one a second, the private one never."""
    cdn = site_factory(SiteSpec(**{**ONE_PAGE.__dict__, "first_ip": 30}))
    cdn.set_handler("/robots.txt", text("User-agent: *\nCrawl-delay: 1\nDisallow: /private/\n"))
    for name in ("a", "b", "private/c"):
        cdn.set_handler(f"/{name}.png", text("png", "image/png"))
    site = site_factory(SiteSpec(**{**ONE_PAGE.__dict__, "first_ip": 31}))
    images = "".join(f'<img src="http://{cdn.hosts[0]}/{n}.png">' for n in ("a", "b", "private/c"))
    pages = [f"/p{i}.html" for i in range(3)]
    links = "".join(f'<a href="{p}">{p}</a>' for p in pages)
    for path in ["/", *pages]:
        site.set_handler(path, text(f"<html><body>{images}{links}</body></html>", "text/html"))
    settings = load_settings(
        db=str(tmp_path / "crawl.db"), concurrency=4, per_host_concurrency=0, delay=0,
        sitemaps=False, retry_backoff=0.01, retry_backoff_max=0.05,
    )  # fmt: skip
    fetcher = BrowserFetcher(
        limits=fetch_limits(settings), user_agent=settings.user_agent, settle_ms=300,
        network=network_policy(settings),
    )  # fmt: skip
    store = await SqliteStore.open(settings.db)
    try:
        run, settings = await prepare_run(store, CrawlRequest(seeds=(site.root_urls[0],)), settings)
        final = await crawl(store, run, settings, fetcher=fetcher)
        tasks = await store.list_tasks(run.id, limit=100)
    finally:
        await store.close()

    assert final.status is RunStatus.COMPLETED
    assert {t.url.rsplit("/", 1)[1] for t in tasks} >= {"", "p0.html", "p1.html", "p2.html"}
    assert all(t.state is TaskState.COMPLETED for t in tasks)
    asked = [r for r in cdn.requests if r.path != "/robots.txt"]
    assert "/private/c.png" not in [r.path for r in asked]  # robots.txt disallows it
    assert len(asked) >= 8  # a.png and b.png of each of the 4 pages (no shared cache)
    starts = sorted(r.started for r in asked)
    gaps = [later - earlier for earlier, later in itertools.pairwise(starts)]
    assert min(gaps) >= 0.9, gaps  # Crawl-delay: 1, less the clocks' jitter
