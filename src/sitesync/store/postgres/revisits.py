"""The latest successful fetch of each URL on PostgreSQL (the RevisitStore part of the store).

Writes run inside the report transaction (:func:`save_revisits`, called by the frontier's
``report`` after the batch's records are saved, so a full fetch can name the records it
produced). Two runs fetching one URL at once: the later commit's fetch is the last one,
as it would be on SQLite. SQL in ``revisits.sql``; the decisions in
:mod:`sitesync.store._revisits`.
"""

from __future__ import annotations

from collections.abc import Sequence

from sitesync.models import EarlierFetch, LastFetch, TaskReport
from sitesync.store._revisits import (
    confirm_params,
    earlier_fetch,
    full_fetch_params,
    last_fetch_from_row,
    resighted_tally,
)
from sitesync.store.postgres._db import Conn, PostgresArea, Q, every, one
from sitesync.store.postgres.record_batch import add_assets


class PostgresRevisits(PostgresArea):
    async def last_fetch(self, url: str) -> LastFetch | None:
        rows = await self._db.rows("select_last_fetch", {"url": url})
        return last_fetch_from_row(rows[0]) if rows else None

    async def earlier_fetch(self, url: str) -> EarlierFetch | None:
        async def work(conn: Conn) -> EarlierFetch | None:
            row = await one(conn, "select_earlier_fetch", {"url": url})
            if row is None:
                return None
            ids = list(row["record_ids"])
            records = await every(conn, "select_earlier_records", {"record_ids": ids})
            return earlier_fetch(row["links"], ids, records)

        return await self._db.transaction(work)


def _ids(ids: list[int]) -> list[int]:
    return ids


async def save_revisits(conn: Conn, run_id: int, reports: Sequence[TaskReport], now: float) -> None:
    """Write the revisits of the batch's completed reports, in the report transaction."""
    if not reports:
        return
    full = [r for r in reports if r.revisit is not None and not r.revisit.not_modified]
    keys = sorted({record.key for r in full for record in r.records})
    rows = await every(conn, "select_records_by_key", {"keys": keys}) if keys else []
    record_ids = {row["key"]: row["id"] for row in rows}
    # One URL order for every transaction: two batches upserting the same URLs never wait
    # for each other in opposite orders.
    for report in sorted(reports, key=lambda r: r.revisit.url if r.revisit else ""):
        assert report.revisit is not None
        if not report.revisit.not_modified:
            params = full_fetch_params(report, run_id, now, record_ids, _ids)
            await conn.execute(Q["upsert_last_fetch"], params)
            continue
        await conn.execute(Q["confirm_last_fetch"], confirm_params(report, run_id, now))
        resighted = [record_id for record_id, _ in report.revisit.resighted]
        params = {"run_id": run_id, "task_id": report.lease.task_id, "now": now,
                  "record_ids": resighted}  # fmt: skip
        newly_seen = [row["record_id"] for row in await every(conn, "insert_resightings", params)]
        await add_assets(conn, run_id, resighted_tally(report, newly_seen))
