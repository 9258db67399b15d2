"""Run heartbeats, the watchdog and operator clean-up tools on PostgreSQL.

SQL in ``supervision.sql``; what becomes of a stale run in :mod:`sitesync.store.rules`.
"""

from __future__ import annotations

from sitesync.models import Claim, Run
from sitesync.store._plain import PlainSupervision
from sitesync.store._rows import claim_from_row
from sitesync.store.postgres._db import Conn, PostgresDb, Q, every, hold_run, lock_run
from sitesync.store.rules import recovery_step


class PostgresSupervision(PlainSupervision[PostgresDb]):
    async def start_queued_run(self, run_id: int, *, supervisor_id: str) -> Run | None:
        async def work(conn: Conn) -> Run | None:
            if not await hold_run(conn, run_id):
                return None
            params = {"run_id": run_id, "supervisor_id": supervisor_id, "now": self._db.clock()}
            if (await conn.execute(Q["start_queued_run"], params)).rowcount != 1:
                return None
            return await lock_run(conn, run_id)

        return await self._db.transaction(work)

    async def recover_stale_runs(self, *, stale_after: float, max_crash_retries: int) -> list[Run]:
        async def work(conn: Conn) -> list[Run]:
            now = self._db.clock()
            params = {"stale_before": now - stale_after}
            stale = await every(conn, "select_stale_running", params)
            recovered = []
            for row in stale:
                if not await hold_run(conn, row["id"]):
                    continue
                query, extra = recovery_step(
                    row, stale_after=stale_after, max_crash_retries=max_crash_retries
                )
                await conn.execute(Q[query], {"run_id": row["id"], "now": now, **extra})
                run = await lock_run(conn, row["id"])
                assert run is not None
                recovered.append(run)
            return recovered

        return await self._db.transaction(work)

    async def release_claims_where(
        self, *, expired_only: bool, worker_id: str | None, dry_run: bool
    ) -> list[Claim]:
        async def work(conn: Conn) -> list[Claim]:
            params = {"expired_only": expired_only, "worker_id": worker_id, "now": self._db.clock()}
            rows = await every(conn, "select_claims_to_release", params)
            claims = [claim_from_row(row) for row in rows]
            if not dry_run:
                for claim in claims:
                    await conn.execute(
                        Q["delete_claim"],
                        {"run_id": claim.run_id, "host": claim.host,
                         "worker_id": claim.worker_id, "expires_at": claim.expires_at},
                    )  # fmt: skip
            return claims

        return await self._db.transaction(work)
