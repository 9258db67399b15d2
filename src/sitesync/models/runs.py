"""Runs: their status, config and counters (the table of status changes is
:mod:`sitesync.frontier.transitions`)."""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import asdict, dataclass, fields
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
    # The settings it was created with, as changed since (sitesync.run_settings): every
    # process that works on it obeys them. None: created before runs kept their settings.
    settings: Mapping[str, Any] | None = None
    settings_version: int = 0  # grows with each change, read by workers with the status


@dataclass(frozen=True, slots=True)
class SettingChange:
    """One setting of a run changed (``sitesync settings RUN --set NAME=VALUE``)."""

    run_id: int
    version: int  # the run's settings_version after the change
    name: str
    old: Any
    new: Any
    changed_at: float
