"""A report batch's records written on SQLite with one ``executemany`` per table.

One by one, a record costs four or five statements (look up, keep the body, create, first
version, sighting), each bound from a mapping on the store's thread: at two records a page,
as much of a crawl's CPU as its link extraction. The common cases (sorted by
:mod:`sitesync.store._record_batch`) go here in bulk; the rest is written after them by the
one-by-one writer (``records.save_records``), in the batch's order. The report transaction
holds the database's write lock, so what is read here stays true until commit.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Mapping, Sequence

from sitesync.models import AssetRecord, TaskReport
from sitesync.store._record_batch import RecordBatch, Sighting, asset_tallies
from sitesync.store._records import (
    AssetTally,
    body_params,
    record_json,
    record_params,
    version_params,
)
from sitesync.store.sqlite._db import Q


def save_batch(
    conn: sqlite3.Connection, run_id: int, reports: Sequence[TaskReport], now: float, cap: int
) -> list[tuple[int, AssetRecord]]:
    """Write the common cases of the reports' records; return the rest, as (report index,
    record) in batch order, for the one-by-one writer. Asset counters are moved here for
    the records written here."""
    keys = list({record.key: None for report in reports for record in report.records})
    if not keys:
        return []
    batch = RecordBatch()
    batch.know(conn.execute(Q["select_records_by_key"], {"keys": json.dumps(keys)}))
    batch.sort(reports, cap)
    _create(conn, run_id, batch, now)
    fast = batch.fast()
    newly_seen = _sight(conn, run_id, reports, fast, now)
    add_assets(conn, run_id, asset_tallies(reports, fast, newly_seen))
    return [(s.report, s.record) for s in batch.slow()]


def add_assets(conn: sqlite3.Connection, run_id: int, tallies: Mapping[str, AssetTally]) -> None:
    """Move the asset counters of every host tallied, one executemany."""
    conn.executemany(
        Q["add_host_assets"],
        ({"run_id": run_id, "host": host, "found": t.found, "stored": t.stored}
         for host, t in tallies.items() if t.found or t.stored),
    )  # fmt: skip


def _create(conn: sqlite3.Connection, run_id: int, batch: RecordBatch, now: float) -> None:
    """New keys: their bodies, records and first versions, one executemany each."""
    creations = [c for c in batch.creations.values() if not c.key.slow]
    if not creations:
        return
    bodies = [
        body_params(c.plan, c.record.body, now)
        for c in creations
        if c.plan.body_hash is not None and c.record.body is not None
    ]
    conn.executemany(Q["insert_body"], bodies)
    records = [
        {**record_params(c.record, run_id, now), "content_hash": c.record.content_hash,
         "body_hash": c.plan.body_hash}
        for c in creations
    ]  # fmt: skip
    conn.executemany(Q["insert_records"], records)
    created = {"keys": json.dumps([c.record.key for c in creations])}
    ids = {row["key"]: row["id"] for row in conn.execute(Q["select_records_by_key"], created)}
    versions = []
    for c in creations:
        c.key.record_id = record_id = ids[c.record.key]
        data = record_json(c.record)
        versions.append(version_params(record_id, 1, run_id, c.record, c.plan, None, data, now))
    conn.executemany(Q["insert_version"], versions)


def _sight(
    conn: sqlite3.Connection,
    run_id: int,
    reports: Sequence[TaskReport],
    fast: list[Sighting],
    now: float,
) -> list[bool]:
    """One sighting per record in the run: whether each of ``fast`` is its record's first
    in the run (the first of the batch's own sightings of a record, if any)."""
    if not fast:
        return []
    record_ids = json.dumps(list({s.key.record_id: None for s in fast}))
    params = {"run_id": run_id, "record_ids": record_ids}
    seen = {row["record_id"] for row in conn.execute(Q["select_seen_in_run"], params)}
    newly_seen, rows = [], []
    for sighting in fast:
        record_id = sighting.key.record_id
        newly_seen.append(record_id not in seen)
        if record_id not in seen:
            seen.add(record_id)  # later sightings of it in the batch are not new
            task_id = reports[sighting.report].lease.task_id
            rows.append({"run_id": run_id, "record_id": record_id, "version": sighting.key.version,
                         "task_id": task_id, "now": now})  # fmt: skip
    conn.executemany(Q["insert_seen"], rows)
    return newly_seen
