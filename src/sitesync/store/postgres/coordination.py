"""Workers, host claims, politeness state and per-host counters on PostgreSQL.

Mixed into :class:`~sitesync.store.postgres.store.PostgresStore`. Transactions that touch a
run take its row lock first, like every other write of the store (one lock order), which
also makes each run's claim decisions one at a time.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

from psycopg.rows import DictRow

from sitesync.models import Claim, ClaimGrant, HostState, HostStatus, Run, RunHost, WorkerInfo
from sitesync.store._rows import (
    claim_from_row,
    host_state_from_row,
    run_host_from_row,
    worker_from_row,
)
from sitesync.store._sql import load_queries
from sitesync.store.postgres._db import Conn
from sitesync.store.rules import claim_step, fair_share, gone_worker_params

T = TypeVar("T")

_Q = load_queries("sitesync.store.postgres", "coordination.sql")


class PostgresCoordination:
    if TYPE_CHECKING:
        _clock: Callable[[], float]

        async def _transaction(self, work: Callable[[Conn], Awaitable[T]]) -> T: ...

        @staticmethod
        async def _lock_run(conn: Conn, run_id: int) -> Run | None: ...

    async def _exec(self, query: str, params: dict[str, Any], *, run_id: int | None = None) -> int:
        async def work(conn: Conn) -> int:
            if run_id is not None:
                await self._lock_run(conn, run_id)
            cursor = await conn.execute(_Q[query], {**params, "now": self._clock()})
            return cursor.rowcount

        return await self._transaction(work)

    async def _select(self, query: str, params: dict[str, Any]) -> list[DictRow]:
        async def work(conn: Conn) -> list[DictRow]:
            return await (await conn.execute(_Q[query], params)).fetchall()

        return await self._transaction(work)

    # -- workers --------------------------------------------------------------------------

    async def register_worker(
        self,
        run_id: int,
        *,
        worker_id: str,
        host: str,
        pid: int,
        boot_id: str | None = None,
        proc_start: int | None = None,
    ) -> None:
        params = {"worker_id": worker_id, "host": host, "pid": pid, "run_id": run_id,
                  "boot_id": boot_id, "proc_start": proc_start}  # fmt: skip
        await self._exec("upsert_worker", params)

    async def release_gone_worker(self, run_id: int, worker: WorkerInfo) -> int:
        async def work(conn: Conn) -> int:
            if await self._lock_run(conn, run_id) is None:
                return 0
            params = {**gone_worker_params(worker), "run_id": run_id, "now": self._clock()}
            if (await conn.execute(_Q["stop_gone_worker"], params)).rowcount != 1:
                return 0
            await conn.execute(_Q["end_worker_claims"], params)
            return (await conn.execute(_Q["end_worker_leases"], params)).rowcount

        return await self._transaction(work)

    async def stop_worker(self, worker_id: str) -> None:
        await self._exec("stop_worker", {"worker_id": worker_id})

    async def list_workers(self, run_id: int) -> list[WorkerInfo]:
        rows = await self._select("select_workers", {"run_id": run_id})
        return [worker_from_row(row) for row in rows]

    # -- claims ---------------------------------------------------------------------------

    async def claim_hosts(
        self,
        run_id: int,
        *,
        worker_id: str,
        claim_seconds: float,
        worker_ttl: float,
        max_hosts: int | None = None,
    ) -> ClaimGrant:
        async def work(conn: Conn) -> ClaimGrant:
            if await self._lock_run(conn, run_id) is None:
                return ClaimGrant(claims=(), share=0)
            now = self._clock()
            mine = {"run_id": run_id, "worker_id": worker_id, "now": now}

            async def one(query: str, params: dict[str, Any]) -> Any:
                row = await (await conn.execute(_Q[query], params)).fetchone()
                assert row is not None
                return row["n"]

            await conn.execute(_Q["heartbeat_worker"], mine)
            await conn.execute(_Q["renew_claims"], {**mine, "expires_at": now + claim_seconds})
            await conn.execute(_Q["drop_finished_claims"], mine)
            live = await one(
                "count_live_workers", {"run_id": run_id, "alive_after": now - worker_ttl}
            )
            hosts = await one("count_hosts_with_work", {"run_id": run_id})
            share = fair_share(hosts, live, max_hosts)
            held = len(await (await conn.execute(_Q["select_my_claims"], mine)).fetchall())
            step = claim_step(held, share)
            if step is not None:
                query, extra = step
                params = {**mine, **extra, "expires_at": now + claim_seconds}
                await conn.execute(_Q[query], params)
            rows = await (await conn.execute(_Q["select_my_claims"], mine)).fetchall()
            return ClaimGrant(claims=tuple(claim_from_row(row) for row in rows), share=share)

        return await self._transaction(work)

    async def release_claims(self, run_id: int, *, worker_id: str) -> int:
        params = {"run_id": run_id, "worker_id": worker_id}
        return await self._exec("release_claims", params, run_id=run_id)

    async def list_claims(self, run_id: int) -> list[Claim]:
        return [
            claim_from_row(row) for row in await self._select("select_claims", {"run_id": run_id})
        ]

    # -- host politeness state ------------------------------------------------------------

    async def get_host_state(self, host: str) -> HostState | None:
        rows = await self._select("select_host_state", {"host": host})
        return host_state_from_row(rows[0]) if rows else None

    async def save_host_pause(self, host: str, *, until: float) -> None:
        await self._exec("save_host_pause", {"host": host, "until": until})

    async def save_host_pace(
        self, host: str, *, delay: float, concurrency: int, reason: str, since: float
    ) -> None:
        params = {
            "host": host, "delay": delay, "concurrency": concurrency, "reason": reason,
            "since": since,
        }  # fmt: skip
        await self._exec("save_host_pace", params)

    async def save_host_robots(
        self, host: str, *, origin: str, status: int, body: str | None, expires_at: float
    ) -> None:
        params = {
            "host": host, "origin": origin, "status": status, "body": body,
            "expires_at": expires_at,
        }  # fmt: skip
        await self._exec("save_host_robots", params)

    # -- per-host counters ----------------------------------------------------------------

    async def flush_host_stats(self, run_id: int, *, final: bool = False) -> int:
        async def work(conn: Conn) -> int:
            if await self._lock_run(conn, run_id) is None:
                return 0
            now = self._clock()
            rows = await (await conn.execute(_Q["count_uncounted"], {"run_id": run_id})).fetchall()
            counted = 0
            for row in rows:
                params = {"run_id": run_id, "host": row["host"], "now": now,
                          "pages": row["pages"], "errors": row["errors"]}  # fmt: skip
                await conn.execute(_Q["add_host_counts"], params)
                await conn.execute(_Q["touch_domain"], params)
                counted += row["pages"] + row["errors"]
            await conn.execute(_Q["mark_counted"], {"run_id": run_id})
            if final:
                await conn.execute(_Q["mark_exhausted"], {"run_id": run_id, "now": now})
            return counted

        return await self._transaction(work)

    async def set_host_status(self, run_id: int, host: str, status: HostStatus) -> None:
        params = {"run_id": run_id, "host": host, "status": status.value}
        await self._exec("set_host_status", params, run_id=run_id)

    async def list_run_hosts(self, run_id: int) -> list[RunHost]:
        rows = await self._select("select_run_hosts", {"run_id": run_id})
        return [run_host_from_row(row) for row in rows]

    async def get_run_host(self, run_id: int, host: str) -> RunHost | None:
        rows = await self._select("select_run_host", {"run_id": run_id, "host": host})
        return run_host_from_row(rows[0]) if rows else None

    # -- dead hosts -----------------------------------------------------------------------

    async def save_host_failures(self, run_id: int, host: str, *, failures: int) -> None:
        params = {"run_id": run_id, "host": host, "failures": failures}
        await self._exec("save_host_failures", params, run_id=run_id)

    async def end_host(self, run_id: int, host: str, *, status: HostStatus, reason: str) -> int:
        async def work(conn: Conn) -> int:
            if await self._lock_run(conn, run_id) is None:
                return 0
            params = {"run_id": run_id, "host": host, "status": status.value,
                      "outcome": status.value, "reason": reason, "now": self._clock()}  # fmt: skip
            ended = (await conn.execute(_Q["end_host_tasks"], params)).rowcount
            if ended:
                await conn.execute(_Q["move_ended_counters"], {**params, "ended": ended})
            await conn.execute(_Q["mark_host_ended"], params)
            return ended

        return await self._transaction(work)


async def end_tasks_of_ended_hosts(
    conn: Conn, run_id: int, hosts: Sequence[str], now: float
) -> int:
    """Inside an admission (run row locked): tasks of hosts whose tasks were ended in the
    run end at once, the same way (a dead host is not revived by a link). Returns how
    many; the caller moves the counters."""
    params: dict[str, Any] = {"run_id": run_id, "hosts": sorted(set(hosts))}
    rows = await (await conn.execute(_Q["select_ended_hosts"], params)).fetchall()
    ended = 0
    for row in rows:
        update = {"run_id": run_id, "host": row["host"], "outcome": row["ended_as"],
                  "reason": row["ended_reason"], "now": now}  # fmt: skip
        ended += (await conn.execute(_Q["end_host_tasks"], update)).rowcount
    return ended
