"""Rows of the PostgreSQL store into sitesync's models, and parameters out of them.

The same mappings as the SQLite store's, except that ``jsonb`` and ``text[]`` columns
arrive already decoded.
"""

from __future__ import annotations

from typing import Any

from psycopg.rows import DictRow
from psycopg.types.json import Jsonb

from sitesync.models import (
    Domain,
    Lease,
    Run,
    RunConfig,
    RunCounters,
    RunStatus,
    Task,
    TaskReport,
    TaskState,
)


def counter_delta(run_id: int, now: float, **moves: int) -> dict[str, Any]:
    params: dict[str, Any] = dict.fromkeys(
        ("pending", "assigned", "completed", "failed", "pages_fetched", "bytes_fetched", "retries"),
        0,
    )
    params.update(moves)
    params["run_id"] = run_id
    params["now"] = now
    return params


def outcome_params(report: TaskReport) -> dict[str, Any]:
    return {
        "outcome": report.outcome,
        "final_url": report.final_url,
        "redirects": Jsonb([list(hop) for hop in report.redirects]) if report.redirects else None,
    }


def domain_from_row(row: DictRow) -> Domain:
    return Domain(
        host=row["host"],
        canonical_host=row["canonical_host"],
        aliases=tuple(row["aliases"]),
        first_seen_at=row["first_seen_at"],
        updated_at=row["updated_at"],
        scope=row["scope"],
        active=bool(row["active"]),
        stale=bool(row["stale"]),
        unreachable_streak=row["unreachable_streak"],
        last_run_id=row["last_run_id"],
        last_crawled_at=row["last_crawled_at"],
    )


def run_from_row(row: DictRow) -> Run:
    return Run(
        id=row["id"],
        status=RunStatus(row["status"]),
        config=RunConfig.from_json(row["config"]),  # jsonb arrives decoded
        counters=RunCounters(
            tasks_total=row["tasks_total"],
            pending=row["pending"],
            assigned=row["assigned"],
            completed=row["completed"],
            failed=row["failed"],
            pages_fetched=row["pages_fetched"],
            bytes_fetched=row["bytes_fetched"],
            retries=row["retries"],
        ),
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
    )


def task_from_row(row: DictRow) -> Task:
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
        outcome=row["outcome"],
        final_url=row["final_url"],
        redirects=tuple((str(a), str(b), int(c)) for a, b, c in row["redirects"] or ()),
    )


def lease_from_row(row: DictRow, run_id: int, token: int, expires_at: float) -> Lease:
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
