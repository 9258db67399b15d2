"""A worker's tunables, in one value object shared by its parts."""

from __future__ import annotations

from dataclasses import dataclass, field

from sitesync.fetch.adaptive import PaceSettings
from sitesync.frontier.retry import RetryPolicy


@dataclass(frozen=True, slots=True)
class WorkerOptions:
    concurrency: int = 16
    per_host_concurrency: int = 1  # 0 = no per-host cap
    per_host_delay: float = 1.0  # seconds between request starts on one host
    # Adaptive politeness (its delay and concurrency come from the two above).
    adaptive: PaceSettings = field(default_factory=lambda: PaceSettings(enabled=False))
    lease_seconds: float = 60.0
    in_flight_limit: int = 0  # 0 = twice the concurrency
    report_batch: int = 256
    report_interval: float = 0.05
    poll_interval: float = 0.5
    status_poll: float = 0.5  # seconds between reads of the run's status (pause, stop)
    drain_timeout: float = 10.0  # run left "running" elsewhere: let in-flight fetches finish
    retry: RetryPolicy = field(default_factory=RetryPolicy)
    respect_robots: bool = True
    robots_recheck_seconds: float = 300.0
    dead_host_attempts: int = 3  # 0 = never end a host's tasks early
    dead_host_recheck: tuple[float, ...] = (5.0, 15.0, 30.0)
    sitemaps: bool = True
    follow_offsite_seed_redirects: bool = False
    sitemap_max_bytes: int = 50 * 1024 * 1024
    max_crawl_delay: float = 60.0
    max_retry_after: float = 3600.0
    heartbeat_seconds: float = 0.0  # 0 = a third of the shorter of lease and claim
    claim_seconds: float = 120.0
    claim_safety: float = 65.0  # a fetch starts only while its host's claim has this left
    max_claims: int | None = None
    stats_flush_interval: int = 100  # pages between per-host counter flushes; 0 = at end
    max_links_per_page: int | None = 5000  # links admitted per page; None = all
    max_parse_bytes: int | None = 4 * 1024 * 1024  # HTML parsed per page; None = all

    @property
    def heartbeat(self) -> float:
        if self.heartbeat_seconds > 0:
            return self.heartbeat_seconds
        return max(0.05, min(10.0, self.lease_seconds / 3, self.claim_seconds / 3))

    @property
    def held_limit(self) -> int:
        return self.in_flight_limit or 2 * self.concurrency

    @property
    def held_per_host(self) -> int:
        """Leases held per host beyond which the worker asks for other hosts' tasks."""
        if self.per_host_concurrency <= 0:
            return self.held_limit
        return 2 * self.per_host_concurrency
