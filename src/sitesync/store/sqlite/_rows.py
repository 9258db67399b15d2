"""Rows of the SQLite store into sitesync's models, and parameters out of them.

The same mappings as the PostgreSQL store's, except that JSON columns arrive as text.
Kept apart from ``store.py`` so that every area of the store imports them at module level.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from typing import Any

from sitesync.models import (
    Domain,
    NewTask,
    RecordVersion,
    Run,
    Schedule,
    SettingChange,
    Task,
    TaskReport,
)
from sitesync.store import _rows as shared
from sitesync.store._records import version_from_row as version_from_data
from sitesync.store.rules import Row


def outcome_params(report: TaskReport) -> dict[str, Any]:
    return {
        "outcome": shared.stored_outcome(report),
        "final_url": report.final_url,
        "redirects": json.dumps(report.redirects) if report.redirects else None,
    }


def task_rows(
    run_id: int, tasks: Sequence[NewTask], now: float
) -> Iterator[tuple[int, str, str, int, int, float, int | None]]:
    """Parameters of ``insert_tasks`` (numbered, in its order), one per new task."""
    for task in tasks:
        yield (run_id, task.url, task.host, task.depth, task.priority, now, task.found_from)


def domain_from_row(row: Row) -> Domain:
    profile = row["request_profile"]
    return shared.domain_from_row(
        row, aliases=json.loads(row["aliases"]), profile=json.loads(profile) if profile else None
    )


def run_from_row(row: Row) -> Run:
    settings = row["settings"]
    return shared.run_from_row(
        row, config=json.loads(row["config"]), settings=json.loads(settings) if settings else None
    )


def schedule_from_row(row: Row) -> Schedule:
    settings = row["settings"]
    return shared.schedule_from_row(row, settings=json.loads(settings) if settings else None)


def setting_change_from_row(row: Row) -> SettingChange:
    return shared.setting_change_from_row(
        row, old=json.loads(row["old_value"]), new=json.loads(row["new_value"])
    )


def task_from_row(row: Row) -> Task:
    return shared.task_from_row(row, redirects=json.loads(row["redirects"] or "[]"))


def version_from_row(row: Row) -> RecordVersion:
    return version_from_data(row, json.loads(row["data"]))


#: This backend's way with its encoded columns, carried by its plumbing object.
DECODE = shared.Decoders(
    run=run_from_row,
    task=task_from_row,
    domain=domain_from_row,
    schedule=schedule_from_row,
    setting_change=setting_change_from_row,
    version=version_from_row,
)
