"""What the JSON API returns: frozen values, built by :mod:`sitesync.readmodel.overview`.

FastAPI derives the OpenAPI description from these dataclasses, and ``sitesync status``
prints the same values as tables, so the terminal and the dashboard never disagree.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from sitesync.models import OutcomeCount, RunCounters, RunStatus


@dataclass(frozen=True, slots=True)
class RunSummary:
    """A run as the run list shows it."""

    id: int
    status: RunStatus
    status_reason: str | None
    seeds: tuple[str, ...]
    counters: RunCounters
    created_at: float
    started_at: float | None
    ended_at: float | None
    last_activity_at: float | None
    pending_work: int  # pending + in flight (assigned), from the counters
    pages_per_second: float  # recent rate while sampled, else the average since it started
    # Why a run that is not terminal makes no progress; empty while it makes progress.
    idle_reasons: tuple[str, ...] = ()
    # Hosts adaptive politeness slowed down: "host X: 2.4 s, backing off after 503s".
    slowed_hosts: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class DomainInfo:
    """What the ``domains`` record says about a host (where one exists)."""

    canonical_host: str | None
    aliases: tuple[str, ...]
    active: bool | None = None
    stale: bool | None = None
    unreachable_streak: int | None = None
    scope: str | None = None
    last_crawled_at: float | None = None


@dataclass(frozen=True, slots=True)
class HostRow:
    """One host of a run: flushed counters, pending work, who holds it."""

    host: str
    pages_crawled: int  # as of the last flush (domain_stats_flush_interval_pages)
    errors: int
    status: str  # active, exhausted, blocked, unreachable
    pending: int
    claimed_by: str | None  # the worker holding a live claim on the host
    claim_expires_at: float | None
    domain: DomainInfo | None = None
    pace_delay: float | None = None  # adaptive politeness: seconds between requests now
    pace_reason: str | None = None  # why it is slowed down; None while at the configured pace


@dataclass(frozen=True, slots=True)
class WorkerRow:
    worker_id: str
    machine: str
    pid: int
    started_at: float
    last_heartbeat: float
    stopped_at: float | None
    live: bool  # not stopped, and heartbeat within claim_seconds
    leased: int  # tasks it holds leased now


@dataclass(frozen=True, slots=True)
class ClaimRow:
    host: str
    worker_id: str
    claimed_at: float
    expires_at: float
    live: bool  # not yet expired


@dataclass(frozen=True, slots=True)
class SamplePoint:
    """One sample of a run's counters, taken by the dashboard server."""

    at: float
    pages_fetched: int
    pending: int
    in_flight: int
    pages_per_second: float  # since the previous sample


@dataclass(frozen=True, slots=True)
class RunDetail:
    """One run in full: what ``GET /api/runs/{id}`` returns."""

    run: RunSummary
    hosts: tuple[HostRow, ...]
    workers: tuple[WorkerRow, ...]
    claims: tuple[ClaimRow, ...]
    outcomes: tuple[OutcomeCount, ...]  # finished tasks by final outcome and status class
    samples: tuple[SamplePoint, ...]  # oldest first; empty until the server sampled the run


@dataclass(frozen=True, slots=True)
class StatusOverview:
    """Every active run and the work left across them: ``GET /api/status``."""

    now: float
    active_runs: tuple[RunSummary, ...]
    pending_total: int  # sum of the active runs' pending counters (never a scan)
    in_flight_total: int  # sum of their assigned counters


@dataclass(frozen=True, slots=True)
class FailedUrl:
    url: str
    http_status: int | None
    last_error: str | None
    attempts: int


@dataclass(frozen=True, slots=True)
class ErrorGroup:
    """Failed tasks of a run with one outcome, with the most recent of them."""

    outcome: str
    count: int
    recent: tuple[FailedUrl, ...]


@dataclass(frozen=True, slots=True)
class RunErrors:
    run_id: int
    failed: int  # the run's failed counter (exact)
    groups: tuple[ErrorGroup, ...]
    truncated: bool  # more failed tasks exist than were grouped


@dataclass(frozen=True, slots=True)
class Hop:
    from_url: str
    to_url: str
    status: int


@dataclass(frozen=True, slots=True)
class RedirectChain:
    url: str
    final_url: str | None
    http_status: int | None
    hops: tuple[Hop, ...]


@dataclass(frozen=True, slots=True)
class NavigationSample:
    """A ``navigation`` record: up to 10 navigational URLs of a site, or why fewer."""

    url: str
    version: int
    data: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class RunNavigation:
    run_id: int
    samples: tuple[NavigationSample, ...]


@dataclass(frozen=True, slots=True)
class ApiError:
    """Every error the API answers with."""

    error: str
