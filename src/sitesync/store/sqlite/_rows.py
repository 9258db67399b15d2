"""Rows of the SQLite store into sitesync's models, and parameters out of them.

The same mappings as the PostgreSQL store's, except that JSON columns arrive as text.
Kept apart from ``store.py`` so that every area of the store imports them at module level.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from typing import Any

from sitesync.models import Domain, NewTask, Run, Task, TaskReport
from sitesync.store import _rows as shared
from sitesync.store.rules import Row


def outcome_params(report: TaskReport) -> dict[str, Any]:
    return {
        "outcome": shared.stored_outcome(report),
        "final_url": report.final_url,
        "redirects": json.dumps(report.redirects) if report.redirects else None,
    }


def task_rows(run_id: int, tasks: Sequence[NewTask], now: float) -> Iterator[dict[str, Any]]:
    """Parameters of ``insert_task``, one per new task."""
    for task in tasks:
        yield {
            "run_id": run_id,
            "url": task.url,
            "host": task.host,
            "depth": task.depth,
            "priority": task.priority,
            "found_from": task.found_from,
            "now": now,
        }


def domain_from_row(row: Row) -> Domain:
    return shared.domain_from_row(row, aliases=json.loads(row["aliases"]))


def run_from_row(row: Row) -> Run:
    return shared.run_from_row(row, config=json.loads(row["config"]))


def task_from_row(row: Row) -> Task:
    return shared.task_from_row(row, redirects=json.loads(row["redirects"] or "[]"))


#: This backend's way with its encoded columns, carried by its plumbing object.
DECODE = shared.Decoders(run=run_from_row, task=task_from_row, domain=domain_from_row)
