"""Versioned records as the RecordStore reads them back, and the read models of the
dashboard, the JSON API and /metrics (OverviewStore)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

#: The content hash of a tombstone: the version a page gets from the scan that found it gone
#: (404/410, or no longer linked; store/_gone.py). No sha256 hex digest is ever this.
GONE_HASH = "gone"


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

    @property
    def gone(self) -> bool:
        """A tombstone: the page went away in ``run_id`` (``data["reason"]`` says how)."""
        return self.content_hash == GONE_HASH


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


@dataclass(frozen=True, slots=True)
class WorkerLeases:
    """Tasks one worker holds leased in a run."""

    worker_id: str
    tasks: int
    expired: int  # leases past their expiry: they go back to pending at the next acquire
    earliest_expiry: float
