"""Scope, robots.txt and politeness at every step, shown with the real CLI against loopback
servers, and asserted from the servers' own request logs (issue 11, items 2 to 4)."""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import os
import secrets
import sys
from collections import Counter, defaultdict
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path

import pytest
from aiohttp import web

from sitesync.models import Task
from sitesync.store import open_store
from sitesync.testing import LoopbackSite, RequestRecord, SiteSpec
from tests.acceptance._cli import KEPT

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]
SiteFactory = Callable[[SiteSpec], LoopbackSite]

#: Every crawl here: quick retries, short timeouts, no waiting between requests unless a
#: test is about waiting.
QUICK = {
    "delay": "0", "retry_backoff": "0.05", "retry_backoff_max": "0.1", "total_timeout": "3",
    "connect_timeout": "1", "read_timeout": "2",
}  # fmt: skip


async def sitesync(*args: str, settings: dict[str, str], seconds: float = 60) -> str:
    """Run the real CLI (``settings`` as SITESYNC_* variables); return its output."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("SITESYNC_") or k in KEPT}
    env.update({f"SITESYNC_{k.upper()}": v for k, v in {**QUICK, **settings}.items()})
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "sitesync", *args,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE, env=env,
    )  # fmt: skip
    out, err = await asyncio.wait_for(proc.communicate(), seconds)
    assert proc.returncode in (0, 1), err.decode()  # 1: the run failed, which tests check
    assert "Traceback" not in err.decode(), err.decode()
    return out.decode() + err.decode()


async def crawl(db: Path, *args: str, **settings: str) -> dict[str, Task]:
    """``sitesync crawl`` to its end; the run's tasks by URL."""
    await sitesync("crawl", "--db", str(db), "--no-progress", *args, settings=settings)
    store = await open_store(str(db))
    try:
        tasks = await store.list_tasks(1, limit=10_000)
    finally:
        await store.close()
    return {t.url: t for t in tasks}


def respond(
    status: int, body: str = "", content_type: str = "text/html", **headers: str
) -> Handler:
    async def handler(request: web.Request) -> web.StreamResponse:
        return web.Response(status=status, text=body, headers=headers, content_type=content_type)

    return handler


def per_host(answers: dict[str, Handler], otherwise: Handler) -> Handler:
    """Answer by the Host the request was sent to (LoopbackSite handlers serve every host)."""

    async def handler(request: web.Request) -> web.StreamResponse:
        return await answers.get(request.headers.get("Host", ""), otherwise)(request)

    return handler


def requested(site: LoopbackSite, path: str, host: str | None = None) -> int:
    return sum(1 for r in site.requests if r.path == path and host in (None, r.host))


def xml(body: str) -> Handler:
    return respond(200, f'<?xml version="1.0"?>{body}', content_type="application/xml")


def urlset(*locs: str) -> str:
    return "<urlset>" + "".join(f"<url><loc>{loc}</loc></url>" for loc in locs) + "</urlset>"


def sitemapindex(*locs: str) -> str:
    entries = "".join(f"<sitemap><loc>{loc}</loc></sitemap>" for loc in locs)
    return f"<sitemapindex>{entries}</sitemapindex>"


# -- robots.txt at every hop ------------------------------------------------------------------


async def test_a_link_redirecting_into_a_disallowed_path_is_recorded_not_fetched(
    site_factory: SiteFactory, tmp_path: Path
) -> None:
    site = site_factory(SiteSpec(hosts=1, pages_per_host=3))
    origin = f"http://{site.hosts[0]}"
    site.set_handler("/robots.txt", respond(200, "User-agent: *\nDisallow: /private/\n"))
    site.set_handler("/p/1.html", respond(302, Location="/private/secret.html"))
    site.set_handler("/private/secret.html", respond(200, "<p>secret</p>"))
    # In scope (so only robots.txt stands between the link and its target).
    scope = ("--include", r"/$", "--include", r"/p/1\.html$", "--include", "/private/")
    tasks = await crawl(tmp_path / "c.db", site.root_urls[0], *scope)
    assert requested(site, "/p/1.html") == 1
    assert requested(site, "/private/secret.html") == 0  # the target was never asked for
    link = tasks[f"{origin}/p/1.html"]
    assert link.outcome == "blocked" and "robots.txt disallows it" in (link.last_error or "")
    assert link.redirects == ((f"{origin}/p/1.html", f"{origin}/private/secret.html", 302),)
    assert f"{origin}/private/secret.html" not in tasks


