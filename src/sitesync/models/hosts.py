"""Hosts and domains: claims, workers, politeness state kept for the fleet, scans."""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True, slots=True)
class DomainScan:
    """What one scan of a scope did on one of its registered domains."""

    host: str
    run_id: int
    scope: str | None
    run_status: str  # the scan's terminal status
    host_status: str | None  # active, exhausted, blocked; None: never crawled in the scan
    pages: int
    errors: int
    assets_found: int
    assets_stored: int
    finished_at: float


@dataclass(frozen=True, slots=True)
class Domain:
    """A site across runs. Its root's redirects name its canonical host and aliases."""

    host: str
    canonical_host: str | None
    aliases: tuple[str, ...]
    first_seen_at: float
    updated_at: float
    scope: str | None = None
    active: bool = True  # in the active scan set of its scope
    stale: bool = False  # its root was unreachable in the last scan
    unreachable_streak: int = 0  # consecutive scans with the root unreachable
    last_run_id: int | None = None
    last_crawled_at: float | None = None
    # Its own request profile from its domain file, as it may be shown: header values,
    # cookie names; cookie values, auth and proxy as ``***`` (never the secrets themselves).
    request_profile: Mapping[str, Any] | None = None


@dataclass(frozen=True, slots=True)
class WorkerInfo:
    """A worker process that joined a run."""

    worker_id: str
    host: str  # the machine
    pid: int
    run_id: int | None
    started_at: float
    last_heartbeat: float
    stopped_at: float | None
    boot_id: str | None = None  # boot id and pid namespace of its machine (Linux)
    proc_start: int | None = None  # its process's start time, clock ticks after boot


@dataclass(frozen=True, slots=True)
class Claim:
    """A worker's exclusive, expiring hold on one host within a run."""

    run_id: int
    host: str
    worker_id: str
    expires_at: float
    claimed_at: float


@dataclass(frozen=True, slots=True)
class ClaimGrant:
    """A worker's claims after a refresh, and how many hosts it should keep crawling.

    Claims beyond ``share`` (the newest ones) are surplus: the worker takes no new tasks
    from them, so they drain and pass to workers with less.
    """

    claims: tuple[Claim, ...]
    share: int

    @property
    def hosts(self) -> list[str]:
        return [claim.host for claim in self.claims]


@dataclass(frozen=True, slots=True)
class HostState:
    """Politeness state of a host that outlives the worker that learned it."""

    host: str
    paused_until: float  # Retry-After: nothing before this
    robots_origin: str | None
    robots_status: int | None  # 0 = unreachable
    robots_body: str | None
    robots_expires_at: float | None
    # Adaptive politeness: the delay the host was slowed to, why, and when (None: never).
    pace_delay: float | None = None
    pace_concurrency: int | None = None
    pace_reason: str | None = None
    pace_since: float | None = None

    def pace_text(self) -> str | None:
        """``host X: 2.4 s, backing off after 503s``, while the host is slowed down."""
        if self.pace_delay is None or not self.pace_reason:
            return None
        return f"host {self.host}: {self.pace_delay:.1f} s, {self.pace_reason}"


class HostStatus(enum.StrEnum):
    ACTIVE = "active"
    EXHAUSTED = "exhausted"  # terminal: nothing left to crawl on the host in this run
    BLOCKED = "blocked"  # terminal: robots.txt or the server refuses the whole site
    UNREACHABLE = "unreachable"  # terminal: the host does not resolve or refuses connections


@dataclass(frozen=True, slots=True)
class RunHost:
    """Per-host counters of a run (flushed during the crawl, exact)."""

    run_id: int
    host: str
    pages_crawled: int
    errors: int
    status: HostStatus
    failures: int = 0  # consecutive host-level failures (refused, no DNS, robots.txt unavailable)
    # Set when the host's remaining tasks were ended (dead host): the outcome they got and
    # why. Tasks of the host admitted later in the run end at once the same way.
    ended_as: str | None = None
    ended_reason: str | None = None


@dataclass(frozen=True, slots=True)
class Schedule:
    """When a scope is scanned again."""

    scope: str
    cadence: str  # cron syntax
    next_run_at: float
    last_run_id: int | None
    settings: Mapping[str, Any] | None = None  # what each scan it starts is created with


@dataclass(frozen=True, slots=True)
class ScanSummary:
    """What one scan did to its scope's domains (the stale lifecycle)."""

    run_id: int
    reachable: tuple[str, ...]  # streak and stale reset
    newly_stale: tuple[str, ...]  # first unreachable scan: stale, still active
    deactivated: tuple[str, ...]  # second consecutive: out of the active scan set
