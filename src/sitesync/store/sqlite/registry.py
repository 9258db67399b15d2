"""The domain registry, scans of scopes and their schedules on SQLite.

Every method is one transaction on the store's thread, with its SQL in ``registry.sql``.
The stale lifecycle rule itself is :func:`sitesync.store.rules.lifecycle_changes`, so both
backends decide alike.

Registered hosts are bare ``host[:port]`` strings (no scheme, no path), as
:func:`sitesync.urls.url_host` gives them: the scan's seeds carry the scheme.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Sequence

from sitesync.errors import ScanConflict
from sitesync.models import Domain, DomainScan, Run, RunConfig, ScanSummary, Schedule
from sitesync.store._rows import domain_scan_from_row, schedule_from_row
from sitesync.store.rules import lifecycle_changes
from sitesync.store.sqlite._db import Q, SqliteArea
from sitesync.store.sqlite._rows import domain_from_row, run_from_row


class SqliteRegistry(SqliteArea):
    # -- domains --------------------------------------------------------------------------

    async def import_domains(self, scope: str, hosts: Sequence[str]) -> int:
        unique = list(dict.fromkeys(hosts))
        params = {"scope": scope, "hosts": json.dumps(unique), "now": self._db.clock()}

        def work(conn: sqlite3.Connection) -> int:
            known = conn.execute(Q["count_registered"], params).fetchone()["n"]
            conn.execute(Q["register_domains"], params)
            return len(unique) - int(known)

        return await self._db.write(work)

    async def list_domains(
        self,
        *,
        scope: str | None = None,
        stale: bool | None = None,
        active: bool | None = None,
    ) -> list[Domain]:
        params = {"scope": scope, "stale": stale, "active": active}
        return [domain_from_row(row) for row in await self._db.rows("select_domains", params)]

    # -- scans ----------------------------------------------------------------------------

    async def start_scan(self, scope: str, config: RunConfig) -> Run:
        params = {"scope": scope, "config": json.dumps(config.to_json()), "now": self._db.clock()}

        def work(conn: sqlite3.Connection) -> Run:
            try:
                row = conn.execute(Q["insert_scan_run"], params).fetchone()
            except sqlite3.IntegrityError:
                # BEGIN IMMEDIATE serializes writers, so the run that holds the index
                # entry is visible here; raising rolls the (failed) insert back.
                active = conn.execute(Q["select_active_scan"], params).fetchone()
                if active is None:
                    raise
                raise ScanConflict(scope, active["id"]) from None
            return run_from_row(row)

        return await self._db.write(work)

    async def apply_scan_results(self, run_id: int) -> ScanSummary | None:
        def work(conn: sqlite3.Connection) -> ScanSummary | None:
            now = self._db.clock()
            claimed = conn.execute(
                Q["claim_scan_results"], {"run_id": run_id, "now": now}
            ).fetchone()
            if claimed is None:
                return None
            rows = conn.execute(
                Q["select_scan_roots"], {"run_id": run_id, "scope": claimed["scope"]}
            ).fetchall()
            summary, updates = lifecycle_changes(run_id, rows, now)
            conn.executemany(Q["update_domain_lifecycle"], updates)
            return summary

        return await self._db.write(work)

    async def list_unapplied_scans(self) -> list[int]:
        return [row["id"] for row in await self._db.rows("select_unapplied_scans")]

    # -- schedules ------------------------------------------------------------------------

    async def set_schedule(self, scope: str, *, cadence: str, next_run_at: float) -> None:
        params = {"scope": scope, "cadence": cadence, "next_run_at": next_run_at}
        await self._db.execute("upsert_schedule", params)

    async def list_schedules(self) -> list[Schedule]:
        return [schedule_from_row(row) for row in await self._db.rows("select_schedules")]

    async def advance_schedule(
        self, scope: str, *, next_run_at: float, last_run_id: int | None
    ) -> None:
        params = {"scope": scope, "next_run_at": next_run_at, "last_run_id": last_run_id}
        await self._db.execute("advance_schedule", params)

    async def delete_schedule(self, scope: str) -> bool:
        return await self._db.execute("delete_schedule", {"scope": scope}) > 0

    # -- the registry across scans --------------------------------------------------------

    async def record_domain_scans(self, run_id: int) -> int:
        return await self._db.execute("record_domain_scans", {"run_id": run_id})

    async def latest_domain_scans(self, host: str | None = None) -> list[DomainScan]:
        return await self._scans("select_latest_domain_scans", host)

    async def domain_history(self, host: str) -> list[DomainScan]:
        return await self._scans("select_domain_history", host)

    async def _scans(self, query: str, host: str | None) -> list[DomainScan]:
        return [domain_scan_from_row(row) for row in await self._db.rows(query, {"host": host})]
