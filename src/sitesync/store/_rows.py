"""Rows into models, shared by both backends.

The backends differ only in how a few columns arrive (JSON as text in SQLite, decoded
``jsonb`` and arrays in PostgreSQL): each decodes those and passes them in.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from sitesync.config import setting_default
from sitesync.models import (
    Attempt,
    Claim,
    Domain,
    DomainScan,
    FetchOutcome,
    HostState,
    HostStatus,
    Lease,
    RecordVersion,
    Run,
    RunConfig,
    RunCounters,
    RunHost,
    RunStatus,
    Schedule,
    SettingChange,
    Task,
    TaskReport,
    TaskState,
    WorkerInfo,
)
from sitesync.profiles import shown_profile
from sitesync.store.rules import COUNTERS, Row


@dataclass(frozen=True, slots=True)
class Decoders:
    """How one backend's rows become the models whose columns it encodes its own way (JSON
    as text in SQLite, ``jsonb`` and arrays in PostgreSQL); every other model is mapped
    alike from both by the functions of this module."""

    run: Callable[[Row], Run]
    task: Callable[[Row], Task]
    domain: Callable[[Row], Domain]
    schedule: Callable[[Row], Schedule]
    setting_change: Callable[[Row], SettingChange]
    version: Callable[[Row], RecordVersion]  # a record version with its ``data``


#: Attempts kept per task (``Settings.max_attempts_kept``); the oldest go first.
DEFAULT_MAX_ATTEMPTS_KEPT: int = setting_default("max_attempts_kept")


def run_from_row(row: Row, *, config: Mapping[str, Any], settings: Mapping[str, Any] | None) -> Run:
    return Run(
        id=row["id"],
        status=RunStatus(row["status"]),
        config=RunConfig.from_json(dict(config)),
        counters=RunCounters(tasks_total=row["tasks_total"], **{c: row[c] for c in COUNTERS}),
        created_at=row["created_at"],
        started_at=row["started_at"],
        ended_at=row["ended_at"],
        status_reason=row["status_reason"],
        last_activity_at=row["last_activity_at"],
        seeded_at=row["seeded_at"],
        heartbeat_at=row["heartbeat_at"],
        supervisor_id=row["supervisor_id"],
        crash_retries=row["crash_retries"],
        scope=row["scope"],
        settings=settings,
        settings_version=row["settings_version"],
    )


def task_from_row(row: Row, *, redirects: Iterable[Sequence[Any]]) -> Task:
    return Task(
        id=row["id"],
        run_id=row["run_id"],
        url=row["url"],
        host=row["host"],
        state=TaskState(row["state"]),
        depth=row["depth"],
        priority=row["priority"],
        attempt_count=row["attempt_count"],
        next_eligible_at=row["next_eligible_at"],
        lease_owner=row["lease_owner"],
        lease_expires_at=row["lease_expires_at"],
        last_error=row["last_error"],
        http_status=row["http_status"],
        outcome=outcome_of(row["outcome"]),
        final_url=row["final_url"],
        redirects=tuple((str(a), str(b), int(c)) for a, b, c in redirects),
        found_from=_optional(row, "found_from"),
        found_on=_optional(row, "found_on"),
    )


def outcome_of(value: str | None) -> FetchOutcome | None:
    """A stored outcome read back as the enum."""
    return None if value is None else FetchOutcome(value)


def _optional(row: Row, column: str) -> Any:
    """A column only some queries select (``found_on`` is joined by ``get_task`` alone)."""
    try:
        return row[column]
    except (KeyError, IndexError):
        return None


def stored_outcome(report: TaskReport) -> str | None:
    """The report's outcome as the store keeps it (text): the one place an outcome enters
    either backend, for its task row and its attempt row alike. The enum ends here, and is
    read back as the enum (``outcome_of``)."""
    return None if report.outcome is None else report.outcome.value


def attempt_rows(accepted: Sequence[TaskReport], now: float) -> list[dict[str, Any]]:
    """The history rows of accepted reports (``Attempt``), one per report."""
    return [
        {
            "task_id": report.lease.task_id,
            "attempt": report.lease.attempt_count,
            "started_at": report.started_at,
            "ended_at": report.ended_at if report.ended_at is not None else now,
            "worker_id": report.worker_id,
            "outcome": stored_outcome(report),
            "http_status": report.http_status or None,
            "error": report.error,
            "bytes": report.bytes_fetched,
            "redirect_hops": len(report.redirects),
        }
        for report in accepted
    ]


def attempt_from_row(row: Row) -> Attempt:
    return Attempt(
        task_id=row["task_id"],
        attempt=row["attempt"],
        started_at=row["started_at"],
        ended_at=row["ended_at"],
        worker_id=row["worker_id"],
        outcome=outcome_of(row["outcome"]),
        http_status=row["http_status"],
        error=row["error"],
        bytes=row["bytes"],
        redirect_hops=row["redirect_hops"],
    )


def domain_scan_from_row(row: Row) -> DomainScan:
    return DomainScan(
        host=row["host"],
        run_id=row["run_id"],
        scope=row["scope"],
        run_status=row["run_status"],
        host_status=row["host_status"],
        pages=row["pages"],
        errors=row["errors"],
        assets_found=row["assets_found"],
        assets_stored=row["assets_stored"],
        finished_at=row["finished_at"],
    )


def domain_from_row(
    row: Row, *, aliases: Iterable[str], profile: Mapping[str, Any] | None = None
) -> Domain:
    """A registered domain; ``profile`` its stored request profile, kept only as it may be
    shown (the scans read the profiles themselves with ``domain_profiles``)."""
    return Domain(
        host=row["host"],
        canonical_host=row["canonical_host"],
        aliases=tuple(aliases),
        first_seen_at=row["first_seen_at"],
        updated_at=row["updated_at"],
        scope=row["scope"],
        active=bool(row["active"]),
        stale=bool(row["stale"]),
        unreachable_streak=row["unreachable_streak"],
        last_run_id=row["last_run_id"],
        last_crawled_at=row["last_crawled_at"],
        request_profile=None if profile is None else shown_profile(profile),
    )


def claim_from_row(row: Row) -> Claim:
    return Claim(
        run_id=row["run_id"],
        host=row["host"],
        worker_id=row["worker_id"],
        expires_at=row["expires_at"],
        claimed_at=row["claimed_at"],
    )


def worker_from_row(row: Row) -> WorkerInfo:
    return WorkerInfo(**{column: row[column] for column in WorkerInfo.__slots__})


def run_host_from_row(row: Row) -> RunHost:
    return RunHost(
        run_id=row["run_id"],
        host=row["host"],
        pages_crawled=row["pages_crawled"],
        errors=row["errors"],
        status=HostStatus(row["status"]),
        failures=row["failures"],
        ended_as=row["ended_as"],
        ended_reason=row["ended_reason"],
    )


def lease_from_row(row: Row, run_id: int, token: int, expires_at: float) -> Lease:
    return Lease(
        task_id=row["id"],
        run_id=run_id,
        url=row["url"],
        host=row["host"],
        depth=row["depth"],
        attempt_count=row["attempt_count"],
        token=token,
        expires_at=expires_at,
    )


def schedule_from_row(row: Row, *, settings: Mapping[str, Any] | None) -> Schedule:
    return Schedule(
        scope=row["scope"],
        cadence=row["cadence"],
        next_run_at=row["next_run_at"],
        last_run_id=row["last_run_id"],
        settings=settings,
    )


def setting_change_from_row(row: Row, *, old: Any, new: Any) -> SettingChange:
    return SettingChange(
        run_id=row["run_id"],
        version=row["version"],
        name=row["name"],
        old=old,
        new=new,
        changed_at=row["changed_at"],
    )


def host_state_from_row(row: Row) -> HostState:
    return HostState(**{column: row[column] for column in HostState.__slots__})
