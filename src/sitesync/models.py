"""The nouns of sitesync: runs, tasks, leases and what a worker reports back.

Everything here is a frozen value. Stores build them from rows; nothing mutates them.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field, fields
from typing import Any


class RunStatus(enum.StrEnum):
    QUEUED = "queued"  # created, no worker has started it yet
    RUNNING = "running"  # workers take tasks
    PAUSED = "paused"  # workers take no new tasks; state kept
    COMPLETED = "completed"  # terminal: the frontier drained
    STOPPED = "stopped"  # terminal until resumed: a user stopped it, in-flight work released
    CANCELLED = "cancelled"  # terminal: a user cancelled it; never resumed
    FAILED = "failed"  # terminal: a fatal error, or crashed past its retry budget

    @property
    def is_terminal(self) -> bool:
        return self in _TERMINAL


_TERMINAL = frozenset(
    {RunStatus.COMPLETED, RunStatus.STOPPED, RunStatus.CANCELLED, RunStatus.FAILED}
)

#: Which status a run may move to from each status. Stores enforce this table.
RUN_TRANSITIONS: dict[RunStatus, frozenset[RunStatus]] = {
    RunStatus.QUEUED: frozenset({RunStatus.RUNNING, RunStatus.CANCELLED, RunStatus.FAILED}),
    RunStatus.RUNNING: frozenset(
        {
            RunStatus.PAUSED,
            RunStatus.COMPLETED,
            RunStatus.STOPPED,
            RunStatus.CANCELLED,
            RunStatus.FAILED,
            RunStatus.QUEUED,  # the watchdog re-queues a crashed run
        }
    ),
    RunStatus.PAUSED: frozenset(
        {RunStatus.RUNNING, RunStatus.STOPPED, RunStatus.CANCELLED, RunStatus.FAILED}
    ),
    # A stopped or failed run is resumed in place (running: `crawl --resume`) or handed to
    # the supervisor (queued: `sitesync resume`); completed and cancelled are final.
    RunStatus.STOPPED: frozenset({RunStatus.RUNNING, RunStatus.QUEUED, RunStatus.CANCELLED}),
    RunStatus.FAILED: frozenset({RunStatus.RUNNING, RunStatus.QUEUED, RunStatus.CANCELLED}),
    RunStatus.COMPLETED: frozenset(),
    RunStatus.CANCELLED: frozenset(),
}


class TaskState(enum.StrEnum):
    DISCOVERED = "discovered"  # seen in a page or given as a seed; not yet scoped (never stored)
    PENDING = "pending"  # in scope, waiting for a worker (maybe not before next_eligible_at)
    ASSIGNED = "assigned"  # leased to one worker until lease_expires_at
    COMPLETED = "completed"  # an HTTP response was recorded
    FAILED = "failed"  # gave up after max_retries attempts; last_error says why


@dataclass(frozen=True, slots=True)
class RunConfig:
    """What a run crawls and how far. Stored with the run so a resume crawls the same thing."""

    seeds: tuple[str, ...]
    allowed_domains: tuple[str, ...] = ()
    include: tuple[str, ...] = ()
    exclude: tuple[str, ...] = ()
    max_depth: int | None = None
    max_pages: int | None = None
    max_retries: int = 3
    # Hosts that joined the scope during the run: where a seed's redirects led.
    extra_hosts: tuple[str, ...] = ()

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> RunConfig:
        """Rebuild a stored config; unknown keys (from a newer version) are ignored."""
        known = {f.name for f in fields(cls)}
        values: dict[str, Any] = {
            k: tuple(v) if isinstance(v, list) else v for k, v in data.items() if k in known
        }
        return cls(**values)


@dataclass(frozen=True, slots=True)
class RunCounters:
    """Exact counters, written in the same transaction as the task transitions that move them."""

    tasks_total: int = 0  # tasks admitted to the frontier (all states)
    pending: int = 0
    assigned: int = 0
    completed: int = 0
    failed: int = 0
    pages_fetched: int = 0  # accepted fetch attempts that got an HTTP response
    bytes_fetched: int = 0
    retries: int = 0  # failures sent back to PENDING


@dataclass(frozen=True, slots=True)
class Run:
    id: int
    status: RunStatus
    config: RunConfig
    counters: RunCounters
    created_at: float
    started_at: float | None = None
    ended_at: float | None = None
    status_reason: str | None = None
    last_activity_at: float | None = None
    seeded_at: float | None = None  # seeds and sitemaps admitted
    heartbeat_at: float | None = None  # last sign of life from its workers or supervisor
    supervisor_id: str | None = None
    crash_retries: int = 0  # times the watchdog re-queued it after a crash
    scope: str | None = None  # the domain-list scope this run scans, if any


@dataclass(frozen=True, slots=True)
class NewTask:
    """A URL admitted by scoping, about to enter the frontier as PENDING."""

    url: str  # normalized
    host: str
    depth: int
    priority: int = 0
    found_from: int | None = None  # the task of the page that linked to it; None: seed, sitemap


@dataclass(frozen=True, slots=True)
class Lease:
    """A worker's exclusive, expiring hold on one task.

    ``token`` fences the lease: a report carrying a token that is no longer the task's
    current one changes nothing.
    """

    task_id: int
    run_id: int
    url: str
    host: str
    depth: int
    attempt_count: int
    token: int
    expires_at: float


@dataclass(frozen=True, slots=True)
class AssetRecord:
    """What a plugin made of an artifact: a page, an image, a document, a navigation sample.

    Persistence keeps versions per ``key`` and writes a new version only when
    ``content_hash`` changed.
    """

    key: str  # stable identity, e.g. the normalized URL plus the kind
    kind: str  # "page", "image", "document", "navigation", ...
    url: str
    content_hash: str
    data: Mapping[str, Any] = field(default_factory=dict)  # JSON-serializable
    body: bytes | None = None  # kept content-addressed and compressed, under a size cap


@dataclass(frozen=True, slots=True)
class CrawlArtifact:
    """What one fetch produced, as plugins see it."""

    run_id: int
    task_id: int
    requested_url: str
    final_url: str
    depth: int
    status: int  # 0 = no HTTP response
    outcome: str
    headers: Mapping[str, str]
    body: bytes
    text: str | None  # the body decoded, for HTML
    redirects: tuple[tuple[str, str, int], ...]
    elapsed: float
    links: tuple[str, ...] = ()  # normalized links found in the page (before scoping)
    links_truncated: int = 0  # links beyond max_links_per_page, counted but not admitted


@dataclass(frozen=True, slots=True)
class ProcessedArtifact:
    """What the plugins made of an artifact."""

    records: tuple[AssetRecord, ...] = ()
    links: tuple[str, ...] = ()  # extra normalized URLs to discover (before scoping)
    errors: tuple[str, ...] = ()  # "plugin-name: what went wrong", recorded on the task


@dataclass(frozen=True, slots=True)
class TaskReport:
    """What a worker says about a leased task: a final answer, or a failure to retry."""

    lease: Lease
    ok: bool  # True: an HTTP response was recorded (COMPLETED); False: a failure
    http_status: int = 0  # 0 = no HTTP response
    error: str | None = None  # readable reason for a failure
    bytes_fetched: int = 0
    retry_delay: float = 0.0  # on failure with attempts left: wait this long before retrying
    give_up: bool = False  # on failure: FAILED now, whatever attempts are left (not transient)
    discovered: Sequence[NewTask] = field(default_factory=tuple)
    outcome: str | None = None  # the fetch's FetchOutcome value
    final_url: str | None = None  # where redirects ended
    redirects: tuple[tuple[str, str, int], ...] = ()  # (from_url, to_url, status) hops
    records: tuple[AssetRecord, ...] = ()  # written in the report's transaction
    # The attempt's history row (``Attempt``): when it ran and who ran it.
    started_at: float | None = None
    ended_at: float | None = None
    worker_id: str | None = None


class ReportVerdict(enum.StrEnum):
    ACCEPTED = "accepted"
    LEASE_LOST = "lease_lost"  # the lease expired and was taken over, or released: nothing changed


@dataclass(frozen=True, slots=True)
class Task:
    id: int
    run_id: int
    url: str
    host: str
    state: TaskState
    depth: int
    priority: int
    attempt_count: int
    next_eligible_at: float
    lease_owner: str | None
    lease_expires_at: float | None
    last_error: str | None
    http_status: int | None
    outcome: str | None = None
    final_url: str | None = None
    redirects: tuple[tuple[str, str, int], ...] = ()
    found_from: int | None = None  # the task of the page that first linked to it
    found_on: str | None = None  # that page's URL (read by ``get_task`` only)


@dataclass(frozen=True, slots=True)
class Attempt:
    """One accepted attempt at a task, kept (up to ``max_attempts_kept`` per task) after
    later attempts overwrote the task's own outcome, status and error."""

    task_id: int
    attempt: int  # 1, 2, ... (the task's attempt_count when it ran)
    started_at: float | None
    ended_at: float
    worker_id: str | None
    outcome: str | None
    http_status: int | None
    error: str | None
    bytes: int
    redirect_hops: int

    @property
    def duration(self) -> float | None:
        return None if self.started_at is None else max(0.0, self.ended_at - self.started_at)


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


