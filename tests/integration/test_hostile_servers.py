"""A misbehaving server on loopback, and what the crawler did about it.

Each test asserts from the server's own request log: how many attempts, how far apart,
that disallowed paths got no request at all, and that the crawl ended within a bound.
"""

from __future__ import annotations

import asyncio
import email.utils
import gzip
import itertools
import resource
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

import pytest
from aiohttp import web

from sitesync.models import RunStatus, Task, TaskState
from sitesync.runs.request import CrawlRequest
from sitesync.store.sqlite.store import SqliteStore
from sitesync.testing import OUT_OF_SCOPE_IPS, LoopbackSite, SiteSpec
from tests.integration.test_crawl import fast_settings, run_crawl

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


@pytest.fixture
def site(site_factory: Callable[[SiteSpec], LoopbackSite]) -> LoopbackSite:
    return site_factory(SiteSpec(hosts=1, pages_per_host=4))


def url(site: LoopbackSite, path: str) -> str:
    return f"http://{site.hosts[0]}{path}"


def requests_to(site: LoopbackSite, path: str) -> list[float]:
    return sorted(r.started for r in site.requests if r.path == path)


async def crawl_one(site: LoopbackSite, tmp_path: Path, path: str, **settings: object) -> Task:
    """Crawl just ``path`` (depth 0, no links followed) and return its task."""
    values: dict[str, object] = {
        "total_timeout": 2.0, "read_timeout": 1.0, "connect_timeout": 0.5, "max_retries": 3,
    }  # fmt: skip
    values.update(settings)
    run, _, tasks = await run_crawl(
        fast_settings(tmp_path, **values), CrawlRequest(seeds=(url(site, path),), max_depth=0)
    )
    assert run.status is RunStatus.COMPLETED  # whatever the server did, the run terminates
    [task] = [t for t in tasks if t.url == url(site, path)]
    return task


def respond(status: int, body: str = "", **headers: str) -> Handler:
    async def handler(request: web.Request) -> web.StreamResponse:
        return web.Response(status=status, text=body, headers=headers, content_type="text/html")

    return handler


def sequence(*handlers: Handler) -> Handler:
    """Answer the n-th request with the n-th handler (the last one repeats)."""
    calls = 0

    async def handler(request: web.Request) -> web.StreamResponse:
        nonlocal calls
        calls += 1
        return await handlers[min(calls, len(handlers)) - 1](request)

    return handler


# -- redirects ----------------------------------------------------------------------------


async def test_redirect_loop_ends_invalid_after_one_lap(site: LoopbackSite, tmp_path: Path) -> None:
    site.set_handler("/loop-a", respond(302, Location="/loop-b"))
    site.set_handler("/loop-b", respond(302, Location="/loop-a"))
    task = await crawl_one(site, tmp_path, "/loop-a")
    assert task.state is TaskState.FAILED and task.outcome == "invalid"
    assert task.last_error is not None and "redirect loop" in task.last_error
    assert [hop[2] for hop in task.redirects] == [302, 302]
    assert len(requests_to(site, "/loop-a")) == 1 and len(requests_to(site, "/loop-b")) == 1


async def test_a_30_hop_chain_stops_at_the_limit(site: LoopbackSite, tmp_path: Path) -> None:
    for n in range(30):
        site.set_handler(f"/hop/{n}", respond(301, Location=f"/hop/{n + 1}"))
    task = await crawl_one(site, tmp_path, "/hop/0", max_redirects=10)
    assert task.state is TaskState.FAILED
    assert task.last_error == "invalid: more than 10 redirects"
    requested = [r.path for r in site.requests if r.path.startswith("/hop/")]
    assert sorted(requested) == sorted(f"/hop/{n}" for n in range(11))


