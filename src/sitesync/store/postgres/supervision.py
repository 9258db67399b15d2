"""Run heartbeats, the watchdog and operator clean-up tools on PostgreSQL (a store mixin)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, TypeVar

from sitesync.models import Claim, Run
from sitesync.store._rows import claim_from_row
from sitesync.store._sql import load_queries
from sitesync.store.postgres._db import Conn
from sitesync.store.postgres._rows import run_from_row
from sitesync.store.rules import recovery_step

T = TypeVar("T")

_Q = load_queries("sitesync.store.postgres", "supervision.sql")


class PostgresSupervision:
    if TYPE_CHECKING:
        _clock: Callable[[], float]

        async def _transaction(self, work: Callable[[Conn], Awaitable[T]]) -> T: ...

        @staticmethod
        async def _lock_run(conn: Conn, run_id: int) -> Run | None: ...

    async def heartbeat_run(self, run_id: int) -> None:
        async def work(conn: Conn) -> None:
            await conn.execute(_Q["heartbeat_run"], {"run_id": run_id, "now": self._clock()})

        await self._transaction(work)

    async def start_queued_run(self, run_id: int, *, supervisor_id: str) -> Run | None:
        async def work(conn: Conn) -> Run | None:
            if await self._lock_run(conn, run_id) is None:
                return None
            params = {"run_id": run_id, "supervisor_id": supervisor_id, "now": self._clock()}
            if (await conn.execute(_Q["start_queued_run"], params)).rowcount != 1:
                return None
            return await self._lock_run(conn, run_id)

        return await self._transaction(work)

    async def recover_stale_runs(self, *, stale_after: float, max_crash_retries: int) -> list[Run]:
        async def work(conn: Conn) -> list[Run]:
            now = self._clock()
            params = {"stale_before": now - stale_after}
            stale = await (await conn.execute(_Q["select_stale_running"], params)).fetchall()
            recovered = []
            for row in stale:
                if await self._lock_run(conn, row["id"]) is None:
                    continue
                query, extra = recovery_step(
                    row, stale_after=stale_after, max_crash_retries=max_crash_retries
                )
                await conn.execute(_Q[query], {"run_id": row["id"], "now": now, **extra})
                run = await self._lock_run(conn, row["id"])
                assert run is not None
                recovered.append(run)
            return recovered

        return await self._transaction(work)

    async def find_inactive_runs(self, *, idle_seconds: float) -> list[Run]:
        async def work(conn: Conn) -> list[Run]:
            params = {"idle_before": self._clock() - idle_seconds}
            rows = await (await conn.execute(_Q["select_inactive_runs"], params)).fetchall()
            return [run_from_row(row) for row in rows]

        return await self._transaction(work)

    async def release_claims_where(
        self, *, expired_only: bool, worker_id: str | None, dry_run: bool
    ) -> list[Claim]:
        async def work(conn: Conn) -> list[Claim]:
            params = {"expired_only": expired_only, "worker_id": worker_id, "now": self._clock()}
            rows = await (await conn.execute(_Q["select_claims_to_release"], params)).fetchall()
            claims = [claim_from_row(row) for row in rows]
            if not dry_run:
                for claim in claims:
                    await conn.execute(
                        _Q["delete_claim"],
                        {"run_id": claim.run_id, "host": claim.host,
                         "worker_id": claim.worker_id, "expires_at": claim.expires_at},
                    )  # fmt: skip
            return claims

        return await self._transaction(work)