@pytest.mark.slow
async def test_crawl_delay_holds_from_the_first_page_after_robots_txt(
    site_factory: SiteFactory, tmp_path: Path
) -> None:
    site = site_factory(SiteSpec(hosts=1, pages_per_host=3))
    site.set_handler("/robots.txt", respond(200, "User-agent: *\nCrawl-delay: 2\n"))
    await crawl(
        tmp_path / "c.db", site.root_urls[0], "--include", r"/$", "--include", r"/p/1\.html$",
        delay="0.5", sitemaps="false",
    )  # fmt: skip
    log = sorted(site.requests, key=lambda r: r.started)
    assert [r.path for r in log][:1] == ["/robots.txt"] and len(log) == 3
    gaps = [b.started - a.started for a, b in itertools.pairwise(log)]
    # robots.txt -> root is the gap that used to be the default delay (1.0 s, here 0.5 s).
    assert min(gaps) >= 1.95, gaps


# -- session-id traps --------------------------------------------------------------------------


@contextlib.asynccontextmanager
async def session_trap(pages: int) -> AsyncIterator[tuple[str, list[str]]]:
    """A site whose every link carries a fresh session id (``?sid=``, ``;jsessionid=``,
    ``?PHPSESSID=``); yields its root URL and the log of paths requested (ids included)."""
    log: list[str] = []

    async def page(request: web.Request) -> web.StreamResponse:
        log.append(request.raw_path)
        if request.path.startswith("/robots.txt") or request.path.startswith("/sitemap"):
            return web.Response(status=404)
        links = []
        for n in range(pages):
            token = secrets.token_hex(8)
            links.append(f'<a href="/page/{n}?sid={token}">a</a>')
            links.append(f'<a href="/page/{n};jsessionid={token.upper()}">b</a>')
            links.append(f'<a href="/page/{n}?PHPSESSID={token}">c</a>')
        return web.Response(text="<html><body>" + "".join(links), content_type="text/html")

    app = web.Application()
    app.router.add_get("/{tail:.*}", page)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    server = web.TCPSite(runner, "127.0.0.1", 0)
    await server.start()
    port = runner.addresses[0][1]
    try:
        yield f"http://127.0.0.1:{port}/", log
    finally:
        await runner.cleanup()


def page_paths(log: list[str]) -> list[str]:
    return [p for p in log if p.startswith("/page/") or p == "/"]


@pytest.mark.slow
async def test_a_session_id_trap_costs_no_more_than_its_distinct_pages(tmp_path: Path) -> None:
    async with session_trap(pages=5) as (root, log):
        await crawl(tmp_path / "trap.db", root)
        fetched = page_paths(log)
        assert len(fetched) == 6  # the root and five pages, each once
        assert {p.split("?")[0].split(";")[0] for p in fetched} == {"/"} | {
            f"/page/{n}" for n in range(5)
        }
        # The same trap with session parameters kept (the old behaviour) never ends on its
        # own: every link is a new URL.
        log.clear()
        await crawl(tmp_path / "kept.db", root, "--max-pages", "40", session_params="")
        assert len(page_paths(log)) == 40


# -- scope of sitemaps -------------------------------------------------------------------------


async def test_sitemaps_out_of_scope_or_disallowed_are_not_fetched(
    site_factory: SiteFactory, tmp_path: Path
) -> None:
    site = site_factory(SiteSpec(hosts=2, pages_per_host=3))
    ours, other = site.hosts
    robots = (
        "User-agent: *\nDisallow: /private/\n"
        f"Sitemap: http://{other}/sm-other.xml\nSitemap: http://{ours}/sm-index.xml\n"
    )
    site.set_handler("/robots.txt", per_host({ours: respond(200, robots)}, respond(404)))
    index = sitemapindex(
        f"http://{other}/child.xml", f"http://{ours}/private/child.xml", f"http://{ours}/child.xml"
    )
    site.set_handler("/sm-index.xml", xml(index))
    site.set_handler(
        "/child.xml", xml(urlset(f"http://{ours}/only-in-sitemap", f"http://{other}/p/1.html"))
    )
    site.set_handler("/private/child.xml", xml(urlset(f"http://{ours}/private/page")))
    site.set_handler("/only-in-sitemap", respond(200, "<p>listed</p>"))
    tasks = await crawl(
        tmp_path / "c.db", site.root_urls[0], "--include", r"/$", "--include", "/only-in-sitemap"
    )
    assert [r.path for r in site.requests if r.host == other] == []  # nothing off-site at all
    assert requested(site, "/private/child.xml") == 0  # robots.txt disallows that location
    assert requested(site, "/sm-index.xml", ours) == requested(site, "/child.xml", ours) == 1
    assert requested(site, "/only-in-sitemap", ours) == 1  # in scope: admitted and fetched
    assert f"http://{other}/p/1.html" not in tasks


