"""Read models for the dashboard, the JSON API and ``/metrics`` on PostgreSQL.

Mixed into :class:`~sitesync.store.postgres.store.PostgresStore`: plain reads (no run lock),
with their SQL in ``overview.sql``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from psycopg.rows import DictRow

from sitesync.models import HostBacklog, OutcomeCount, Run, Task, WorkerLeases
from sitesync.store._sql import load_queries
from sitesync.store.postgres._rows import run_from_row, task_from_row

_Q = load_queries("sitesync.store.postgres", "overview.sql")


class PostgresOverview:
    if TYPE_CHECKING:
        _clock: Callable[[], float]

        async def _fetch_all(self, query: str, params: dict[str, Any]) -> list[DictRow]: ...

    async def _overview_rows(self, query: str, params: dict[str, Any]) -> list[DictRow]:
        return await self._fetch_all(_Q[query], params)

    async def list_active_runs(self) -> list[Run]:
        return [run_from_row(row) for row in await self._overview_rows("select_active_runs", {})]

    async def count_outcomes(self, run_id: int) -> list[OutcomeCount]:
        rows = await self._overview_rows("count_outcomes", {"run_id": run_id})
        return [OutcomeCount(row["outcome"], row["status_class"], row["tasks"]) for row in rows]

    async def list_redirected(self, run_id: int, *, limit: int = 100) -> list[Task]:
        rows = await self._overview_rows("select_redirected", {"run_id": run_id, "limit": limit})
        return [task_from_row(row) for row in rows]

    async def pending_by_host(self, run_id: int, *, limit: int = 100) -> list[HostBacklog]:
        rows = await self._overview_rows("pending_by_host", {"run_id": run_id, "limit": limit})
        return [
            HostBacklog(row["host"], row["pending"], float(row["next_eligible_at"])) for row in rows
        ]

    async def leases_by_worker(self, run_id: int) -> list[WorkerLeases]:
        params = {"run_id": run_id, "now": self._clock()}
        return [
            WorkerLeases(
                row["worker_id"], row["tasks"], int(row["expired"]), float(row["earliest_expiry"])
            )
            for row in await self._overview_rows("leases_by_worker", params)
        ]
