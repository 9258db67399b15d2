"""A robots.txt built to be slow to match never holds the worker's loop (issue 29, item 2).

protego tries every wildcard rule of the group in turn for each URL: 24,000 distinct
``Disallow: /*a<N>$`` lines (under the 512 KiB read) cost tens of milliseconds a URL, for
every page of the host. Such a file is parsed and matched on a thread; the loop, which
serves every other host, heartbeats and signals, goes on meanwhile. The verdicts are the
ones the whole file gives: its last rule applies.
"""

from __future__ import annotations

import asyncio
import time

from aiohttp import web

from sitesync.fetch.base import FetchLimits
from sitesync.fetch.http import HttpFetcher
from sitesync.fetch.robots import HEAVY_ROBOTS_CHARS, RobotsCache
from sitesync.testing import OPEN_LOOPBACK, LoopbackSite, SiteSpec

RULES = 24_000
#: The longest the loop may go without running a ready callback (issue 29: 100 ms).
LOOP_BUDGET = 0.1


def slow_robots() -> str:
    rules = "".join(f"Disallow: /*a{i}$\n" for i in range(RULES))
    return f"User-agent: *\n{rules}Disallow: /last-rule\n"


async def longest_stall(work: asyncio.Future[object]) -> float:
    """The longest gap (beyond the tick) between two 5 ms ticks of the loop while ``work`` runs."""
    longest, last = 0.0, time.monotonic()
    while not work.done():
        await asyncio.sleep(0.005)
        now = time.monotonic()
        longest, last = max(longest, now - last - 0.005), now
    return longest


async def test_a_robots_txt_slow_to_match_is_matched_off_the_loop() -> None:
    body = slow_robots()
    assert HEAVY_ROBOTS_CHARS < len(body) < 512 * 1024

    async def robots(request: web.Request) -> web.Response:
        return web.Response(text=body)

    with LoopbackSite(SiteSpec(hosts=1, pages_per_host=1)) as site:
        site.set_handler("/robots.txt", robots)
        origin = site.root_urls[0].rstrip("/")
        limits = FetchLimits(total_timeout=10)
        async with HttpFetcher(network=OPEN_LOOPBACK, limits=limits) as fetcher:
            cache = RobotsCache(fetcher, user_agent="sitesync/1.0")
            # Fetched, then parsed on a thread (0.3 s of protego here).
            first = asyncio.ensure_future(cache.check(f"{origin}/", origin))
            parse_stall = await longest_stall(first)
            assert (await first).allowed
            urls = [f"{origin}/p/{i}/" + "a" * 300 for i in range(40)]
            urls += [f"{origin}/x/a17$", f"{origin}/last-rule/page"]
            checks = asyncio.ensure_future(
                asyncio.gather(*(cache.check(url, origin) for url in urls))
            )
            stall = await longest_stall(checks)
            verdicts = await checks
    assert stall < LOOP_BUDGET, f"the loop stood still for {stall * 1000:.0f} ms"
    # The parse's own thread holds the GIL in turns of its own (and the collector's): once
    # per robots.txt, and under a parse on the loop (300 ms) by far.
    assert parse_stall < 2 * LOOP_BUDGET, f"parsing stalled the loop {parse_stall * 1000:.0f} ms"
    allowed = {url.removeprefix(origin): v.allowed for url, v in zip(urls, verdicts, strict=True)}
    assert all(allowed[f"/p/{i}/" + "a" * 300] for i in range(40)), allowed
    assert allowed["/x/a17$"] is False  # ``/*a17$`` (the `$` escaped in the URL too)
    assert allowed["/last-rule/page"] is False  # the whole file was read
