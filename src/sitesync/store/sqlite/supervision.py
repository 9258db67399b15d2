"""Run heartbeats, the watchdog and operator clean-up tools on SQLite.

SQL in ``supervision.sql``; what becomes of a stale run in :mod:`sitesync.store.rules`.
"""

from __future__ import annotations

import sqlite3

from sitesync.models import Claim, Run
from sitesync.store._plain import PlainSupervision
from sitesync.store._rows import claim_from_row
from sitesync.store.rules import recovery_step
from sitesync.store.sqlite._db import Q, SqliteDb
from sitesync.store.sqlite.runs import select_run


class SqliteSupervision(PlainSupervision[SqliteDb]):
    async def start_queued_run(self, run_id: int, *, supervisor_id: str) -> Run | None:
        params = {"run_id": run_id, "supervisor_id": supervisor_id, "now": self._db.clock()}

        def work(conn: sqlite3.Connection) -> Run | None:
            if conn.execute(Q["start_queued_run"], params).rowcount != 1:
                return None
            return select_run(conn, run_id)

        return await self._db.transaction(work)

    async def recover_stale_runs(self, *, stale_after: float, max_crash_retries: int) -> list[Run]:
        def work(conn: sqlite3.Connection) -> list[Run]:
            now = self._db.clock()
            stale = conn.execute(Q["select_stale_running"], {"stale_before": now - stale_after})
            recovered = []
            for row in stale.fetchall():
                query, extra = recovery_step(
                    row, stale_after=stale_after, max_crash_retries=max_crash_retries
                )
                conn.execute(Q[query], {"run_id": row["id"], "now": now, **extra})
                recovered.append(select_run(conn, row["id"]))
            return recovered

        return await self._db.transaction(work)

    async def release_claims_where(
        self, *, expired_only: bool, worker_id: str | None, dry_run: bool
    ) -> list[Claim]:
        params = {"expired_only": expired_only, "worker_id": worker_id, "now": self._db.clock()}

        def work(conn: sqlite3.Connection) -> list[Claim]:
            rows = conn.execute(Q["select_claims_to_release"], params).fetchall()
            claims = [claim_from_row(row) for row in rows]
            if not dry_run:
                for claim in claims:
                    conn.execute(
                        Q["delete_claim"],
                        {"run_id": claim.run_id, "host": claim.host,
                         "worker_id": claim.worker_id, "expires_at": claim.expires_at},
                    )  # fmt: skip
            return claims

        return await self._db.transaction(work)
