"""What both backends decide alike about a URL's last fetch (issue 30): how its links are
kept, what a report writes, and when what a 304 stands for is gone.

The backends differ in SQL, in sync/async, and in how a list of record ids is encoded
(JSON text on SQLite, ``bigint[]`` on PostgreSQL): ``ids`` is that encoding.
"""

from __future__ import annotations

import json
import zlib
from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from sitesync.models import EarlierFetch, LastFetch, TaskReport, Validators
from sitesync.store._records import ASSET_KINDS, AssetTally, Row


def pack_links(links: Sequence[str]) -> bytes:
    """A page's links as kept: a compressed JSON array (URLs compress about five-fold)."""
    return zlib.compress(json.dumps(list(links), separators=(",", ":")).encode(), 1)


def unpack_links(data: bytes) -> tuple[str, ...] | None:
    """The links kept by :func:`pack_links`; None when they cannot be read back."""
    try:
        links = json.loads(zlib.decompress(data))
    except (zlib.error, ValueError):
        return None
    if not isinstance(links, list) or not all(isinstance(link, str) for link in links):
        return None
    return tuple(links)


def last_fetch_from_row(row: Row, record_ids: Sequence[int], found: Iterable[Any]) -> LastFetch:
    """A ``select_last_fetch`` row as the model: ``record_ids`` are the ids the fetch
    produced, ``found`` the ``[id, kind]`` pairs of those the store still has (both decoded
    by the backend from its own encoding)."""
    return LastFetch(
        url=row["url"],
        run_id=row["run_id"],
        task_id=row["task_id"],
        fetched_at=row["fetched_at"],
        checked_at=row["checked_at"],
        validators=Validators(row["etag"], row["last_modified"]),
        content_hash=row["content_hash"],
        body_bytes=row["body_bytes"],
        earlier=earlier_fetch(row["links"], record_ids, found),
    )


def earlier_fetch(
    links_data: bytes, record_ids: Sequence[int], found: Iterable[Any]
) -> EarlierFetch | None:
    """What a 304 stands for, or None when any of it is gone: links that cannot be read,
    or a record the store no longer has (the page is then fetched again in full)."""
    links = unpack_links(bytes(links_data))
    kinds = {int(record_id): str(kind) for record_id, kind in found}
    if links is None or any(record_id not in kinds for record_id in record_ids):
        return None
    return EarlierFetch(links=links, records=tuple((i, kinds[i]) for i in record_ids))


def full_fetch_params(
    report: TaskReport,
    run_id: int,
    now: float,
    record_ids: Mapping[str, int],
    ids: Callable[[list[int]], Any],
) -> dict[str, Any]:
    """Parameters of ``upsert_last_fetch``: ``record_ids`` maps the report's record keys to
    their ids (as saved in the same transaction)."""
    revisit = report.revisit
    assert revisit is not None and revisit.content_hash is not None
    produced = list(dict.fromkeys(record_ids[r.key] for r in report.records if r.key in record_ids))
    return {
        "url": revisit.url,
        "run_id": run_id,
        "task_id": report.lease.task_id,
        "now": now,
        "etag": revisit.validators.etag,
        "last_modified": revisit.validators.last_modified,
        "content_hash": revisit.content_hash,
        "body_bytes": revisit.body_bytes,
        "links": pack_links(revisit.links),
        "record_ids": ids(produced),
    }


def confirm_params(report: TaskReport, run_id: int, now: float) -> dict[str, Any]:
    """Parameters of ``confirm_last_fetch`` (a 304)."""
    revisit = report.revisit
    assert revisit is not None
    return {
        "url": revisit.url,
        "run_id": run_id,
        "task_id": report.lease.task_id,
        "now": now,
        "etag": revisit.validators.etag,
        "last_modified": revisit.validators.last_modified,
    }


def resightings(reports: Sequence[TaskReport]) -> list[tuple[int, int]]:
    """(record id, task id) of every record the batch's 304s see again, in batch order."""
    return [
        (record_id, report.lease.task_id)
        for report in reports
        if report.revisit is not None
        for record_id, _ in report.revisit.resighted
    ]


def resighted_tallies(
    reports: Sequence[TaskReport], newly_seen: Iterable[tuple[int, int]]
) -> dict[str, AssetTally]:
    """The asset counter moves of the 304s' records first seen in the run (``newly_seen``:
    (record id, task id) rows ``insert_resightings`` returned): each counts as found on
    its page's host, as when a 200 shows it again; none is newly stored."""
    by_task = {r.lease.task_id: r for r in reports if r.revisit is not None}
    tallies: dict[str, AssetTally] = defaultdict(AssetTally)
    for record_id, task_id in newly_seen:
        report = by_task[task_id]
        assert report.revisit is not None
        if dict(report.revisit.resighted).get(record_id) in ASSET_KINDS:
            tallies[report.lease.host].found += 1
    return tallies