async def test_redirect_chain_is_recorded_hop_by_hop(site: LoopbackSite, tmp_path: Path) -> None:
    site.set_handler("/old", respond(301, Location="/older"))
    site.set_handler("/older", respond(302, Location="/p/1.html"))
    task = await crawl_one(site, tmp_path, "/old")
    assert task.state is TaskState.COMPLETED and task.http_status == 200
    assert task.final_url == url(site, "/p/1.html")
    assert task.redirects == (
        (url(site, "/old"), url(site, "/older"), 301),
        (url(site, "/older"), url(site, "/p/1.html"), 302),
    )


async def test_out_of_scope_and_non_http_redirects_are_recorded_not_followed(
    site: LoopbackSite, tmp_path: Path
) -> None:
    elsewhere = f"http://{OUT_OF_SCOPE_IPS[0]}:{site.port}/x"
    site.set_handler("/p/1.html", respond(302, Location=elsewhere))
    site.set_handler("/p/2.html", respond(302, Location="mailto:someone@example.org"))
    seeds = (url(site, "/"),)
    run, _, tasks = await run_crawl(
        fast_settings(tmp_path), CrawlRequest(seeds=seeds, include=(r"/$", r"/p/[12]\.html$"))
    )
    by_url = {t.url: t for t in tasks}
    away = by_url[url(site, "/p/1.html")]
    assert away.state is TaskState.COMPLETED and away.outcome == "redirect_not_followed"
    assert away.http_status == 302 and away.redirects == ((url(site, "/p/1.html"), elsewhere, 302),)
    mail = by_url[url(site, "/p/2.html")]
    assert mail.outcome == "redirect_not_followed" and "not an http(s) URL" in (
        mail.last_error or ""
    )
    assert all(not r.host.startswith(OUT_OF_SCOPE_IPS[0]) for r in site.requests)
    assert run.status is RunStatus.COMPLETED


async def test_a_seed_root_redirect_names_the_canonical_host(
    site_factory: Callable[[SiteSpec], LoopbackSite], tmp_path: Path
) -> None:
    site = site_factory(SiteSpec(hosts=2, pages_per_host=3))
    site.set_handler("/", sequence(respond(301, Location=f"http://{site.hosts[1]}/p/1.html")))
    settings = fast_settings(tmp_path)
    await run_crawl(settings, CrawlRequest(seeds=(site.root_urls[0],), max_depth=0))

    store = await SqliteStore.open(settings.db)
    try:
        domain = await store.get_domain(site.hosts[0])
    finally:
        await store.close()
    assert domain is not None and domain.canonical_host == site.hosts[1]
    assert domain.aliases == (site.hosts[0],)


# -- timeouts, sizes, broken bodies -------------------------------------------------------


async def test_a_silent_server_times_out_each_attempt(site: LoopbackSite, tmp_path: Path) -> None:
    async def silent(request: web.Request) -> web.StreamResponse:
        await asyncio.sleep(3600)  # a server that never answers: cut by the client's timeout
        raise AssertionError("unreachable")

    site.set_handler("/silent", silent)
    started = time.monotonic()
    task = await crawl_one(site, tmp_path, "/silent", total_timeout=1.0, read_timeout=0.5)
    elapsed = time.monotonic() - started
    assert task.state is TaskState.FAILED and task.attempt_count == 3
    assert task.outcome == "timeout"
    assert elapsed < 3 * 1.0 + 3  # three attempts, each cut at the read timeout


@pytest.mark.slow
async def test_a_dripping_server_is_cut_at_the_total_timeout(
    site: LoopbackSite, tmp_path: Path
) -> None:
    async def drip(request: web.Request) -> web.StreamResponse:
        response = web.StreamResponse(headers={"Content-Type": "text/html"})
        await response.prepare(request)
        for _ in range(600):
            await response.write(b"x")
            await asyncio.sleep(0.2)  # always under the read timeout
        return response

    site.set_handler("/drip", drip)
    started = time.monotonic()
    task = await crawl_one(site, tmp_path, "/drip", total_timeout=1.0, read_timeout=0.5)
    assert task.state is TaskState.FAILED and task.outcome == "timeout"
    assert time.monotonic() - started < 3 * 1.0 + 3


def peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


async def test_a_200_mb_body_is_cut_at_the_cap_without_buffering(
    site: LoopbackSite, tmp_path: Path
) -> None:
    chunk = b"<p>" + b"x" * (64 * 1024 - 3)

    async def huge(request: web.Request) -> web.StreamResponse:
        response = web.StreamResponse(headers={"Content-Type": "text/html"})
        await response.prepare(request)
        for _ in range(200 * 16):  # 200 MiB, no Content-Length
            await response.write(chunk)
        return response

    site.set_handler("/huge", huge)
    site.set_handler("/declared", respond(200, "x" * 10, **{"Content-Length": "10"}))
    before = peak_rss_mb()
    task = await crawl_one(site, tmp_path, "/huge", max_body_bytes=5 * 1024 * 1024)
    assert task.state is TaskState.COMPLETED and task.outcome == "too_large"
    assert peak_rss_mb() - before < 60


async def test_a_gzip_bomb_stops_at_the_cap(site: LoopbackSite, tmp_path: Path) -> None:
    bomb = gzip.compress(b"\0" * (256 * 1024 * 1024), compresslevel=9)  # ~250 KB on the wire
    assert len(bomb) < 1024 * 1024

    async def serve_bomb(request: web.Request) -> web.StreamResponse:
        return web.Response(
            body=bomb, headers={"Content-Type": "text/html", "Content-Encoding": "gzip"}
        )

    site.set_handler("/bomb", serve_bomb)
    before = peak_rss_mb()
    task = await crawl_one(site, tmp_path, "/bomb", max_body_bytes=5 * 1024 * 1024)
    assert task.state is TaskState.COMPLETED and task.outcome == "too_large"
    assert peak_rss_mb() - before < 60


async def test_a_connection_reset_mid_body_is_retried_then_fails(
    site: LoopbackSite, tmp_path: Path
) -> None:
    async def reset(request: web.Request) -> web.StreamResponse:
        response = web.StreamResponse(
            headers={"Content-Type": "text/html", "Content-Length": "100000"}
        )
        await response.prepare(request)
        await response.write(b"<html>" + b"x" * 1000)
        assert request.transport is not None
        request.transport.abort()
        return response

    site.set_handler("/reset", reset)
    task = await crawl_one(site, tmp_path, "/reset")
    assert task.state is TaskState.FAILED and task.attempt_count == 3
    assert task.outcome == "unreachable" and "truncated" in (task.last_error or "")


async def test_binary_served_as_html_and_bad_charsets_are_recorded(
    site: LoopbackSite, tmp_path: Path
) -> None:
    async def binary(request: web.Request) -> web.StreamResponse:
        return web.Response(body=b"\x89PNG\x00\x00\x01" * 100, content_type="text/html")

    async def mislabelled(request: web.Request) -> web.StreamResponse:
        body = '<a href="/p/1.html">caf\u00e9</a>'.encode("latin-1")
        return web.Response(body=body, headers={"Content-Type": "text/html; charset=no-such"})

    site.set_handler("/binary", binary)
    site.set_handler("/mislabelled", mislabelled)
    task = await crawl_one(site, tmp_path / "a", "/binary")
    assert task.state is TaskState.COMPLETED and task.outcome == "invalid"
    assert "binary content served as text/html" in (task.last_error or "")
    # Not valid in the charset it falls back to (UTF-8): its own outcome, not a success.
    task = await crawl_one(site, tmp_path / "b", "/mislabelled")
    assert task.state is TaskState.COMPLETED and task.outcome == "undecodable"
    assert task.last_error == "undecodable: body is not valid no-such"

    async def latin1(request: web.Request) -> web.StreamResponse:
        body = '<a href="/p/1.html">caf\u00e9</a>'.encode("latin-1")
        return web.Response(body=body, headers={"Content-Type": "text/html; charset=latin1"})

    # The same bytes, declared right ("latin1" is a WHATWG label; "latin-1" is not): a success.
    site.set_handler("/latin1", latin1)
    task = await crawl_one(site, tmp_path / "c", "/latin1")
    assert task.outcome == "success" and task.last_error is None


