"""A worker's tunables, in one value object shared by its parts; their defaults are the
settings' (:func:`~sitesync.config.setting_default`), named as the settings are."""

from __future__ import annotations

from dataclasses import dataclass, field

from sitesync.config import derived_heartbeat, setting_default
from sitesync.fetch.adaptive import PaceSettings
from sitesync.frontier.retry import RetryPolicy


@dataclass(frozen=True, slots=True)
class WorkerOptions:
    concurrency: int = setting_default("concurrency")
    per_host_concurrency: int = setting_default("per_host_concurrency")  # 0 = no cap
    delay: float = setting_default("delay")  # seconds between request starts on one host
    # Adaptive politeness (its delay and concurrency come from the two above). Off unless
    # asked: Settings turn it on for crawls; a bare worker (tests, embedding) keeps a fixed pace.
    adaptive: PaceSettings = field(default_factory=lambda: PaceSettings(enabled=False))
    lease_seconds: float = setting_default("lease_seconds")
    in_flight_limit: int = setting_default("in_flight_limit")  # 0 = 4 x the concurrency
    report_batch: int = 256
    report_interval: float = 0.05
    poll_interval: float = 0.5
    status_poll: float = setting_default("status_poll_seconds")  # reads of the run's status
    drain_timeout: float = setting_default("drain_timeout")  # leaving: fetches may finish
    retry: RetryPolicy = field(default_factory=RetryPolicy)
    respect_robots: bool = setting_default("respect_robots")
    robots_recheck_seconds: float = setting_default("robots_recheck_seconds")
    dead_host_attempts: int = setting_default("dead_host_attempts")  # 0 = never
    dead_host_recheck: tuple[float, ...] = setting_default("dead_host_recheck_seconds")
    sitemaps: bool = setting_default("sitemaps")
    follow_offsite_seed_redirects: bool = setting_default("follow_offsite_seed_redirects")
    conditional_requests: bool = setting_default("conditional_requests")
    sitemap_skips_unchanged: bool = setting_default("sitemap_skips_unchanged")
    sitemap_max_bytes: int = setting_default("max_body_bytes")
    max_crawl_delay: float = setting_default("max_crawl_delay")
    max_retry_after: float = setting_default("max_retry_after")
    heartbeat_seconds: float = setting_default("heartbeat_seconds")  # 0 = derived
    claim_seconds: float = setting_default("claim_seconds")
    # A fetch starts only while its host's claim has this left: a whole request and a second.
    claim_safety: float = setting_default("total_timeout") + 1
    max_claims_per_worker: int | None = setting_default("max_claims_per_worker")
    # Processes of one crawl started together, this one included: at the start each takes
    # only its part of the hosts, leaving the others theirs (runs.claims).
    siblings: int = 1
    stats_flush_interval: int = setting_default("domain_stats_flush_interval_pages")
    max_links_per_page: int | None = setting_default("max_links_per_page")  # None = all
    max_parse_bytes: int | None = setting_default("max_parse_bytes")  # None = all
    parse_timeout: float = setting_default("parse_timeout_seconds")  # one page's CPU budget

    @property
    def heartbeat(self) -> float:
        return derived_heartbeat(self.heartbeat_seconds, self.lease_seconds, self.claim_seconds)

    @property
    def held_limit(self) -> int:
        # Four times: on a fast site half of what is held waits for its report batch to
        # commit (report_interval); at twice, the slots ran dry meanwhile (benchmarks/README).
        return self.in_flight_limit or 4 * self.concurrency

    @property
    def held_per_host(self) -> int:
        """Leases held per host beyond which the worker asks for other hosts' tasks: four
        times its concurrency, as for the whole worker. A fast answer (a 304) leaves its
        lease held until its report commits (``report_interval``): at twice, a rescan's
        hosts ran out of leases while their slots were free (``make bench-resync``)."""
        if self.per_host_concurrency <= 0:
            return self.held_limit
        return 4 * self.per_host_concurrency
