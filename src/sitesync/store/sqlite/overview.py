"""Read models for the dashboard, the JSON API and ``/metrics`` on SQLite.

Plain reads on the store's thread, with their SQL in ``overview.sql``.
"""

from __future__ import annotations

from sitesync.models import HostBacklog, OutcomeCount, Run, Task, WorkerLeases
from sitesync.store.sqlite._db import SqliteArea
from sitesync.store.sqlite._rows import run_from_row, task_from_row


class SqliteOverview(SqliteArea):
    async def list_active_runs(self) -> list[Run]:
        rows = await self._db.rows("select_active_runs")
        return [run_from_row(row) for row in rows]

    async def count_outcomes(self, run_id: int) -> list[OutcomeCount]:
        rows = await self._db.rows("count_outcomes", {"run_id": run_id})
        return [OutcomeCount(row["outcome"], row["status_class"], row["tasks"]) for row in rows]

    async def list_redirected(self, run_id: int, *, limit: int = 100) -> list[Task]:
        params = {"run_id": run_id, "limit": limit}
        rows = await self._db.rows("select_redirected", params)
        return [task_from_row(row) for row in rows]

    async def pending_by_host(self, run_id: int, *, limit: int = 100) -> list[HostBacklog]:
        params = {"run_id": run_id, "limit": limit}
        rows = await self._db.rows("pending_by_host", params)
        return [HostBacklog(row["host"], row["pending"], row["next_eligible_at"]) for row in rows]

    async def leases_by_worker(self, run_id: int) -> list[WorkerLeases]:
        params = {"run_id": run_id, "now": self._db.clock()}
        rows = await self._db.rows("leases_by_worker", params)
        return [
            WorkerLeases(row["worker_id"], row["tasks"], row["expired"], row["earliest_expiry"])
            for row in rows
        ]