# -- versioned records (what the RecordStore reads back) ---------------------------------


@dataclass(frozen=True, slots=True)
class RecordVersion:
    """One version of an AssetRecord: written when its content hash changed, never otherwise."""

    key: str
    kind: str
    url: str
    version: int  # 1, 2, ... per key
    run_id: int  # the run that first saw this content
    content_hash: str
    created_at: float
    # How much of the previous version's text is still there: 1.0 = all, 0.0 = nothing.
    # None for a first version, or when the previous body was not kept.
    similarity: float | None = None
    body_hash: str | None = None  # sha256 of the kept (content-addressed) body; None = none kept
    body_size: int | None = None  # bytes of the body, kept or not
    body_note: str | None = None  # why a body was not kept
    data: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class RecordChange:
    """One key in a diff between two runs; a version is None on the side that lacks the key."""

    key: str
    kind: str
    url: str
    version_a: int | None
    version_b: int | None
    similarity: float | None = None  # changed keys: the lowest similarity between the two


@dataclass(frozen=True, slots=True)
class RunDiff:
    """What changed between two runs: keys seen only in B, only in A, and in both but different."""

    run_a: int
    run_b: int
    added: tuple[RecordChange, ...] = ()
    removed: tuple[RecordChange, ...] = ()
    changed: tuple[RecordChange, ...] = ()


