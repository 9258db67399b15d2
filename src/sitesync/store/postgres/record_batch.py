"""A report batch's records written on PostgreSQL in a constant number of statements.

Writing records one by one costs four or five round trips a record (look up, keep the
body, create, first version, sighting): at two records a page, most of a PostgreSQL
crawl's report transaction. The two common cases go in batches here, over arrays:

- a key new to the store (every page of a first crawl): its body, its record, its first
  version and its sighting, one statement each for the whole batch;
- a key seen again unchanged (a re-crawl, an asset on every page): one sighting.

Everything else (a key whose content changed, or changed within the batch, or that another
run's transaction created first) is written after them by the one-by-one writer
(``records.save_records``), in the batch's order: every record of such a key goes that
way, so a key's versions follow the batch as they would one record at a time.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from sitesync.models import AssetRecord, TaskReport
from sitesync.store._records import (
    COMPRESSION,
    AssetTally,
    BodyPlan,
    compress,
    plan_body,
    record_json,
)
from sitesync.store.postgres._db import Conn, Q, every


@dataclass(slots=True)
class _Key:
    """What the batch knows of one key: as stored, or as this batch creates it."""

    record_id: int | None
    version: int
    content_hash: str
    body_hash: str | None
    slow: bool = False  # written one by one, with every later record of the key


@dataclass(slots=True)
class _Sighting:
    report: int  # index of the report in the batch
    record: AssetRecord
    key: _Key
    created: bool  # the batch creates this key with this record


@dataclass(slots=True)
class _Creation:
    record: AssetRecord
    plan: BodyPlan
    key: _Key


@dataclass(slots=True)
class RecordBatch:
    """The batch's records sorted into sightings, creations and one-by-one writes."""

    keys: dict[str, _Key] = field(default_factory=dict)
    sightings: list[_Sighting] = field(default_factory=list)
    creations: dict[str, _Creation] = field(default_factory=dict)

    def sort(self, reports: Sequence[TaskReport], cap: int) -> None:
        for index, report in enumerate(reports):
            for record in report.records:
                key = self.keys.get(record.key)
                if key is None:  # new to the store: this record creates it
                    plan = plan_body(record, cap)
                    key = self.keys[record.key] = _Key(None, 1, record.content_hash, plan.body_hash)
                    self.creations[record.key] = _Creation(record, plan, key)
                    self.sightings.append(_Sighting(index, record, key, created=True))
                    continue
                if key.content_hash != record.content_hash:
                    key.slow = True  # a new version: decided under the record's lock
                self.sightings.append(_Sighting(index, record, key, created=False))

    def fast(self) -> list[_Sighting]:
        return [s for s in self.sightings if not s.key.slow]

    def slow(self) -> list[_Sighting]:
        return [s for s in self.sightings if s.key.slow]


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
    for row in await every(conn, "select_records_by_key", {"keys": keys}):
        batch.keys[row["key"]] = _Key(
            row["id"], row["latest_version"], row["latest_hash"], row["latest_body_hash"]
        )
    batch.sort(reports, cap)
    await _create(conn, run_id, batch, now)
    fast = batch.fast()
    newly_seen = await _sight(conn, run_id, reports, fast, now)
    tallies: dict[str, AssetTally] = defaultdict(AssetTally)
    for sighting, seen in zip(fast, newly_seen, strict=True):
        stored = sighting.key.body_hash is not None and seen
        tallies[reports[sighting.report].lease.host].count(
            sighting.record, newly_seen=seen, newly_stored=stored
        )
    await _add_assets(conn, run_id, tallies)
    return [(s.report, s.record) for s in batch.slow()]


async def _create(conn: Conn, run_id: int, batch: RecordBatch, now: float) -> None:
    """New keys: bodies, records and first versions, one statement each. A key another
    run created meanwhile goes to the one-by-one writer."""
    creations = [c for c in batch.creations.values() if not c.key.slow]
    if not creations:
        return
    bodies = {
        c.plan.body_hash: c
        for c in creations
        if c.plan.body_hash is not None and c.record.body is not None
    }
    if bodies:
        await conn.execute(Q["insert_bodies"], _body_columns(bodies, now))
    records: dict[str, list[Any]] = {
        "keys": [], "kinds": [], "urls": [], "hashes": [], "body_hashes": []
    }  # fmt: skip
    for c in creations:
        _append(records, keys=c.record.key, kinds=c.record.kind, urls=c.record.url,
                hashes=c.record.content_hash, body_hashes=c.plan.body_hash)  # fmt: skip
    rows = await every(conn, "insert_records", {**records, "run_id": run_id, "now": now})
    ids = {row["key"]: row["id"] for row in rows}
    versions: dict[str, list[Any]] = {
        "record_ids": [], "hashes": [], "body_hashes": [], "body_sizes": [], "body_notes": [],
        "data": [],
    }  # fmt: skip
    for c in creations:
        record_id = ids.get(c.record.key)
        if record_id is None:  # created by another run's transaction first
            c.key.slow = True
            continue
        c.key.record_id = record_id
        _append(versions, record_ids=record_id, hashes=c.record.content_hash,
                body_hashes=c.plan.body_hash, body_sizes=c.plan.size, body_notes=c.plan.note,
                data=record_json(c.record))  # fmt: skip
    if versions["record_ids"]:
        await conn.execute(Q["insert_first_versions"], {**versions, "run_id": run_id, "now": now})


async def _sight(
    conn: Conn, run_id: int, reports: Sequence[TaskReport], fast: list[_Sighting], now: float
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


async def _add_assets(conn: Conn, run_id: int, tallies: dict[str, AssetTally]) -> None:
    moved = {host: t for host, t in tallies.items() if t.found or t.stored}
    if moved:
        params = {
            "run_id": run_id,
            "hosts": list(moved),
            "found": [t.found for t in moved.values()],
            "stored": [t.stored for t in moved.values()],
        }
        await conn.execute(Q["add_hosts_assets"], params)


def _body_columns(bodies: dict[str, _Creation], now: float) -> dict[str, Any]:
    columns: dict[str, list[Any]] = {"hashes": [], "sizes": [], "compressions": [], "data": []}
    for body_hash, c in bodies.items():
        assert c.record.body is not None
        _append(columns, hashes=body_hash, sizes=c.plan.size, compressions=COMPRESSION,
                data=compress(c.record.body))  # fmt: skip
    return {**columns, "now": now}


def _append(columns: dict[str, list[Any]], **values: Any) -> None:
    for name, value in values.items():
        columns[name].append(value)
