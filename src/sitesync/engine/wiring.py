"""What each part of a worker is given, built from :class:`~sitesync.config.Settings`.

Settings sit below the crawl code and know nothing of it; the crawl code reads them here.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from sitesync.config import Settings
from sitesync.engine.options import WorkerOptions
from sitesync.fetch.adaptive import PaceSettings
from sitesync.fetch.base import FetchLimits
from sitesync.fetch.netpolicy import NetworkPolicy
from sitesync.frontier.retry import RetryPolicy
from sitesync.networks import parse_networks
from sitesync.profiles import ProfileOf, RequestProfile, profile_from, profiles_for
from sitesync.urls import url_host


def network_policy(settings: Settings) -> NetworkPolicy:
    """Which addresses requests may connect to (every fetcher of a worker uses it)."""
    return NetworkPolicy(
        allow_private=settings.allow_private_networks,
        allowed=parse_networks(settings.allowed_networks),
    )


def request_profiles(settings: Settings, seeds: Iterable[str]) -> ProfileOf:
    """What each host's requests carry (sitesync/profiles.py): the crawl's profile for the
    run's seeds' sites, each ``[sites."HOST"]`` table's for its host. A malformed ``auth``
    or site table is a ConfigError here, before the first request."""
    crawl = RequestProfile(
        headers=settings.request_headers,
        cookies=settings.cookies,
        auth=settings.auth.get_secret_value() if settings.auth else None,
        proxy=settings.proxy.get_secret_value() if settings.proxy else None,
    )
    sites = {host.lower(): profile_from(table) for host, table in settings.sites.items()}
    for profile in (crawl, *sites.values()):
        profile.request_headers()  # raises ConfigError on an auth it cannot send
    return profiles_for(crawl, sites, {url_host(seed) for seed in seeds})


def fetch_limits(settings: Settings) -> FetchLimits:
    # The total bounds everything: a shorter --timeout needs no other timeout lowered.
    return FetchLimits(
        connect_timeout=min(settings.connect_timeout, settings.total_timeout),
        read_timeout=min(settings.read_timeout, settings.total_timeout),
        total_timeout=settings.total_timeout,
        max_body_bytes=settings.max_body_bytes,
        max_redirects=settings.max_redirects,
    )


def worker_options(settings: Settings) -> WorkerOptions:
    return WorkerOptions(
        concurrency=settings.concurrency,
        per_host_concurrency=settings.per_host_concurrency,
        delay=settings.delay,
        adaptive=PaceSettings(
            enabled=settings.adaptive_politeness,
            max_delay=settings.adaptive_max_delay,
            recovery_seconds=settings.adaptive_recovery_seconds,
            latency_factor=settings.adaptive_latency_factor,
        ),
        lease_seconds=settings.lease_seconds,
        in_flight_limit=settings.in_flight_limit,
        respect_robots=settings.respect_robots,
        robots_recheck_seconds=settings.robots_recheck_seconds,
        dead_host_attempts=settings.dead_host_attempts,
        dead_host_recheck=settings.dead_host_recheck_seconds,
        sitemaps=settings.sitemaps,
        follow_offsite_seed_redirects=settings.follow_offsite_seed_redirects,
        conditional_requests=settings.conditional_requests,
        sitemap_skips_unchanged=settings.sitemap_skips_unchanged,
        sitemap_max_bytes=settings.max_body_bytes,
        max_crawl_delay=settings.max_crawl_delay,
        max_retry_after=settings.max_retry_after,
        heartbeat_seconds=settings.heartbeat_seconds,
        status_poll=settings.status_poll_seconds,
        drain_timeout=settings.drain_timeout,
        claim_seconds=settings.claim_seconds,
        claim_safety=settings.total_timeout + 1,
        max_claims_per_worker=settings.max_claims_per_worker,
        stats_flush_interval=settings.domain_stats_flush_interval_pages,
        max_links_per_page=settings.max_links_per_page,
        max_parse_bytes=settings.max_parse_bytes,
        parse_timeout=settings.parse_timeout_seconds,
        retry=RetryPolicy(
            initial=settings.retry_backoff,
            maximum=settings.retry_backoff_max,
            jitter=min(1.0, settings.retry_backoff),
        ),
    )


def live_pace(
    settings: Mapping[str, Any], options: WorkerOptions
) -> tuple[int, float, PaceSettings]:
    """Per-host concurrency, delay and adaptive settings from a run's stored settings (JSON),
    the worker's own options where the run has none: what a worker applies when the run's
    politeness changes while it goes on (:data:`sitesync.run_settings.LIVE`)."""
    adaptive = options.adaptive
    return (
        int(settings.get("per_host_concurrency", options.per_host_concurrency)),
        float(settings.get("delay", options.delay)),
        PaceSettings(
            enabled=bool(settings.get("adaptive_politeness", adaptive.enabled)),
            max_delay=float(settings.get("adaptive_max_delay", adaptive.max_delay)),
            recovery_seconds=float(
                settings.get("adaptive_recovery_seconds", adaptive.recovery_seconds)
            ),
            latency_factor=float(settings.get("adaptive_latency_factor", adaptive.latency_factor)),
        ),
    )