@dataclass(frozen=True, slots=True)
class HostAssets:
    """Assets (images, documents) of one run found on one host's pages, and how many were stored."""

    host: str
    assets_found: int
    assets_stored: int


@dataclass(frozen=True, slots=True)
class Schedule:
    """When a scope is scanned again."""

    scope: str
    cadence: str  # cron syntax
    next_run_at: float
    last_run_id: int | None


@dataclass(frozen=True, slots=True)
class ScanSummary:
    """What one scan did to its scope's domains (the stale lifecycle)."""

    run_id: int
    reachable: tuple[str, ...]  # streak and stale reset
    newly_stale: tuple[str, ...]  # first unreachable scan: stale, still active
    deactivated: tuple[str, ...]  # second consecutive: out of the active scan set


# -- read models of the dashboard, the JSON API and /metrics (OverviewStore) -------------


@dataclass(frozen=True, slots=True)
class OutcomeCount:
    """Finished tasks (completed or failed) of a run with one final outcome and status class."""

    outcome: str  # a FetchOutcome value; "unknown" for a task finished without one
    status_class: str  # "2xx" .. "5xx", or "none" when there was no HTTP response
    tasks: int


@dataclass(frozen=True, slots=True)
class HostBacklog:
    """Pending tasks of one host in a run."""

    host: str
    pending: int
    next_eligible_at: float  # the earliest time a pending task of the host may start


@dataclass(frozen=True, slots=True)
class WorkerLeases:
    """Tasks one worker holds leased in a run."""

    worker_id: str
    tasks: int
    expired: int  # leases past their expiry: they go back to pending at the next acquire
    earliest_expiry: float
