"""Seeding a run: its seed URLs, then the URLs its seed hosts list in sitemaps.

A run is marked seeded only when both are done, and it cannot complete before that: a
worker that dies mid-seeding leaves the run unseeded, and the next worker seeds again
(admission dedups, so nothing is added twice).
"""

from __future__ import annotations

import logging

from sitesync.fetch.base import Fetcher, FetchResult
from sitesync.fetch.politeness import HostLimiter
from sitesync.fetch.robots import RobotsCache
from sitesync.fetch.sitemaps import collect_sitemap_urls
from sitesync.frontier.frontier import Frontier
from sitesync.store.base import Store
from sitesync.urls import resolve_link, url_host

log = logging.getLogger(__name__)


async def seed_run(
    store: Store,
    frontier: Frontier,
    *,
    fetcher: Fetcher,
    limiter: HostLimiter,
    robots: RobotsCache | None,
    sitemaps: bool,
    sitemap_max_bytes: int,
) -> None:
    admitted = await frontier.seed()
    log.info("run %d: %d seeds admitted", frontier.run_id, admitted)
    if sitemaps:
        for origin in dict.fromkeys(_origin(seed) for seed in frontier.seeds):
            await _admit_sitemaps(
                frontier, origin, fetcher, limiter, robots, max_bytes=sitemap_max_bytes
            )
    await store.mark_seeded(frontier.run_id)


async def _admit_sitemaps(
    frontier: Frontier,
    origin: str,
    fetcher: Fetcher,
    limiter: HostLimiter,
    robots: RobotsCache | None,
    *,
    max_bytes: int,
) -> None:
    host = url_host(origin + "/")
    roots = [origin + "/sitemap.xml"]
    if robots is not None:
        listed = await robots.sitemaps(origin)
        roots = [*listed, *roots]

    async def polite_fetch(url: str) -> FetchResult:
        async with limiter.slot(url_host(url)):
            return await fetcher.fetch(url)

    urls, problems = await collect_sitemap_urls(roots, polite_fetch, max_bytes=max_bytes)
    for problem in problems:
        log.warning("sitemap of %s: %s", host, problem)
    normalized = [u for u in (resolve_link(origin + "/", url) for url in urls) if u]
    admitted = await frontier.admit(normalized, depth=1)
    if urls:
        log.info("sitemaps of %s: %d URLs listed, %d admitted", host, len(urls), admitted)


def _origin(url: str) -> str:
    return url[: url.index("/", url.index("//") + 2)]
