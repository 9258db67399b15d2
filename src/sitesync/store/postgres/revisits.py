"""The latest successful fetch of each URL on PostgreSQL (the RevisitStore part of the store).

Writes run inside the report transaction (:func:`save_revisits`, called by the frontier's
``report`` after the batch's records are saved, so a full fetch can name the records it
produced), a few statements per batch whatever its size. Two runs fetching one URL at once:
the later commit's fetch is the last one, as it would be on SQLite. SQL in
``revisits.sql``; the decisions in :mod:`sitesync.store._revisits`.
"""

from __future__ import annotations

from collections.abc import Sequence

from sitesync.models import LastFetch, TaskReport
from sitesync.store._revisits import (
    confirm_params,
    full_fetch_params,
    last_fetch_from_row,
    resighted_tallies,
    resightings,
)
from sitesync.store.postgres._db import Conn, PostgresArea, Q, every
from sitesync.store.postgres.record_batch import add_assets


class PostgresRevisits(PostgresArea):
    async def last_fetch(self, url: str) -> LastFetch | None:
        return (await self.last_fetches([url])).get(url)

    async def last_fetches(self, urls: Sequence[str]) -> dict[str, LastFetch]:
        rows = await self._db.rows("select_last_fetches", {"urls": list(urls)})
        return {
            row["url"]: last_fetch_from_row(row, list(row["record_ids"]), row["found"] or [])
            for row in rows
        }


def _ids(ids: list[int]) -> list[int]:
    return ids


async def save_revisits(conn: Conn, run_id: int, reports: Sequence[TaskReport], now: float) -> None:
    """Write the revisits of the batch's completed reports, in the report transaction."""
    # One URL order for every transaction: two batches writing the same URLs never wait
    # for each other in opposite orders.
    ordered = sorted(reports, key=lambda r: r.revisit.url if r.revisit else "")
    full = [r for r in ordered if r.revisit is not None and not r.revisit.not_modified]
    unchanged = [r for r in ordered if r.revisit is not None and r.revisit.not_modified]
    if full:
        keys = sorted({record.key for r in full for record in r.records})
        rows = await every(conn, "select_records_by_key", {"keys": keys}) if keys else []
        record_ids = {row["key"]: row["id"] for row in rows}
        async with conn.cursor() as cursor:  # pipelined: one round trip for the batch
            await cursor.executemany(
                Q["upsert_last_fetch"],
                [full_fetch_params(r, run_id, now, record_ids, _ids) for r in full],
            )
    if unchanged:
        async with conn.cursor() as cursor:
            params = [confirm_params(r, run_id, now) for r in unchanged]
            await cursor.executemany(Q["confirm_last_fetch"], params)
        pairs = resightings(unchanged)
        sightings = {"run_id": run_id, "now": now, "record_ids": [p[0] for p in pairs],
                     "task_ids": [p[1] for p in pairs]}  # fmt: skip
        rows = await every(conn, "insert_resightings", sightings)
        newly_seen = [(row["record_id"], row["task_id"]) for row in rows]
        await add_assets(conn, run_id, resighted_tallies(unchanged, newly_seen))