# -- statuses, retries, Retry-After ---------------------------------------------------------


async def test_404_and_403_are_final_answers(site: LoopbackSite, tmp_path: Path) -> None:
    site.set_handler("/gone", respond(404))
    site.set_handler("/forbidden", respond(403))
    gone = await crawl_one(site, tmp_path / "a", "/gone")
    forbidden = await crawl_one(site, tmp_path / "b", "/forbidden")
    assert gone.state is TaskState.COMPLETED and gone.http_status == 404
    assert gone.outcome == "http_error" and gone.attempt_count == 1
    assert forbidden.state is TaskState.COMPLETED and forbidden.outcome == "blocked"
    assert len(requests_to(site, "/gone")) == len(requests_to(site, "/forbidden")) == 1


async def test_500_forever_fails_after_max_retries(site: LoopbackSite, tmp_path: Path) -> None:
    site.set_handler("/broken", respond(500))
    task = await crawl_one(site, tmp_path, "/broken", max_retries=4)
    assert task.state is TaskState.FAILED and task.attempt_count == 4
    assert task.last_error == "http_error: HTTP 500"
    assert len(requests_to(site, "/broken")) == 4


async def test_503_twice_then_200_backs_off_and_completes(
    site: LoopbackSite, tmp_path: Path
) -> None:
    site.set_handler("/flaky", sequence(respond(503), respond(503), respond(200, "<p>ok</p>")))
    task = await crawl_one(site, tmp_path, "/flaky", retry_backoff=0.3, retry_backoff_max=1.0)
    assert task.state is TaskState.COMPLETED and task.http_status == 200
    starts = requests_to(site, "/flaky")
    assert len(starts) == 3
    assert starts[1] - starts[0] >= 0.3 and starts[2] - starts[1] >= 0.6 * 0.99


@pytest.mark.parametrize("form", ["seconds", "http-date"])
async def test_429_retry_after_is_honoured(site: LoopbackSite, tmp_path: Path, form: str) -> None:
    def retry_after() -> str:
        if form == "seconds":
            return "2"
        return email.utils.formatdate(time.time() + 3, usegmt=True)

    async def limited(request: web.Request) -> web.StreamResponse:
        return web.Response(status=429, headers={"Retry-After": retry_after()})

    site.set_handler("/limited", sequence(limited, respond(200, "<p>ok</p>")))
    task = await crawl_one(site, tmp_path, "/limited")
    assert task.state is TaskState.COMPLETED
    first, second = requests_to(site, "/limited")
    # HTTP-dates have one-second resolution: at least 2 s of the 3 asked for remain.
    assert second - first >= 1.95


# -- robots.txt -----------------------------------------------------------------------------


async def test_robots_disallowed_paths_get_no_request(
    site_factory: Callable[[SiteSpec], LoopbackSite], tmp_path: Path
) -> None:
    site = site_factory(SiteSpec(hosts=1, pages_per_host=30))
    site.set_handler(
        "/robots.txt",
        respond(200, "User-agent: *\nDisallow: /p/1\n"),
    )
    settings = fast_settings(tmp_path, respect_robots=True)
    run, _, tasks = await run_crawl(settings, CrawlRequest(seeds=tuple(site.root_urls)))
    assert run.status is RunStatus.COMPLETED
    assert not [r for r in site.requests if r.path.startswith("/p/1")]
    blocked = [t for t in tasks if "/p/1" in t.url]
    assert blocked and all(t.state is TaskState.FAILED and t.outcome == "blocked" for t in blocked)
    assert all(t.last_error == "blocked: robots.txt disallows it" for t in blocked)
    assert len(requests_to(site, "/robots.txt")) == 1  # cached


