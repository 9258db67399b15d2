"""The latest successful fetch of each URL on SQLite (the RevisitStore part of the store).

Writes run inside the report transaction (:func:`save_revisits`, called by the frontier's
``report`` after the batch's records are saved, so a full fetch can name the records it
produced). SQL in ``revisits.sql``; the decisions in :mod:`sitesync.store._revisits`.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Sequence

from sitesync.models import EarlierFetch, LastFetch, TaskReport
from sitesync.store._revisits import (
    confirm_params,
    earlier_fetch,
    full_fetch_params,
    last_fetch_from_row,
    resighted_tally,
)
from sitesync.store.sqlite._db import Q, SqliteArea
from sitesync.store.sqlite.record_batch import add_assets


class SqliteRevisits(SqliteArea):
    async def last_fetch(self, url: str) -> LastFetch | None:
        rows = await self._db.rows("select_last_fetch", {"url": url})
        return last_fetch_from_row(rows[0]) if rows else None

    async def earlier_fetch(self, url: str) -> EarlierFetch | None:
        def work(conn: sqlite3.Connection) -> EarlierFetch | None:
            row = conn.execute(Q["select_earlier_fetch"], {"url": url}).fetchone()
            if row is None:
                return None
            ids = row["record_ids"]
            records = conn.execute(Q["select_earlier_records"], {"record_ids": ids}).fetchall()
            return earlier_fetch(row["links"], json.loads(ids), records)

        return await self._db.read(work)


def save_revisits(
    conn: sqlite3.Connection, run_id: int, reports: Sequence[TaskReport], now: float
) -> None:
    """Write the revisits of the batch's completed reports, in the report transaction."""
    if not reports:
        return
    full = [r for r in reports if r.revisit is not None and not r.revisit.not_modified]
    keys = json.dumps(list({record.key: None for r in full for record in r.records}))
    rows = conn.execute(Q["select_records_by_key"], {"keys": keys}) if full else ()
    record_ids = {row["key"]: row["id"] for row in rows}
    for report in reports:
        assert report.revisit is not None
        if not report.revisit.not_modified:
            params = full_fetch_params(report, run_id, now, record_ids, json.dumps)
            conn.execute(Q["upsert_last_fetch"], params)
            continue
        conn.execute(Q["confirm_last_fetch"], confirm_params(report, run_id, now))
        resighted = [record_id for record_id, _ in report.revisit.resighted]
        params = {"run_id": run_id, "task_id": report.lease.task_id, "now": now,
                  "record_ids": json.dumps(resighted)}  # fmt: skip
        newly_seen = [row[0] for row in conn.execute(Q["insert_resightings"], params)]
        add_assets(conn, run_id, resighted_tally(report, newly_seen))
