"""Rows of the PostgreSQL store into sitesync's models, and parameters out of them.

The same mappings as the SQLite store's, except that ``jsonb`` and ``text[]`` columns
arrive already decoded.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from sitesync.models import Domain, RecordVersion, Run, Schedule, SettingChange, Task, TaskReport
from sitesync.store import _rows as shared
from sitesync.store._records import version_from_row as version_from_data
from sitesync.store.rules import Row, retries


def report_arrays(reports: Sequence[TaskReport], now: float, max_retries: int) -> dict[str, Any]:
    """A batch of reports as the arrays of ``complete_tasks`` / ``fail_attempts`` (one
    statement each for the whole batch; SQLite runs the same queries one report at a
    time). ``redirects`` as JSON text, cast to jsonb by the query."""
    ok = all(report.ok for report in reports)
    params: dict[str, Any] = {
        "task_ids": [r.lease.task_id for r in reports],
        "tokens": [r.lease.token for r in reports],
        "http_statuses": [r.http_status if ok else (r.http_status or None) for r in reports],
        "errors": [r.error if ok else (r.error or "failed") for r in reports],
        "outcomes": [shared.stored_outcome(r) for r in reports],
        "final_urls": [r.final_url for r in reports],
        "redirects": [
            json.dumps([list(hop) for hop in r.redirects]) if r.redirects else None for r in reports
        ],
        "now": now,
    }
    if not ok:
        params["retry"] = [retries(r, max_retries) for r in reports]
        params["retry_at"] = [now + r.retry_delay for r in reports]
    return params


def domain_from_row(row: Row) -> Domain:
    return shared.domain_from_row(row, aliases=row["aliases"], profile=row["request_profile"])


def run_from_row(row: Row) -> Run:
    # jsonb arrives decoded
    return shared.run_from_row(row, config=row["config"], settings=row["settings"])


def schedule_from_row(row: Row) -> Schedule:
    return shared.schedule_from_row(row, settings=row["settings"])


def setting_change_from_row(row: Row) -> SettingChange:
    return shared.setting_change_from_row(row, old=row["old_value"], new=row["new_value"])


def task_from_row(row: Row) -> Task:
    return shared.task_from_row(row, redirects=row["redirects"] or ())


def version_from_row(row: Row) -> RecordVersion:
    return version_from_data(row, row["data"])


#: This backend's way with its encoded columns, carried by its plumbing object.
DECODE = shared.Decoders(
    run=run_from_row,
    task=task_from_row,
    domain=domain_from_row,
    schedule=schedule_from_row,
    setting_change=setting_change_from_row,
    version=version_from_row,
)
