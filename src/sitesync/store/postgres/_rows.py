"""Rows of the PostgreSQL store into sitesync's models, and parameters out of them.

The same mappings as the SQLite store's, except that ``jsonb`` and ``text[]`` columns
arrive already decoded.
"""

from __future__ import annotations

from typing import Any

from psycopg.rows import DictRow
from psycopg.types.json import Jsonb

from sitesync.models import Domain, Lease, Run, Task, TaskReport
from sitesync.store import _rows as shared
from sitesync.store._rows import counter_delta

__all__ = [
    "counter_delta",
    "domain_from_row",
    "lease_from_row",
    "outcome_params",
    "run_from_row",
    "task_from_row",
]


def outcome_params(report: TaskReport) -> dict[str, Any]:
    return {
        "outcome": report.outcome,
        "final_url": report.final_url,
        "redirects": Jsonb([list(hop) for hop in report.redirects]) if report.redirects else None,
    }


def domain_from_row(row: DictRow) -> Domain:
    return shared.domain_from_row(row, aliases=row["aliases"])


def run_from_row(row: DictRow) -> Run:
    return shared.run_from_row(row, config=row["config"])  # jsonb arrives decoded


def task_from_row(row: DictRow) -> Task:
    return shared.task_from_row(row, redirects=row["redirects"] or ())


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
