"""The latest successful fetch of each URL on SQLite (the RevisitStore part of the store).

Writes run inside the report transaction (:func:`save_revisits`, called by the frontier's
``report`` after the batch's records are saved, so a full fetch can name the records it
produced). SQL in ``revisits.sql``; the decisions in :mod:`sitesync.store._revisits`.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Sequence

from sitesync.models import LastFetch, TaskReport
from sitesync.store._revisits import (
    confirm_params,
    full_fetch_params,
    last_fetch_from_row,
    resighted_tallies,
    resightings,
)
from sitesync.store.sqlite._db import Q, SqliteArea
from sitesync.store.sqlite.record_batch import add_assets


class SqliteRevisits(SqliteArea):
    async def last_fetch(self, url: str) -> LastFetch | None:
        return (await self.last_fetches([url])).get(url)

    async def last_fetches(self, urls: Sequence[str]) -> dict[str, LastFetch]:
        rows = await self._db.rows("select_last_fetches", {"urls": json.dumps(list(urls))})
        return {
            row["url"]: last_fetch_from_row(
                row, json.loads(row["record_ids"]), json.loads(row["found"])
            )
            for row in rows
        }


def save_revisits(
    conn: sqlite3.Connection, run_id: int, reports: Sequence[TaskReport], now: float
) -> None:
    """Write the revisits of the batch's completed reports, in the report transaction."""
    full = [r for r in reports if r.revisit is not None and not r.revisit.not_modified]
    unchanged = [r for r in reports if r.revisit is not None and r.revisit.not_modified]
    if full:
        keys = json.dumps(list({record.key: None for r in full for record in r.records}))
        rows = conn.execute(Q["select_records_by_key"], {"keys": keys})
        record_ids = {row["key"]: row["id"] for row in rows}
        conn.executemany(
            Q["upsert_last_fetch"],
            [full_fetch_params(r, run_id, now, record_ids, json.dumps) for r in full],
        )
    if unchanged:
        conn.executemany(
            Q["confirm_last_fetch"], [confirm_params(r, run_id, now) for r in unchanged]
        )
        params = {"run_id": run_id, "now": now, "sightings": json.dumps(resightings(unchanged))}
        newly_seen = [(row[0], row[1]) for row in conn.execute(Q["insert_resightings"], params)]
        add_assets(conn, run_id, resighted_tallies(unchanged, newly_seen))
