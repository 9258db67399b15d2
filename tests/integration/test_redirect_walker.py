"""The one redirect walker (issue 32, item 3), as the polite client (sitemaps, plugins'
downloads) uses it against a real loopback server: each hop is a request of its own,
asked of robots.txt and taken through the host's slot, and a hop to another host is
recorded, never requested."""

from __future__ import annotations

import itertools

from aiohttp import web

from sitesync.fetch.base import FetchOutcome, RedirectHop
from sitesync.fetch.gate import RequestGate
from sitesync.fetch.http import HttpFetcher
from sitesync.fetch.polite import PoliteClient
from sitesync.fetch.politeness import HostLimiter
from sitesync.fetch.robots import RobotsCache
from sitesync.testing import OPEN_LOOPBACK, LoopbackSite, SiteSpec

ROBOTS = "User-agent: *\nDisallow: /private\n"


def redirect(location: str) -> object:
    async def handle(request: web.Request) -> web.Response:
        return web.Response(status=302, headers={"Location": location})

    return handle


async def anyone(host: str) -> bool:
    return True


async def test_a_polite_fetch_walks_each_hop_through_robots_and_the_hosts_pace() -> None:
    delay = 0.3

    async def robots(request: web.Request) -> web.Response:
        return web.Response(text=ROBOTS)

    with LoopbackSite(SiteSpec(hosts=2, pages_per_host=3)) as site:
        origin, other = (url.rstrip("/") for url in site.root_urls)
        site.set_handler("/robots.txt", robots)
        site.set_handler("/asset", redirect("/moved"))
        site.set_handler("/moved", redirect("/p/1.html"))
        site.set_handler("/sneaky", redirect("/private/secret"))
        site.set_handler("/away", redirect(f"{other}/p/1.html"))
        async with HttpFetcher(network=OPEN_LOOPBACK) as fetcher:
            limiter = HostLimiter(concurrency=1, delay=delay)
            cache = RobotsCache(fetcher, user_agent="sitesync/1.0")
            gate = RequestGate(limiter=limiter, robots=cache, may_request=anyone)
            client = PoliteClient(fetcher, gate)
            followed = await client.fetch(f"{origin}/asset")
            refused = await client.fetch(f"{origin}/sneaky")
            away = await client.fetch(f"{origin}/away")
        requests = [r for r in site.requests if r.host == site.hosts[0]]

    assert followed.outcome is FetchOutcome.SUCCESS and followed.status == 200
    assert followed.redirects == (
        RedirectHop(f"{origin}/asset", f"{origin}/moved", 302),
        RedirectHop(f"{origin}/moved", f"{origin}/p/1.html", 302),
    )
    assert followed.final_url == f"{origin}/p/1.html"
    # A hop on the same host that robots.txt disallows: on the chain, never requested.
    assert refused.outcome is FetchOutcome.BLOCKED
    assert refused.redirects == (RedirectHop(f"{origin}/sneaky", f"{origin}/private/secret", 302),)
    assert refused.error is not None and "robots.txt" in refused.error
    # A hop to another host: recorded, not followed (its host's gate is not this one).
    assert away.outcome is FetchOutcome.REDIRECT_NOT_FOLLOWED
    assert away.redirects == (RedirectHop(f"{origin}/away", f"{other}/p/1.html", 302),)
    paths = [r.path for r in requests]
    assert "/private/secret" not in paths
    assert all(r.host != site.hosts[1] for r in site.requests)
    # Every hop was a request of its own, each at the host's pace.
    assert paths == ["/robots.txt", "/asset", "/moved", "/p/1.html", "/sneaky", "/away"]
    starts = sorted(r.started for r in requests)
    gaps = [b - a for a, b in itertools.pairwise(starts)]
    assert min(gaps) >= delay * 0.9, gaps
