"""Workers, host claims, politeness state and per-host counters on SQLite.

Mixed into :class:`~sitesync.store.sqlite.store.SqliteStore`: every method is one
transaction on the store's thread, with its SQL in ``coordination.sql``.
"""

from __future__ import annotations

import contextlib
import json
import sqlite3
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

from sitesync.models import Claim, ClaimGrant, HostState, HostStatus, RunHost, WorkerInfo
from sitesync.store._rows import (
    claim_from_row,
    host_state_from_row,
    run_host_from_row,
    worker_from_row,
)
from sitesync.store._sql import load_queries
from sitesync.store.rules import claim_step, fair_share, gone_worker_params

T = TypeVar("T")

_Q = load_queries("sitesync.store.sqlite", "coordination.sql")


class SqliteCoordination:
    if TYPE_CHECKING:
        _clock: Callable[[], float]

        async def _call(self, fn: Callable[..., T], *args: Any) -> T: ...

        def _write(self) -> contextlib.AbstractContextManager[sqlite3.Connection]: ...

        def _errors(self) -> contextlib.AbstractContextManager[None]: ...

        def _connection(self) -> sqlite3.Connection: ...

    def _read(self, query: str, params: dict[str, Any]) -> list[sqlite3.Row]:
        with self._errors():
            return self._connection().execute(_Q[query], params).fetchall()

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
        await self._call(self._exec, "upsert_worker", params)

    async def release_gone_worker(self, run_id: int, worker: WorkerInfo) -> int:
        return await self._call(self._release_gone_worker, run_id, worker)

    def _release_gone_worker(self, run_id: int, worker: WorkerInfo) -> int:
        params = {**gone_worker_params(worker), "run_id": run_id, "now": self._clock()}
        with self._write() as conn:
            if conn.execute(_Q["stop_gone_worker"], params).rowcount != 1:
                return 0
            conn.execute(_Q["end_worker_claims"], params)
            return conn.execute(_Q["end_worker_leases"], params).rowcount

    async def stop_worker(self, worker_id: str) -> None:
        await self._call(self._exec, "stop_worker", {"worker_id": worker_id})

    async def list_workers(self, run_id: int) -> list[WorkerInfo]:
        rows = await self._call(self._read, "select_workers", {"run_id": run_id})
        return [worker_from_row(row) for row in rows]

    def _exec(self, query: str, params: dict[str, Any]) -> int:
        with self._write() as conn:
            return conn.execute(_Q[query], {**params, "now": self._clock()}).rowcount

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
        return await self._call(
            self._claim_hosts, run_id, worker_id, claim_seconds, worker_ttl, max_hosts
        )

    def _claim_hosts(
        self,
        run_id: int,
        worker_id: str,
        claim_seconds: float,
        worker_ttl: float,
        max_hosts: int | None,
    ) -> ClaimGrant:
        now = self._clock()
        mine = {"run_id": run_id, "worker_id": worker_id, "now": now}
        with self._write() as conn:
            conn.execute(_Q["heartbeat_worker"], mine)
            conn.execute(_Q["renew_claims"], {**mine, "expires_at": now + claim_seconds})
            conn.execute(_Q["drop_finished_claims"], mine)
            live = conn.execute(
                _Q["count_live_workers"], {"run_id": run_id, "alive_after": now - worker_ttl}
            ).fetchone()[0]
            hosts = conn.execute(_Q["count_hosts_with_work"], {"run_id": run_id}).fetchone()[0]
            share = fair_share(hosts, live, max_hosts)
            held = len(conn.execute(_Q["select_my_claims"], mine).fetchall())
            step = claim_step(held, share)
            if step is not None:
                query, extra = step
                conn.execute(_Q[query], {**mine, **extra, "expires_at": now + claim_seconds})
            rows = conn.execute(_Q["select_my_claims"], mine).fetchall()
        return ClaimGrant(claims=tuple(claim_from_row(row) for row in rows), share=share)

    async def release_claims(self, run_id: int, *, worker_id: str) -> int:
        params = {"run_id": run_id, "worker_id": worker_id}
        return await self._call(self._exec, "release_claims", params)

    async def list_claims(self, run_id: int) -> list[Claim]:
        rows = await self._call(self._read, "select_claims", {"run_id": run_id})
        return [claim_from_row(row) for row in rows]

    # -- host politeness state ------------------------------------------------------------

    async def get_host_state(self, host: str) -> HostState | None:
        rows = await self._call(self._read, "select_host_state", {"host": host})
        return host_state_from_row(rows[0]) if rows else None

    async def save_host_pause(self, host: str, *, until: float) -> None:
        await self._call(self._exec, "save_host_pause", {"host": host, "until": until})

    async def save_host_pace(
        self, host: str, *, delay: float, concurrency: int, reason: str, since: float
    ) -> None:
        params = {
            "host": host, "delay": delay, "concurrency": concurrency, "reason": reason,
            "since": since,
        }  # fmt: skip
        await self._call(self._exec, "save_host_pace", params)

    async def save_host_robots(
        self, host: str, *, origin: str, status: int, body: str | None, expires_at: float
    ) -> None:
        params = {
            "host": host, "origin": origin, "status": status, "body": body,
            "expires_at": expires_at,
        }  # fmt: skip
        await self._call(self._exec, "save_host_robots", params)

    # -- per-host counters ----------------------------------------------------------------

    async def flush_host_stats(self, run_id: int, *, final: bool = False) -> int:
        return await self._call(self._flush_host_stats, run_id, final)

    def _flush_host_stats(self, run_id: int, final: bool) -> int:
        now = self._clock()
        with self._write() as conn:
            counted = 0
            for row in conn.execute(_Q["count_uncounted"], {"run_id": run_id}).fetchall():
                params = {"run_id": run_id, "host": row["host"], "now": now,
                          "pages": row["pages"], "errors": row["errors"]}  # fmt: skip
                conn.execute(_Q["add_host_counts"], params)
                conn.execute(_Q["touch_domain"], params)
                counted += row["pages"] + row["errors"]
            conn.execute(_Q["mark_counted"], {"run_id": run_id})
            if final:
                conn.execute(_Q["mark_exhausted"], {"run_id": run_id, "now": now})
        return counted

    async def set_host_status(self, run_id: int, host: str, status: HostStatus) -> None:
        params = {"run_id": run_id, "host": host, "status": status.value}
        await self._call(self._exec, "set_host_status", params)

    async def list_run_hosts(self, run_id: int) -> list[RunHost]:
        rows = await self._call(self._read, "select_run_hosts", {"run_id": run_id})
        return [run_host_from_row(row) for row in rows]

    async def get_run_host(self, run_id: int, host: str) -> RunHost | None:
        rows = await self._call(self._read, "select_run_host", {"run_id": run_id, "host": host})
        return run_host_from_row(rows[0]) if rows else None

    # -- dead hosts -----------------------------------------------------------------------

    async def save_host_failures(self, run_id: int, host: str, *, failures: int) -> None:
        params = {"run_id": run_id, "host": host, "failures": failures}
        await self._call(self._exec, "save_host_failures", params)

    async def end_host(self, run_id: int, host: str, *, status: HostStatus, reason: str) -> int:
        return await self._call(self._end_host, run_id, host, status, reason)

    def _end_host(self, run_id: int, host: str, status: HostStatus, reason: str) -> int:
        now = self._clock()
        params = {"run_id": run_id, "host": host, "status": status.value,
                  "outcome": status.value, "reason": reason, "now": now}  # fmt: skip
        with self._write() as conn:
            ended: int = conn.execute(_Q["end_host_tasks"], params).rowcount
            if ended:
                conn.execute(_Q["move_ended_counters"], {**params, "ended": ended})
            conn.execute(_Q["mark_host_ended"], params)
        return ended


def end_tasks_of_ended_hosts(
    conn: sqlite3.Connection, run_id: int, hosts: Sequence[str], now: float
) -> int:
    """Inside an admission: tasks of hosts whose tasks were ended in the run end at once,
    the same way (a dead host is not revived by a link). Returns how many; the caller
    moves the counters."""
    params: dict[str, Any] = {"run_id": run_id, "hosts": json.dumps(sorted(set(hosts)))}
    ended = 0
    for row in conn.execute(_Q["select_ended_hosts"], params).fetchall():
        update = {"run_id": run_id, "host": row["host"], "outcome": row["ended_as"],
                  "reason": row["ended_reason"], "now": now}  # fmt: skip
        ended += conn.execute(_Q["end_host_tasks"], update).rowcount
    return ended
