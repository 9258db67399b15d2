"""Run heartbeats, the watchdog and operator clean-up tools on SQLite (a store mixin)."""

from __future__ import annotations

import contextlib
import sqlite3
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

from sitesync.models import Claim, Run
from sitesync.store._rows import claim_from_row
from sitesync.store._sql import load_queries
from sitesync.store.rules import recovery_step
from sitesync.store.sqlite._rows import run_from_row

T = TypeVar("T")

_Q = load_queries("sitesync.store.sqlite", "supervision.sql")


class SqliteSupervision:
    if TYPE_CHECKING:
        _clock: Callable[[], float]

        async def _call(self, fn: Callable[..., T], *args: Any) -> T: ...

        def _write(self) -> contextlib.AbstractContextManager[sqlite3.Connection]: ...

        @staticmethod
        def _select_run(conn: sqlite3.Connection, run_id: int) -> Run: ...

    async def heartbeat_run(self, run_id: int) -> None:
        await self._call(self._heartbeat_run, run_id)

    def _heartbeat_run(self, run_id: int) -> None:
        with self._write() as conn:
            conn.execute(_Q["heartbeat_run"], {"run_id": run_id, "now": self._clock()})

    async def start_queued_run(self, run_id: int, *, supervisor_id: str) -> Run | None:
        return await self._call(self._start_queued_run, run_id, supervisor_id)

    def _start_queued_run(self, run_id: int, supervisor_id: str) -> Run | None:
        params = {"run_id": run_id, "supervisor_id": supervisor_id, "now": self._clock()}
        with self._write() as conn:
            if conn.execute(_Q["start_queued_run"], params).rowcount != 1:
                return None
            return self._select_run(conn, run_id)

    async def recover_stale_runs(self, *, stale_after: float, max_crash_retries: int) -> list[Run]:
        return await self._call(self._recover_stale_runs, stale_after, max_crash_retries)

    def _recover_stale_runs(self, stale_after: float, max_crash_retries: int) -> list[Run]:
        now = self._clock()
        recovered = []
        with self._write() as conn:
            stale = conn.execute(
                _Q["select_stale_running"], {"stale_before": now - stale_after}
            ).fetchall()
            for row in stale:
                query, extra = recovery_step(
                    row, stale_after=stale_after, max_crash_retries=max_crash_retries
                )
                conn.execute(_Q[query], {"run_id": row["id"], "now": now, **extra})
                recovered.append(self._select_run(conn, row["id"]))
        return recovered

    async def find_inactive_runs(self, *, idle_seconds: float) -> list[Run]:
        def find() -> list[Run]:
            with self._write() as conn:
                rows = conn.execute(
                    _Q["select_inactive_runs"], {"idle_before": self._clock() - idle_seconds}
                ).fetchall()
            return [run_from_row(row) for row in rows]

        return await self._call(find)

    async def release_claims_where(
        self, *, expired_only: bool, worker_id: str | None, dry_run: bool
    ) -> list[Claim]:
        return await self._call(self._release_claims_where, expired_only, worker_id, dry_run)

    def _release_claims_where(
        self, expired_only: bool, worker_id: str | None, dry_run: bool
    ) -> list[Claim]:

        now = self._clock()
        params = {"expired_only": expired_only, "worker_id": worker_id, "now": now}
        with self._write() as conn:
            claims = [
                claim_from_row(r) for r in conn.execute(_Q["select_claims_to_release"], params)
            ]
            if not dry_run:
                for claim in claims:
                    conn.execute(
                        _Q["delete_claim"],
                        {"run_id": claim.run_id, "host": claim.host,
                         "worker_id": claim.worker_id, "expires_at": claim.expires_at},
                    )  # fmt: skip
        return claims
