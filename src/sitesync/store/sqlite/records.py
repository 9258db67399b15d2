"""Versioned AssetRecords on SQLite (the RecordStore part of the SQLite store).

Writes run inside the report transaction (``_save_records``, called by ``SqliteStore._report``);
reads are one statement each on the store's thread. SQL lives in ``records.sql``.
"""

from __future__ import annotations

import contextlib
import json
import sqlite3
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

from sitesync.models import (
    AssetRecord,
    HostAssets,
    RecordVersion,
    RunDiff,
    TaskReport,
)
from sitesync.store._records import (
    DEFAULT_MAX_STORED_BODY_BYTES,
    AssetTally,
    BodyPlan,
    assets_from_row,
    body_params,
    change_from_row,
    data_json,
    decompress,
    one_sided_change,
    plan_body,
    record_params,
    similarity,
    version_from_row,
    version_params,
)
from sitesync.store._sql import load_queries

T = TypeVar("T")

_R = load_queries("sitesync.store.sqlite", "records.sql")


class SqliteRecords:
    """Mixed into :class:`SqliteStore`; runs inside its transactions and thread."""

    max_stored_body_bytes: int = DEFAULT_MAX_STORED_BODY_BYTES

    if TYPE_CHECKING:

        async def _call(self, fn: Callable[..., T], *args: Any) -> T: ...

        def _errors(self) -> contextlib.AbstractContextManager[None]: ...

        def _connection(self) -> sqlite3.Connection: ...

    # -- writing (inside the report transaction) ------------------------------------------

    def _save_records(
        self, conn: sqlite3.Connection, run_id: int, report: TaskReport, now: float
    ) -> None:
        """Write the report's records in the report's own transaction."""
        tally = AssetTally()
        for record in report.records:
            seen, stored = self._save_record(conn, run_id, report.lease.task_id, record, now)
            tally.count(record, newly_seen=seen, newly_stored=stored)
        if tally.found or tally.stored:
            params: dict[str, Any] = {"run_id": run_id, "host": report.lease.host}
            params.update(found=tally.found, stored=tally.stored)
            conn.execute(_R["add_host_assets"], params)

    def _save_record(
        self, conn: sqlite3.Connection, run_id: int, task_id: int, record: AssetRecord, now: float
    ) -> tuple[bool, bool]:
        """Save one sighting; (first sighting in the run, body newly stored in the run).

        The report transaction holds the database's write lock: what ``select_record``
        reads stays true until commit.
        """
        row = conn.execute(_R["select_record"], {"key": record.key}).fetchone()
        if row is None:
            record_id, version, body_hash = self._create_record(conn, run_id, record, now)
            changed, had_body = True, False
        else:
            record_id, version, body_hash = (
                row["id"],
                row["latest_version"],
                row["latest_body_hash"],
            )
            changed, had_body = row["latest_hash"] != record.content_hash, body_hash is not None
            if changed:
                version, body_hash = self._write_version(conn, row, run_id, record, now)
        seen = {
            "run_id": run_id,
            "record_id": record_id,
            "version": version,
            "task_id": task_id,
            "now": now,
        }
        newly_seen = conn.execute(_R["insert_seen"], seen).rowcount == 1
        if changed and not newly_seen:
            conn.execute(_R["update_seen"], seen)
        newly_stored = body_hash is not None and (newly_seen or (changed and not had_body))
        return newly_seen, newly_stored

    def _create_record(
        self, conn: sqlite3.Connection, run_id: int, record: AssetRecord, now: float
    ) -> tuple[int, int, str | None]:
        """A new key with its first version; (record id, 1, its kept body's hash)."""
        plan = self._keep_body(conn, record, now)
        params = version_params(0, 1, run_id, record, plan, None, data_json(record.data), now)
        params.update(record_params(record, run_id, now))
        params["record_id"] = conn.execute(_R["insert_record"], params).fetchone()[0]
        conn.execute(_R["insert_version"], params)
        return params["record_id"], 1, plan.body_hash

    def _write_version(
        self,
        conn: sqlite3.Connection,
        row: sqlite3.Row,
        run_id: int,
        record: AssetRecord,
        now: float,
    ) -> tuple[int, str | None]:
        """Write the record's next version; (its number, its kept body's hash)."""
        plan = self._keep_body(conn, record, now)
        data = data_json(record.data)
        version = row["latest_version"] + 1
        score = self._similarity(conn, row["id"], version - 1, record, data)
        params = version_params(row["id"], version, run_id, record, plan, score, data, now)
        conn.execute(_R["insert_version"], params)
        conn.execute(_R["update_record_latest"], params)
        return version, plan.body_hash

    def _keep_body(self, conn: sqlite3.Connection, record: AssetRecord, now: float) -> BodyPlan:
        plan = plan_body(record.body, self.max_stored_body_bytes)
        if plan.body_hash is not None and record.body is not None:
            conn.execute(_R["insert_body"], body_params(plan, record.body, now))
        return plan

    @staticmethod
    def _similarity(
        conn: sqlite3.Connection, record_id: int, version: int, record: AssetRecord, data: str
    ) -> float | None:
        params = {"record_id": record_id, "version": version}
        previous = conn.execute(_R["select_version_content"], params).fetchone()
        previous_body = None
        if record.body is not None and previous["body_hash"] is not None:
            row = conn.execute(
                _R["select_body"], {"content_hash": previous["body_hash"]}
            ).fetchone()
            previous_body = None if row is None else decompress(row["compression"], row["data"])
        had_body = previous["body_size"] is not None
        return similarity(record, data, previous_body, previous["data"], had_body)

    # -- reading --------------------------------------------------------------------------

    def _rows(self, query: str, params: dict[str, Any]) -> list[sqlite3.Row]:
        with self._errors():
            return self._connection().execute(_R[query], params).fetchall()

    async def record_history(self, key: str) -> list[RecordVersion]:
        rows = await self._call(self._rows, "select_history", {"key": key})
        return [version_from_row(row, json.loads(row["data"])) for row in rows]

    async def records_of_run(self, run_id: int, *, kind: str | None = None) -> list[RecordVersion]:
        params = {"run_id": run_id, "kind": kind}
        rows = await self._call(self._rows, "select_run_records", params)
        return [version_from_row(row, json.loads(row["data"])) for row in rows]

    async def records_of_task(self, run_id: int, task_id: int) -> list[RecordVersion]:
        params = {"run_id": run_id, "task_id": task_id}
        rows = await self._call(self._rows, "select_task_records", params)
        return [version_from_row(row, json.loads(row["data"])) for row in rows]

    async def pages_linking_to(self, run_id: int, url: str, *, limit: int = 5) -> list[str]:
        params = {"run_id": run_id, "url": url, "limit": limit}
        return [
            row["url"] for row in await self._call(self._rows, "select_pages_linking_to", params)
        ]

    async def diff_runs(self, run_a: int, run_b: int) -> RunDiff:
        return await self._call(self._diff_runs, run_a, run_b)

    def _diff_runs(self, run_a: int, run_b: int) -> RunDiff:
        added = self._rows("diff_only_in", {"run_id": run_b, "other_run_id": run_a})
        removed = self._rows("diff_only_in", {"run_id": run_a, "other_run_id": run_b})
        changed = self._rows("diff_changed", {"run_a": run_a, "run_b": run_b})
        return RunDiff(
            run_a=run_a,
            run_b=run_b,
            added=tuple(one_sided_change(row, side="b") for row in added),
            removed=tuple(one_sided_change(row, side="a") for row in removed),
            changed=tuple(change_from_row(row) for row in changed),
        )

    async def get_body(self, content_hash: str) -> bytes | None:
        rows = await self._call(self._rows, "select_body", {"content_hash": content_hash})
        return decompress(rows[0]["compression"], rows[0]["data"]) if rows else None

    async def run_assets(self, run_id: int) -> list[HostAssets]:
        rows = await self._call(self._rows, "select_run_assets", {"run_id": run_id})
        return [assets_from_row(row) for row in rows]