async def test_robots_over_the_body_cap_is_parsed_from_its_first_512_kib(
    site_factory: Callable[[SiteSpec], LoopbackSite], tmp_path: Path
) -> None:
    """RFC 9309 §2.5: a robots.txt larger than max_body_bytes was "too large", so allowed
    everything. Its first 512 KiB are parsed now (the rest is never read), whatever the cap."""
    site = site_factory(SiteSpec(hosts=1, pages_per_host=30))
    kib = 1024
    rules = b"User-agent: *\nDisallow: /p/1\n"
    head = rules + b"#" * (512 * kib - len(rules) - 8) + b"\n"
    late = b"Disallow: /p/2\n"  # across the 512 KiB mark: cut, never read whole
    total = 8 * 1024 * kib
    sent = 0

    async def huge_robots(request: web.Request) -> web.StreamResponse:
        nonlocal sent
        response = web.StreamResponse(headers={"Content-Type": "text/plain"})
        response.content_length = total
        await response.prepare(request)
        body = head + late + b"#" * (total - len(head) - len(late))
        try:
            for start in range(0, total, 64 * kib):
                await response.write(body[start : start + 64 * kib])
                sent = start + 64 * kib
        except (ConnectionError, RuntimeError):
            pass  # the crawler stopped reading: what this test wants
        return response

    assert len(head) < 512 * kib < len(head) + len(late)
    site.set_handler("/robots.txt", huge_robots)
    settings = fast_settings(tmp_path, respect_robots=True, max_body_bytes=64 * kib)
    run, _, tasks = await run_crawl(settings, CrawlRequest(seeds=tuple(site.root_urls)))
    assert run.status is RunStatus.COMPLETED
    assert not [r for r in site.requests if r.path.startswith("/p/1")]  # not allow-all
    blocked = [t for t in tasks if "/p/1" in t.url]
    assert blocked and all(t.last_error == "blocked: robots.txt disallows it" for t in blocked)
    assert [r for r in site.requests if r.path.startswith("/p/2")]  # the rule past 512 KiB
    assert len(requests_to(site, "/robots.txt")) == 1
    assert sent < total  # the rest of the 8 MB was never read


async def test_robots_5xx_disallows_everything_until_rechecked(
    site: LoopbackSite, tmp_path: Path
) -> None:
    site.set_handler("/robots.txt", respond(503))
    task = await crawl_one(
        site, tmp_path, "/", respect_robots=True, max_retries=2, robots_recheck_seconds=0.2,
        dead_host_attempts=0,  # the URL's own retries; tests/faults/test_dead_hosts.py
    )  # fmt: skip
    assert task.state is TaskState.FAILED and task.outcome == "blocked"
    assert task.last_error == "blocked: robots.txt unreachable (HTTP 503)"
    assert requests_to(site, "/") == []
    assert len(requests_to(site, "/robots.txt")) == 2  # asked again after the recheck time


async def test_robots_404_allows_everything(site: LoopbackSite, tmp_path: Path) -> None:
    site.set_handler("/robots.txt", respond(404))
    task = await crawl_one(site, tmp_path, "/", respect_robots=True)
    assert task.state is TaskState.COMPLETED and len(requests_to(site, "/")) == 1


async def test_crawl_delay_spaces_requests(
    site_factory: Callable[[SiteSpec], LoopbackSite], tmp_path: Path
) -> None:
    site = site_factory(SiteSpec(hosts=1, pages_per_host=4))
    site.set_handler("/robots.txt", respond(200, "User-agent: *\nCrawl-delay: 0.5\n"))
    settings = fast_settings(tmp_path, respect_robots=True, per_host_concurrency=4)
    run, _, _ = await run_crawl(settings, CrawlRequest(seeds=tuple(site.root_urls)))
    assert run.status is RunStatus.COMPLETED
    starts = sorted(r.started for r in site.requests if r.path != "/robots.txt")
    assert len(starts) == 4
    gaps = [b - a for a, b in itertools.pairwise(starts)]
    assert min(gaps) >= 0.5 * 0.98, gaps


