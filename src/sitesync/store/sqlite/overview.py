"""Read models for the dashboard, the JSON API and ``/metrics`` on SQLite.

Mixed into :class:`~sitesync.store.sqlite.store.SqliteStore`: plain reads on the store's
thread, with their SQL in ``overview.sql``.
"""

from __future__ import annotations

import contextlib
import sqlite3
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

from sitesync.models import HostBacklog, OutcomeCount, Run, Task, WorkerLeases
from sitesync.store._sql import load_queries
from sitesync.store.sqlite._rows import run_from_row, task_from_row

T = TypeVar("T")

_Q = load_queries("sitesync.store.sqlite", "overview.sql")


class SqliteOverview:
    if TYPE_CHECKING:
        _clock: Callable[[], float]

        async def _call(self, fn: Callable[..., T], *args: Any) -> T: ...

        def _errors(self) -> contextlib.AbstractContextManager[None]: ...

        def _connection(self) -> sqlite3.Connection: ...

    def _overview_rows(self, query: str, params: dict[str, Any]) -> list[sqlite3.Row]:
        with self._errors():
            return self._connection().execute(_Q[query], params).fetchall()

    async def list_active_runs(self) -> list[Run]:
        rows = await self._call(self._overview_rows, "select_active_runs", {})
        return [run_from_row(row) for row in rows]

    async def count_outcomes(self, run_id: int) -> list[OutcomeCount]:
        rows = await self._call(self._overview_rows, "count_outcomes", {"run_id": run_id})
        return [OutcomeCount(row["outcome"], row["status_class"], row["tasks"]) for row in rows]

    async def list_redirected(self, run_id: int, *, limit: int = 100) -> list[Task]:
        params = {"run_id": run_id, "limit": limit}
        rows = await self._call(self._overview_rows, "select_redirected", params)
        return [task_from_row(row) for row in rows]

    async def pending_by_host(self, run_id: int, *, limit: int = 100) -> list[HostBacklog]:
        params = {"run_id": run_id, "limit": limit}
        rows = await self._call(self._overview_rows, "pending_by_host", params)
        return [HostBacklog(row["host"], row["pending"], row["next_eligible_at"]) for row in rows]

    async def leases_by_worker(self, run_id: int) -> list[WorkerLeases]:
        params = {"run_id": run_id, "now": self._clock()}
        rows = await self._call(self._overview_rows, "leases_by_worker", params)
        return [
            WorkerLeases(row["worker_id"], row["tasks"], row["expired"], row["earliest_expiry"])
            for row in rows
        ]
