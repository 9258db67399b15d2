"""Rows of the PostgreSQL store into sitesync's models, and parameters out of them.

The same mappings as the SQLite store's, except that ``jsonb`` and ``text[]`` columns
arrive already decoded.
"""

from __future__ import annotations

from typing import Any

from psycopg.types.json import Jsonb

from sitesync.models import Domain, Run, Task, TaskReport
from sitesync.store import _rows as shared
from sitesync.store.rules import Row


def outcome_params(report: TaskReport) -> dict[str, Any]:
    return {
        "outcome": shared.stored_outcome(report),
        "final_url": report.final_url,
        "redirects": Jsonb([list(hop) for hop in report.redirects]) if report.redirects else None,
    }


def domain_from_row(row: Row) -> Domain:
    return shared.domain_from_row(row, aliases=row["aliases"])


def run_from_row(row: Row) -> Run:
    return shared.run_from_row(row, config=row["config"])  # jsonb arrives decoded


def task_from_row(row: Row) -> Task:
    return shared.task_from_row(row, redirects=row["redirects"] or ())


#: This backend's way with its encoded columns, carried by its plumbing object.
DECODE = shared.Decoders(run=run_from_row, task=task_from_row, domain=domain_from_row)