# -- sitemaps --------------------------------------------------------------------------------


async def test_sitemaps_from_robots_feed_the_frontier(
    site_factory: Callable[[SiteSpec], LoopbackSite], tmp_path: Path
) -> None:
    site = site_factory(SiteSpec(hosts=1, pages_per_host=3))
    origin = f"http://{site.hosts[0]}"
    site.set_handler("/robots.txt", respond(200, f"Sitemap: {origin}/sm-index.xml\n"))
    index = f"<sitemapindex><sitemap><loc>{origin}/sm1.xml.gz</loc></sitemap></sitemapindex>"
    site.set_handler("/sm-index.xml", respond(200, index))
    urlset = (
        "<urlset>"
        + "".join(f"<url><loc>{origin}/only-in-sitemap/{n}</loc></url>" for n in range(5))
        + f"<url><loc>http://{OUT_OF_SCOPE_IPS[1]}/x</loc></url></urlset>"
    )
    packed = gzip.compress(urlset.encode())

    async def gz(request: web.Request) -> web.StreamResponse:
        return web.Response(body=packed, content_type="application/gzip")

    async def page(request: web.Request) -> web.StreamResponse:
        return web.Response(text="<p>hidden</p>", content_type="text/html")

    site.set_handler("/sm1.xml.gz", gz)
    for n in range(5):
        site.set_handler(f"/only-in-sitemap/{n}", page)
    settings = fast_settings(tmp_path, respect_robots=True, sitemaps=True)
    run, _, tasks = await run_crawl(settings, CrawlRequest(seeds=tuple(site.root_urls)))
    assert run.status is RunStatus.COMPLETED
    hidden = {t.url for t in tasks if "/only-in-sitemap/" in t.url}
    assert hidden == {f"{origin}/only-in-sitemap/{n}" for n in range(5)}
    assert all(len(requests_to(site, f"/only-in-sitemap/{n}")) == 1 for n in range(5))
    assert not any(OUT_OF_SCOPE_IPS[1] in t.url for t in tasks)


async def test_sitemaps_can_be_turned_off(site: LoopbackSite, tmp_path: Path) -> None:
    settings = fast_settings(tmp_path, sitemaps=False)
    await run_crawl(settings, CrawlRequest(seeds=tuple(site.root_urls)))
    assert requests_to(site, "/sitemap.xml") == []


async def test_robots_behind_a_redirect_loop_allows_everything(
    site: LoopbackSite, tmp_path: Path
) -> None:
    site.set_handler("/robots.txt", respond(302, Location="/robots.txt"))
    task = await crawl_one(site, tmp_path, "/", respect_robots=True)
    assert task.state is TaskState.COMPLETED and len(requests_to(site, "/")) == 1


async def test_robots_with_no_answer_at_all_disallows_everything(
    site: LoopbackSite, tmp_path: Path
) -> None:
    async def hang_up(request: web.Request) -> web.StreamResponse:
        assert request.transport is not None
        request.transport.abort()  # connection reset: no HTTP answer
        return web.Response()

    site.set_handler("/robots.txt", hang_up)
    task = await crawl_one(
        site, tmp_path, "/", respect_robots=True, max_retries=2, robots_recheck_seconds=0.2,
        dead_host_attempts=0,  # the URL's own retries; tests/faults/test_dead_hosts.py
    )  # fmt: skip
    assert task.state is TaskState.FAILED and task.outcome == "blocked"
    assert (task.last_error or "").startswith("blocked: robots.txt unreachable")
    assert requests_to(site, "/") == []