@pytest.mark.slow
async def test_no_sitemap_is_read_while_robots_txt_answers_5xx(
    site_factory: SiteFactory, tmp_path: Path
) -> None:
    site = site_factory(SiteSpec(hosts=1, pages_per_host=3))
    site.set_handler("/robots.txt", respond(503))
    site.set_handler("/sitemap.xml", xml(urlset(f"http://{site.hosts[0]}/p/1.html")))
    # The host's checks of robots.txt re-checked after 0.3 s, not the default 5 s and 15 s:
    # the same three checks, none of them ever followed by a sitemap or a page.
    await crawl(
        tmp_path / "c.db", site.root_urls[0], robots_recheck_seconds="0.3", max_retries="2",
        dead_host_recheck_seconds="0.3",
    )  # fmt: skip
    assert requested(site, "/robots.txt") >= 1
    assert [r.path for r in site.requests if r.path != "/robots.txt"] == []


# -- seeds that redirect to another site --------------------------------------------------------


async def seed_redirecting_off_site(site: LoopbackSite) -> tuple[str, str]:
    ours, other = site.hosts
    away = respond(301, Location=f"http://{other}/landing")
    site.set_handler("/", per_host({ours: away}, respond(200, "<p>other site</p>")))
    site.set_handler("/landing", respond(200, "<p>landing</p>"))
    return ours, other


async def canonical_host(db: Path, host: str) -> str | None:
    store = await open_store(str(db))
    try:
        domain = await store.get_domain(host)
    finally:
        await store.close()
    return None if domain is None else domain.canonical_host


async def test_a_seed_redirect_to_another_site_is_recorded_not_followed(
    site_factory: SiteFactory, tmp_path: Path
) -> None:
    site = site_factory(SiteSpec(hosts=2, pages_per_host=3))
    ours, other = await seed_redirecting_off_site(site)
    tasks = await crawl(tmp_path / "c.db", site.root_urls[0], "--max-depth", "0")
    assert [r.path for r in site.requests if r.host == other] == []
    root = tasks[f"http://{ours}/"]
    assert root.outcome == "redirect_not_followed"
    assert root.redirects == ((f"http://{ours}/", f"http://{other}/landing", 301),)
    assert await canonical_host(tmp_path / "c.db", ours) == other  # the spec's canonical host


async def test_a_seed_redirect_to_another_site_is_followed_with_the_flag(
    site_factory: SiteFactory, tmp_path: Path
) -> None:
    site = site_factory(SiteSpec(hosts=2, pages_per_host=3))
    ours, other = await seed_redirecting_off_site(site)
    tasks = await crawl(
        tmp_path / "c.db", site.root_urls[0], "--max-depth", "0", "--follow-offsite-seed-redirects"
    )
    assert requested(site, "/landing", other) == 1
    root = tasks[f"http://{ours}/"]
    assert root.http_status == 200 and root.final_url == f"http://{other}/landing"
    assert await canonical_host(tmp_path / "c.db", ours) == other


# -- robots.txt behind redirects ------------------------------------------------------------------


def robots_behind(site: LoopbackSite, hops: int, rules: str) -> None:
    """/robots.txt redirects ``hops`` times on its own host before the rules answer."""
    site.set_handler("/robots.txt", respond(301, Location="/r/1"))
    for n in range(1, hops):
        site.set_handler(f"/r/{n}", respond(301, Location=f"/r/{n + 1}"))
    site.set_handler(f"/r/{hops}", respond(200, rules, content_type="text/plain"))


async def test_robots_txt_follows_five_same_site_redirects(
    site_factory: SiteFactory, tmp_path: Path
) -> None:
    site = site_factory(SiteSpec(hosts=1, pages_per_host=3))
    robots_behind(site, 5, "User-agent: *\nDisallow: /p/1.html\n")
    await crawl(tmp_path / "c.db", site.root_urls[0], "--include", r"/$|/p/1\.html$")
    assert requested(site, "/r/5") == 1  # five hops followed: the rules apply
    assert requested(site, "/p/1.html") == 0


async def test_robots_txt_stops_after_five_redirects(
    site_factory: SiteFactory, tmp_path: Path
) -> None:
    site = site_factory(SiteSpec(hosts=1, pages_per_host=3))
    robots_behind(site, 6, "User-agent: *\nDisallow: /p/1.html\n")
    await crawl(tmp_path / "c.db", site.root_urls[0], "--include", r"/$|/p/1\.html$")
    assert requested(site, "/r/5") == 1 and requested(site, "/r/6") == 0
    assert requested(site, "/p/1.html") == 1  # unavailable robots.txt: everything allowed


