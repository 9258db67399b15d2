"""Versioned AssetRecords on PostgreSQL (the RecordStore part of the PostgreSQL store).

Writes run inside the report transaction (:func:`save_records`, called by the frontier's
``report`` with the batch's accepted reports). Reports of *other* runs may write the same
key at the same time, so a new version is decided under the record's row lock
(``lock_record``), and a new key's insert gives way to one another run made first; an
unchanged sighting needs no lock. SQL lives in ``records.sql``; what is a decision (keep
a body, similarity) in :mod:`sitesync.store._records`. The reads are written once for
both backends (:mod:`sitesync.store._plain`, :mod:`sitesync.store._scripts`).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass

from psycopg.rows import DictRow

from sitesync.models import AssetRecord, TaskReport
from sitesync.store._records import (
    AssetTally,
    BodyPlan,
    body_params,
    data_json,
    decompress,
    plan_body,
    record_json,
    record_params,
    similarity,
    version_params,
)
from sitesync.store._scripts import ScriptedRecords
from sitesync.store.postgres._db import Conn, PostgresDb, Q, one
from sitesync.store.postgres.record_batch import add_assets, save_batch


class PostgresRecords(ScriptedRecords[PostgresDb]):
    """Every read is written once for both backends (``_plain``, ``_scripts``); what is
    PostgreSQL's own is the writing, below."""


# -- writing (inside the report transaction) ---------------------------------------------


async def save_records(
    conn: Conn, run_id: int, reports: Sequence[TaskReport], now: float, cap: int
) -> None:
    """Write the accepted reports' records in the report transaction; bodies over ``cap``
    bytes are not kept. New keys and unchanged sightings go in batches
    (:mod:`~sitesync.store.postgres.record_batch`); the rest one by one, here."""
    rest = await save_batch(conn, run_id, reports, now, cap)
    if not rest:
        return
    writer = _RecordWriter(conn, run_id, now, cap)
    tallies: dict[str, AssetTally] = defaultdict(AssetTally)
    # In key order (the batch's order within a key): transactions of two runs that share
    # keys then lock them in the same order, and wait for each other instead of deadlocking.
    for index, record in sorted(rest, key=lambda item: item[1].key):
        report = reports[index]
        seen, stored = await writer.save(report.lease.task_id, record)
        tallies[report.lease.host].count(record, newly_seen=seen, newly_stored=stored)
    await add_assets(conn, run_id, tallies)


@dataclass(frozen=True, slots=True)
class _RecordWriter:
    """The records of one report, written in its transaction."""

    conn: Conn
    run_id: int
    now: float
    cap: int

    async def save(self, task_id: int, record: AssetRecord) -> tuple[bool, bool]:
        """Save one sighting; (first sighting in the run, body newly stored in the run)."""
        conn = self.conn
        row = await one(conn, "select_record", {"key": record.key})
        created = None
        if row is None:
            created = await self._create(record)
        if created is not None:
            record_id, version, body_hash = created
            changed, had_body = True, False
        else:
            if row is None or row["latest_hash"] != record.content_hash:
                # Decide under the row lock: another run may be writing this key right now.
                row = await one(conn, "lock_record", {"key": record.key})
            assert row is not None  # records are never deleted
            record_id, version, body_hash = (
                row["id"],
                row["latest_version"],
                row["latest_body_hash"],
            )
            changed, had_body = row["latest_hash"] != record.content_hash, body_hash is not None
            if changed:
                version, body_hash = await self._write_version(row, record)
        seen = {"run_id": self.run_id, "record_id": record_id, "version": version,
                "task_id": task_id, "now": self.now}  # fmt: skip
        newly_seen = (await conn.execute(Q["insert_seen"], seen)).rowcount == 1
        if changed and not newly_seen:
            await conn.execute(Q["update_seen"], seen)
        newly_stored = body_hash is not None and (newly_seen or (changed and not had_body))
        return newly_seen, newly_stored

    async def _create(self, record: AssetRecord) -> tuple[int, int, str | None] | None:
        """A new key with its first version; None if another run created the key first."""
        plan = await self._keep_body(record)
        data = record_json(record)
        params = version_params(0, 1, self.run_id, record, plan, None, data, self.now)
        params.update(record_params(record, self.run_id, self.now))
        inserted = await one(self.conn, "insert_record", params)
        if inserted is None:
            return None
        params["record_id"] = inserted["id"]
        await self.conn.execute(Q["insert_version"], params)
        return inserted["id"], 1, plan.body_hash

    async def _write_version(self, row: DictRow, record: AssetRecord) -> tuple[int, str | None]:
        """Write the record's next version; (its number, its kept body's hash)."""
        plan = await self._keep_body(record)
        data = record_json(record)
        version = row["latest_version"] + 1
        score = await _similarity(self.conn, row["id"], version - 1, record, data)
        params = version_params(
            row["id"], version, self.run_id, record, plan, score, data, self.now
        )
        await self.conn.execute(Q["insert_version"], params)
        await self.conn.execute(Q["update_record_latest"], params)
        return version, plan.body_hash

    async def _keep_body(self, record: AssetRecord) -> BodyPlan:
        plan = plan_body(record, self.cap)
        if plan.body_hash is not None and record.body is not None:
            await self.conn.execute(Q["insert_body"], body_params(plan, record.body, self.now))
        return plan


def _by_key(record: AssetRecord) -> str:
    return record.key


async def _similarity(
    conn: Conn, record_id: int, version: int, record: AssetRecord, data: str
) -> float | None:
    params = {"record_id": record_id, "version": version}
    previous = await one(conn, "select_version_content", params)
    assert previous is not None  # versions are never deleted while their record exists
    previous_body = None
    if record.body is not None and previous["body_hash"] is not None:
        row = await one(conn, "select_body", {"content_hash": previous["body_hash"]})
        previous_body = None if row is None else decompress(row["compression"], row["data"])
    had_body = previous["body_size"] is not None
    # jsonb keeps its own key order: compare the canonical form, as the SQLite store does.
    return similarity(record, data, previous_body, data_json(previous["data"]), had_body)
