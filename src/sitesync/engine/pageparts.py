"""A worker's page path put together: which part of a page attempt gets which of the
worker's collaborators and settings. Built in this one place, so that each part is given
only the few it uses and :class:`~sitesync.engine.page.PageAttempts` only its parts.
"""

from __future__ import annotations

from collections.abc import Callable

from sitesync.engine.beforefetch import BeforeFetch
from sitesync.engine.claims import ClaimKeeper
from sitesync.engine.deadhosts import DeadHosts
from sitesync.engine.hopchecks import HopChecks
from sitesync.engine.hops import HopFetcher
from sitesync.engine.hostsignals import HostSignals
from sitesync.engine.options import WorkerOptions
from sitesync.engine.page import PageAttempts
from sitesync.engine.pageanswers import PageAnswers
from sitesync.engine.pageread import PageReader
from sitesync.engine.pageturns import PageTurns
from sitesync.engine.pluginstep import ArtifactProcessor, PluginStep
from sitesync.engine.retrywait import RetryWaits
from sitesync.engine.revalidation import Revalidation
from sitesync.engine.seeding import SitemapReader
from sitesync.engine.sitemapdates import SitemapDates
from sitesync.engine.sitemapstep import SitemapStep
from sitesync.fetch.base import Fetcher
from sitesync.fetch.gate import RequestGate
from sitesync.fetch.polite import PoliteClient
from sitesync.frontier.frontier import Frontier
from sitesync.plugins.offloop import PageWork
from sitesync.store.base import Store


def page_revalidation(store: Store, fetcher: Fetcher, options: WorkerOptions) -> Revalidation:
    """Conditional requests: on unless the run turned them off or the page fetcher cannot
    send them. The worker's feeder reads a leased batch's validators into it."""
    revalidates = options.conditional_requests and getattr(fetcher, "revalidates", True)
    return Revalidation(store, enabled=revalidates)


def page_attempts(
    *,
    store: Store,
    frontier: Frontier,
    claims: ClaimKeeper,
    gate: RequestGate,
    fetcher: Fetcher,
    client: PoliteClient,
    revalidation: Revalidation,
    plugins: ArtifactProcessor | None,
    dead_hosts: DeadHosts | None,
    work: PageWork,
    halted: Callable[[], bool],
    worker_id: str,
    options: WorkerOptions,
) -> PageAttempts:
    """``client``: sitemaps are read through it; ``work``: where a page's CPU work runs;
    ``halted``: whether the worker is leaving (no attempt, no request starts then)."""
    # Every request of the page path starts at the worker's one gate (fetch/gate.py).
    turns = PageTurns(gate, halted)
    waits = RetryWaits(store, options.retry, max_retry_after=options.max_retry_after)
    plugin_step = PluginStep(plugins, frontier, max_links=options.max_links_per_page)
    dates = SitemapDates(store, frontier, revalidation.enabled, options.sitemap_skips_unchanged)
    follow = options.follow_offsite_seed_redirects
    checks = HopChecks(frontier=frontier, claims=claims, gate=gate, turns=turns,
                       follow_offsite_seed_redirects=follow)  # fmt: skip
    # What a page's CPU work is (decode, links, scoping), wherever it runs.
    reader = PageReader(frontier=frontier, max_links=options.max_links_per_page,
                        max_parse_bytes=options.max_parse_bytes,
                        decode_all=plugins is not None)  # fmt: skip
    sitemap_step = SitemapStep(_sitemaps(client, gate, frontier, work, options),
                               frontier=frontier, dates=dates, work=work)  # fmt: skip
    return PageAttempts(
        store=store, turns=turns, waits=waits, worker_id=worker_id,
        before=BeforeFetch(store=store, claims=claims, gate=gate, turns=turns, waits=waits,
                           plugin_step=plugin_step, dead_hosts=dead_hosts, sitemap_dates=dates),
        hops=HopFetcher(store=store, fetcher=fetcher, frontier=frontier, turns=turns,
                        checks=checks, revalidation=revalidation,
                        follow_offsite_seed_redirects=follow),
        signals=HostSignals(store=store, limiter=gate.limiter, dead_hosts=dead_hosts,
                            plugin_step=plugin_step, max_retry_after=options.max_retry_after),
        answers=PageAnswers(store=store, frontier=frontier, reader=reader, work=work,
                            waits=waits, revalidation=revalidation, plugin_step=plugin_step,
                            sitemap_step=sitemap_step),
    )  # fmt: skip


def _sitemaps(
    client: PoliteClient,
    gate: RequestGate,
    frontier: Frontier,
    work: PageWork,
    options: WorkerOptions,
) -> SitemapReader | None:
    """What reads a root's sitemaps (None: the run reads none)."""
    if not options.sitemaps:
        return None
    return SitemapReader(
        client=client,
        limiter=gate.limiter,
        robots=gate.robots,
        scope=lambda: frontier.scope,
        max_bytes=options.sitemap_max_bytes,
        work=work,
    )
