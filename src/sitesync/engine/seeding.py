"""Seeding a run (its seed URLs), and the sitemaps of its seed hosts.

A run is marked seeded once its seeds are admitted. Sitemaps are not read here but by
whoever attempts a seed: that worker holds the host's claim and its politeness slot, so a
sitemap is one more request to the host through the same gate as its pages (never a request
beside them from a worker that does not hold the host). The URLs found go in with the seed's
report, so the run cannot complete before they are admitted.

Every sitemap location (robots.txt ``Sitemap:`` lines, ``/sitemap.xml``, index children)
passes the run's host scope and robots.txt before it is fetched, and none is fetched while
robots.txt is unreachable (5xx, no answer: "disallow all"). The page URLs a sitemap lists
are scoped like links and checked against robots.txt when they are fetched.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable

from sitesync.fetch.base import FetchOutcome, FetchResult
from sitesync.fetch.polite import PoliteClient
from sitesync.fetch.politeness import HostLimiter
from sitesync.fetch.robots import RobotsCache
from sitesync.fetch.sitemaps import Sitemap, collect_sitemap_urls, parse_sitemap
from sitesync.frontier.frontier import Frontier
from sitesync.frontier.scope import Scope
from sitesync.plugins.offloop import PageWork, ParseTimeout
from sitesync.store.base import Store
from sitesync.urls import origin_of, resolve_link, url_host

log = logging.getLogger(__name__)


async def seed_run(store: Store, frontier: Frontier) -> None:
    admitted = await frontier.seed()
    log.info("run %d: %d seeds admitted", frontier.run_id, admitted)
    await store.mark_seeded(frontier.run_id)


class SitemapReader:
    """Reads each seed origin's sitemaps once per worker, politely and within scope."""

    def __init__(
        self,
        *,
        client: PoliteClient,
        limiter: HostLimiter,
        robots: RobotsCache | None,
        scope: Callable[[], Scope],
        max_bytes: int,
        work: PageWork | None = None,
    ) -> None:
        self._work = work or PageWork(budget=float("inf"))
        self._client = client
        self._limiter = limiter
        self._robots = robots
        self._scope = scope
        self._max_bytes = max_bytes
        self._read: set[str] = set()

    async def page_urls(self, seed_url: str) -> list[str]:
        """The normalized page URLs the sitemaps of ``seed_url``'s origin list (once)."""
        urls, _ = await self.pages(seed_url)
        return urls

    async def pages(self, seed_url: str) -> tuple[list[str], dict[str, float]]:
        """:meth:`page_urls`, and the ``<lastmod>`` of those that have one (epoch seconds,
        by normalized URL)."""
        origin = origin_of(seed_url)
        if origin in self._read or self._scope().max_depth == 0:
            return [], {}
        host = url_host(seed_url)
        roots = [origin + "/sitemap.xml"]
        if self._robots is not None:
            listed = await self._robots.sitemaps(origin, gate=lambda: self._limiter.slot(host))
            if listed is None:  # robots.txt unreachable: disallow all, sitemaps included
                return [], {}
            roots = [*listed, *roots]
        self._read.add(origin)
        listed_dates: dict[str, float] = {}
        urls, problems = await collect_sitemap_urls(
            roots,
            self._fetch_if_allowed,
            max_bytes=self._max_bytes,
            parse=self._parse,
            dates=listed_dates,
        )
        for problem in problems:
            log.warning("sitemap of %s: %s", host, problem)
        if urls:
            log.info("sitemaps of %s: %d URLs listed", host, len(urls))
        # Up to 100,000 URLs: normalized off the loop, like a large page's links.
        budget = self._work.for_page(len(urls) * 16)
        return await budget.run(_resolved, origin + "/", urls, listed_dates)

    async def _parse(self, body: bytes, max_urls: int) -> Sitemap:
        """A sitemap's body parsed off the loop (when large) within parse_timeout_seconds;
        past it the sitemap lists nothing."""
        budget = self._work.for_page(len(body))
        parse = functools.partial(parse_sitemap, body, max_bytes=self._max_bytes, max_urls=max_urls)
        try:
            return await budget.run(parse)
        except ParseTimeout as exc:
            log.warning("a sitemap of %d bytes not read: %s", len(body), exc)
            return Sitemap(urls=(), children=())

    async def _fetch_if_allowed(self, url: str) -> FetchResult:
        target = resolve_link(url, url)
        # The host part of the scope only: include/exclude patterns describe pages.
        scope = self._scope()
        hosts = Scope(scope.seed_hosts, scope.allowed_domains)
        if target is None or not hosts.admits(target, url_host(target), 0):
            return FetchResult(url=url, outcome=FetchOutcome.BLOCKED, error="out of scope")
        # The host's claim, robots.txt and politeness slot: the client checks them all.
        return await self._client.fetch(target)


def _resolved(
    base: str, urls: list[str], listed_dates: dict[str, float]
) -> tuple[list[str], dict[str, float]]:
    """The page URLs normalized, and their dates by normalized URL."""
    pages: list[str] = []
    dates: dict[str, float] = {}
    for url in urls:
        page = resolve_link(base, url)
        if page:
            pages.append(page)
            if url in listed_dates:
                dates[page] = listed_dates[url]
    return pages, dates