async def test_robots_txt_redirects_stay_on_the_site(
    site_factory: SiteFactory, tmp_path: Path
) -> None:
    site = site_factory(SiteSpec(hosts=2, pages_per_host=3))
    ours, other = site.hosts
    away = respond(301, Location=f"http://{other}/robots.txt")
    site.set_handler("/robots.txt", per_host({ours: away}, respond(200, "User-agent: *\n")))
    db = tmp_path / "c.db"
    await crawl(db, site.root_urls[0], "--include", r"/$|/p/1\.html$")
    assert [r.path for r in site.requests if r.host == other] == []
    assert requested(site, "/p/1.html") == 1
    store = await open_store(str(db))
    try:
        state = await store.get_host_state(ours)
    finally:
        await store.close()
    assert state is not None and state.robots_body is None  # nothing of the target stored


# -- one gate per host, across a fleet ----------------------------------------------------------


async def first_page_requested(site: LoopbackSite) -> None:
    for _ in range(600):
        if any(r.path != "/robots.txt" for r in site.requests):
            return
        await asyncio.sleep(0.05)
    raise AssertionError("the crawl never asked for a page")


def fleet_settings(db: str) -> dict[str, str]:
    """Robots and sitemaps on, one request per host at a time, 0.3 s between starts; at most
    two hosts per worker, so a fleet of three shares six hosts out."""
    return {
        "db": db, "concurrency": "4", "per_host_concurrency": "1", "delay": "0.3",
        "lease_seconds": "2", "claim_seconds": "5", "heartbeat_seconds": "0.3",
        "respect_robots": "true", "sitemaps": "true", "worker_id_header": "true",
        "total_timeout": "2", "max_claims_per_worker": "2",
    }  # fmt: skip


def politeness_faults(records: list[RequestRecord], delay: float) -> list[str]:
    """Requests to one host less than ``delay`` after the previous one ended (two at once
    included), whoever sent them. The server's clock is the judge: ``finished`` is when its
    handler returned, before the client can have the answer, so no client-side jitter can
    make a polite fleet look rude here."""
    faults = []
    by_host: dict[str, list[RequestRecord]] = defaultdict(list)
    for record in records:
        by_host[record.host].append(record)
    for host, requests in by_host.items():
        ordered = sorted(requests, key=lambda r: r.started)
        for a, b in itertools.pairwise(ordered):
            quiet = b.started - a.finished
            if quiet < delay:
                what = "overlaps" if quiet < 0 else f"only {quiet:.3f}s after"
                faults.append(f"{host}: {b.path} ({b.worker}) {what} {a.path} ({a.worker})")
    return faults


@pytest.mark.slow
async def test_a_fleet_never_sends_a_host_two_requests_at_once(
    site_factory: SiteFactory, db_url: str
) -> None:
    site = site_factory(SiteSpec(hosts=6, pages_per_host=12, links_per_page=8, delay=0.02))

    async def robots(request: web.Request) -> web.StreamResponse:
        host = request.headers["Host"]
        return web.Response(text=f"User-agent: *\nAllow: /\nSitemap: http://{host}/sm.xml\n")

    async def sitemap(request: web.Request) -> web.StreamResponse:
        host = request.headers["Host"]
        locs = "".join(f"<url><loc>http://{host}/p/{n}.html</loc></url>" for n in range(1, 12))
        return web.Response(text=f"<urlset>{locs}</urlset>", content_type="application/xml")

    site.set_handler("/robots.txt", robots)
    site.set_handler("/sm.xml", sitemap)
    settings = fleet_settings(db_url)
    first = asyncio.ensure_future(
        sitesync("crawl", *site.root_urls, "--no-progress", settings=settings, seconds=100)
    )
    await first_page_requested(site)  # the run exists by then: workers may join it
    others = [
        asyncio.ensure_future(sitesync("worker", "--run", "1", settings=settings, seconds=100))
        for _ in range(2)
    ]
    await asyncio.gather(first, *others)

    records = site.requests
    workers = Counter(r.worker for r in records)
    assert len(workers) >= 2, workers  # the hosts really were shared out
    assert Counter(r.path for r in records)["/sm.xml"] >= 6  # sitemaps were read, per host
    # The server's clock (monotonic, one process) orders every request of the fleet.
    assert politeness_faults(records, delay=0.3) == []
