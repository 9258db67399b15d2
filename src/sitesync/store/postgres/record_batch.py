"""A report batch's records written on PostgreSQL in a constant number of statements.

Writing records one by one costs four or five round trips a record (look up, keep the
body, create, first version, sighting): at two records a page, most of a PostgreSQL
crawl's report transaction. The common cases (sorted by :mod:`sitesync.store._record_batch`)
go over arrays, one statement each for the whole batch; the rest is written after them by
the one-by-one writer (``records.save_records``), in the batch's order.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from sitesync.models import AssetRecord, TaskReport
from sitesync.store._record_batch import Creation, RecordBatch, Sighting, asset_tallies
from sitesync.store._records import (
    AssetTally,
    body_params,
    record_json,
    record_params,
    version_params,
)
from sitesync.store.postgres._db import Conn, Q, every

#: Compresses report batches' bodies off the event loop. Its own thread, not the loop's
#: default executor, where a hanging DNS lookup could make a report wait.
_COMPRESSOR = ThreadPoolExecutor(max_workers=1, thread_name_prefix="sitesync-bodies")


async def save_batch(
    conn: Conn, run_id: int, reports: Sequence[TaskReport], now: float, cap: int
) -> list[tuple[int, AssetRecord]]:
    """Write the common cases of the reports' records; return the rest, as (report index,
    record) in batch order, for the one-by-one writer. Asset counters are moved here for
    the records written here."""
    batch = RecordBatch()
    keys = sorted({record.key for report in reports for record in report.records})
    if not keys:
        return []
    batch.know(await every(conn, "select_records_by_key", {"keys": keys}))
    batch.sort(reports, cap)
    await _create(conn, run_id, batch, now)
    fast = batch.fast()
    newly_seen = await _sight(conn, run_id, reports, fast, now)
    await add_assets(conn, run_id, asset_tallies(reports, fast, newly_seen))
    return [(s.report, s.record) for s in batch.slow()]


async def _create(conn: Conn, run_id: int, batch: RecordBatch, now: float) -> None:
    """New keys: bodies, records and first versions, one statement each. A key another
    run created meanwhile goes to the one-by-one writer."""
    creations = [c for c in batch.creations.values() if not c.key.slow]
    if not creations:
        return
    kept = [c for c in creations if c.plan.body_hash is not None and c.record.body is not None]
    if kept:
        # zlib lets go of the interpreter lock while it compresses: on a thread of its own a
        # batch's bodies (~90 us each for 20 KB) no longer hold up the event loop's fetches.
        loop = asyncio.get_running_loop()
        bodies = await loop.run_in_executor(_COMPRESSOR, _body_rows, kept, now)
        await conn.execute(Q["insert_bodies"], _columns(bodies, now=now))
    records = [
        {**record_params(c.record, run_id, now), "content_hash": c.record.content_hash,
         "body_hash": c.plan.body_hash}
        for c in creations
    ]  # fmt: skip
    rows = await every(conn, "insert_records", _columns(records, run_id=run_id, now=now))
    ids = {row["key"]: row["id"] for row in rows}
    versions = []
    for c in creations:
        record_id = ids.get(c.record.key)
        if record_id is None:  # created by another run's transaction first
            c.key.slow = True
            continue
        c.key.record_id = record_id
        data = record_json(c.record)
        versions.append(version_params(record_id, 1, run_id, c.record, c.plan, None, data, now))
    if versions:
        await conn.execute(Q["insert_first_versions"], _columns(versions, run_id=run_id, now=now))


def _body_rows(creations: list[Creation], now: float) -> list[dict[str, Any]]:
    """``insert_body`` parameters, one row per body: two new keys may share their bytes."""
    rows = {c.plan.body_hash: body_params(c.plan, c.record.body or b"", now) for c in creations}
    return list(rows.values())


async def _sight(
    conn: Conn, run_id: int, reports: Sequence[TaskReport], fast: list[Sighting], now: float
) -> list[bool]:
    """One sighting per record in the run: whether each of ``fast`` is its record's first
    in the run (the first of the batch's own sightings of a record, if any)."""
    if not fast:
        return []
    params: dict[str, Any] = {
        "record_ids": [s.key.record_id for s in fast],
        "versions": [s.key.version for s in fast],
        "task_ids": [reports[s.report].lease.task_id for s in fast],
        "run_id": run_id,
        "now": now,
    }
    inserted = {row["record_id"] for row in await every(conn, "insert_sightings", params)}
    newly_seen = []
    for sighting in fast:
        record_id = sighting.key.record_id
        newly_seen.append(record_id in inserted)
        inserted.discard(record_id)  # later sightings of it in the batch are not new
    return newly_seen


async def add_assets(conn: Conn, run_id: int, tallies: dict[str, AssetTally]) -> None:
    """Move the asset counters of every host tallied, in one statement."""
    moved = {host: t for host, t in tallies.items() if t.found or t.stored}
    if moved:
        params = {
            "run_id": run_id,
            "hosts": list(moved),
            "found": [t.found for t in moved.values()],
            "stored": [t.stored for t in moved.values()],
        }
        await conn.execute(Q["add_host_assets"], params)


def _columns(rows: list[dict[str, Any]], **scalars: Any) -> dict[str, Any]:
    """The parameters of one statement over arrays: each parameter of the one-row
    statements (``body_params``, ``version_params`` ...) as an array of the rows' values,
    and ``scalars`` as they are."""
    return {**{name: [row[name] for row in rows] for name in rows[0]}, **scalars}
