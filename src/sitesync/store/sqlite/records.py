"""Versioned AssetRecords on SQLite (the RecordStore part of the SQLite store).

Writes run inside the report transaction (:func:`save_records`, called by the frontier's
``report``); the reads are written once for both backends (:mod:`sitesync.store._plain`,
:mod:`sitesync.store._scripts`). SQL lives in ``records.sql``; what is a decision (keep a
body, similarity) in :mod:`sitesync.store._records`.
"""

from __future__ import annotations

import sqlite3
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass

from sitesync.models import AssetRecord, TaskReport
from sitesync.store._records import (
    AssetTally,
    BodyPlan,
    body_params,
    decompress,
    plan_body,
    record_json,
    record_params,
    similarity,
    version_params,
)
from sitesync.store._scripts import ScriptedRecords
from sitesync.store.sqlite._db import Q, SqliteDb
from sitesync.store.sqlite.record_batch import add_assets, save_batch


class SqliteRecords(ScriptedRecords[SqliteDb]):
    """Every read is written once for both backends (``_plain``, ``_scripts``); what is
    SQLite's own is the writing, below."""


# -- writing (inside the report transaction) ---------------------------------------------


def save_records(
    conn: sqlite3.Connection, run_id: int, reports: Sequence[TaskReport], now: float, cap: int
) -> None:
    """Write the accepted reports' records in the report transaction; bodies over ``cap``
    bytes are not kept. New keys and unchanged sightings go in bulk
    (:mod:`~sitesync.store.sqlite.record_batch`); the rest one by one, here, in batch order."""
    rest = save_batch(conn, run_id, reports, now, cap)
    writer = _RecordWriter(conn, run_id, now, cap)
    tallies: dict[str, AssetTally] = defaultdict(AssetTally)
    for index, record in rest:
        report = reports[index]
        seen, stored = writer.save(report.lease.task_id, record)
        tallies[report.lease.host].count(record, newly_seen=seen, newly_stored=stored)
    add_assets(conn, run_id, tallies)


@dataclass(frozen=True, slots=True)
class _RecordWriter:
    """The records of one report, written in its transaction."""

    conn: sqlite3.Connection
    run_id: int
    now: float
    cap: int

    def save(self, task_id: int, record: AssetRecord) -> tuple[bool, bool]:
        """Save one sighting; (first sighting in the run, body newly stored in the run).

        The report transaction holds the database's write lock: what ``select_record``
        reads stays true until commit.
        """
        conn = self.conn
        row = conn.execute(Q["select_record"], {"key": record.key}).fetchone()
        if row is None:
            record_id, version, body_hash = self._create(record)
            changed, had_body = True, False
        else:
            record_id, version, body_hash = (
                row["id"],
                row["latest_version"],
                row["latest_body_hash"],
            )
            changed, had_body = row["latest_hash"] != record.content_hash, body_hash is not None
            if changed:
                version, body_hash = self._write_version(row, record)
        seen = {"run_id": self.run_id, "record_id": record_id, "version": version,
                "task_id": task_id, "now": self.now}  # fmt: skip
        newly_seen = conn.execute(Q["insert_seen"], seen).rowcount == 1
        if changed and not newly_seen:
            conn.execute(Q["update_seen"], seen)
        newly_stored = body_hash is not None and (newly_seen or (changed and not had_body))
        return newly_seen, newly_stored

    def _create(self, record: AssetRecord) -> tuple[int, int, str | None]:
        """A new key with its first version; (record id, 1, its kept body's hash)."""
        plan = self._keep_body(record)
        data = record_json(record)
        params = version_params(0, 1, self.run_id, record, plan, None, data, self.now)
        params.update(record_params(record, self.run_id, self.now))
        params["record_id"] = self.conn.execute(Q["insert_record"], params).fetchone()[0]
        self.conn.execute(Q["insert_version"], params)
        return params["record_id"], 1, plan.body_hash

    def _write_version(self, row: sqlite3.Row, record: AssetRecord) -> tuple[int, str | None]:
        """Write the record's next version; (its number, its kept body's hash)."""
        plan = self._keep_body(record)
        data = record_json(record)
        version = row["latest_version"] + 1
        score = self._similarity(row["id"], version - 1, record, data)
        params = version_params(
            row["id"], version, self.run_id, record, plan, score, data, self.now
        )
        self.conn.execute(Q["insert_version"], params)
        self.conn.execute(Q["update_record_latest"], params)
        return version, plan.body_hash

    def _keep_body(self, record: AssetRecord) -> BodyPlan:
        plan = plan_body(record, self.cap)
        if plan.body_hash is not None and record.body is not None:
            self.conn.execute(Q["insert_body"], body_params(plan, record.body, self.now))
        return plan

    def _similarity(
        self, record_id: int, version: int, record: AssetRecord, data: str
    ) -> float | None:
        params = {"record_id": record_id, "version": version}
        previous = self.conn.execute(Q["select_version_content"], params).fetchone()
        previous_body = None
        if record.body is not None and previous["body_hash"] is not None:
            body = {"content_hash": previous["body_hash"]}
            row = self.conn.execute(Q["select_body"], body).fetchone()
            previous_body = None if row is None else decompress(row["compression"], row["data"])
        had_body = previous["body_size"] is not None
        return similarity(record, data, previous_body, previous["data"], had_body)
