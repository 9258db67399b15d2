"""Tasks: their states, leases, what a fetch ended in, and what a worker reports."""

from __future__ import annotations

import enum
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from sitesync.models.revisits import Revisit


class TaskState(enum.StrEnum):
    DISCOVERED = "discovered"  # seen in a page or given as a seed; not yet scoped (never stored)
    PENDING = "pending"  # in scope, waiting for a worker (maybe not before next_eligible_at)
    ASSIGNED = "assigned"  # leased to one worker until lease_expires_at
    COMPLETED = "completed"  # an HTTP response was recorded
    FAILED = "failed"  # gave up after max_retries attempts; last_error says why


class FetchOutcome(enum.StrEnum):
    SUCCESS = "success"  # a 2xx/3xx response and its body
    HTTP_ERROR = "http_error"  # a 4xx/5xx response (see ``status``)
    BLOCKED = "blocked"  # robots.txt, or 401/403/451
    UNREACHABLE = "unreachable"  # DNS failure, connection refused or reset
    TIMEOUT = "timeout"  # connect, read or total timeout
    TOO_LARGE = "too_large"  # body over ``max_body_bytes`` (after decompression)
    REDIRECT_NOT_FOLLOWED = "redirect_not_followed"  # to an out-of-scope or non-HTTP URL
    INVALID = "invalid"  # redirect loop or limit, truncated body, binary as text, bad URL
    # A non-public address the network policy refuses (loopback, private, link-local, ...);
    # never retried: the address will not become allowed by asking again.
    FORBIDDEN_ADDRESS = "forbidden_address"
    # A 2xx body that is not valid in its charset (declared, or UTF-8): kept, its links
    # read with replacement characters, but not a success.
    UNDECODABLE = "undecodable"
    # A 2xx page whose processing (decoding, parsing, links, built-in plugins) ran past
    # ``parse_timeout_seconds``: fetched, not read; the crawl goes on without its links.
    PARSE_TIMEOUT = "parse_timeout"
    # A dry run (``--fetcher null``): admitted and allowed by robots.txt, never requested.
    NOT_FETCHED = "not_fetched"
    # A 304 to a conditional request: the page is as the store last saw it. No body; its
    # records are seen again and its links come from the store.
    NOT_MODIFIED = "not_modified"
    # Not requested: a sitemap of the scan dates the page (<lastmod>) before the store's last
    # fetch of it (``sitemap_skips_unchanged``); handled as a 304.
    UNCHANGED_PER_SITEMAP = "unchanged_per_sitemap"


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
    # What a plugin may have computed already (the built-ins do), so the store does not
    # compute it again on the page path: the sha256 hex of ``body``, and ``canonical_json``
    # of ``data``. Not part of a record's identity; the pipeline checks them on the records
    # of third-party plugins.
    body_hash: str | None = field(default=None, compare=False, repr=False)
    data_json: str | None = field(default=None, compare=False, repr=False)


def canonical_json(data: Mapping[str, Any]) -> str:
    """A record's data as compared, hashed and stored: compact JSON with sorted keys."""
    return json.dumps(data, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


@dataclass(frozen=True, slots=True)
class CrawlArtifact:
    """What one fetch produced, as plugins see it."""

    run_id: int
    task_id: int
    requested_url: str
    final_url: str
    depth: int
    status: int  # 0 = no HTTP response
    outcome: FetchOutcome
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
    outcome: FetchOutcome | None = None  # what the fetch ended in (None: not fetched)
    final_url: str | None = None  # where redirects ended
    redirects: tuple[tuple[str, str, int], ...] = ()  # (from_url, to_url, status) hops
    records: tuple[AssetRecord, ...] = ()  # written in the report's transaction
    # A success's memory for the next scan (models/revisits.py), written with the report.
    revisit: Revisit | None = None
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
    outcome: FetchOutcome | None = None
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
    outcome: FetchOutcome | None
    http_status: int | None
    error: str | None
    bytes: int
    redirect_hops: int

    @property
    def duration(self) -> float | None:
        return None if self.started_at is None else max(0.0, self.ended_at - self.started_at)
