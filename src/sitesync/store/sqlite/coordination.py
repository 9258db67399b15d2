"""Workers, host claims, politeness state and per-host counters on SQLite.

SQL in ``coordination.sql``; the fair share and the claim decisions in
:mod:`sitesync.store.rules`.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Sequence
from typing import Any

from sitesync.models import ClaimGrant, HostStatus, WorkerInfo
from sitesync.store._plain import PlainCoordination
from sitesync.store._rows import (
    claim_from_row,
)
from sitesync.store.rules import claim_step, fair_share, gone_worker_params
from sitesync.store.sqlite._db import Q, SqliteDb


class SqliteCoordination(PlainCoordination[SqliteDb]):
    """What takes more than one query: claims, gone workers, counters, dead hosts."""

    # -- workers --------------------------------------------------------------------------

    async def release_gone_worker(self, run_id: int, worker: WorkerInfo) -> int:
        def work(conn: sqlite3.Connection) -> int:
            params = {**gone_worker_params(worker), "run_id": run_id, "now": self._db.clock()}
            if conn.execute(Q["stop_gone_worker"], params).rowcount != 1:
                return 0
            conn.execute(Q["end_worker_claims"], params)
            return int(conn.execute(Q["end_worker_leases"], params).rowcount)

        return await self._db.transaction(work)

    # -- claims ---------------------------------------------------------------------------

    async def claim_hosts(
        self,
        run_id: int,
        *,
        worker_id: str,
        claim_seconds: float,
        worker_ttl: float,
        max_hosts: int | None = None,
        busy_hosts: Sequence[str] = (),
        min_workers: int = 1,
    ) -> ClaimGrant:
        def work(conn: sqlite3.Connection) -> ClaimGrant:
            now = self._db.clock()
            mine = {
                "run_id": run_id,
                "worker_id": worker_id,
                "now": now,
                "busy": json.dumps(list(busy_hosts)),
            }
            conn.execute(Q["heartbeat_worker"], mine)
            conn.execute(Q["renew_claims"], {**mine, "expires_at": now + claim_seconds})
            conn.execute(Q["drop_finished_claims"], mine)
            alive = {"run_id": run_id, "alive_after": now - worker_ttl}
            live = conn.execute(Q["count_live_workers"], alive).fetchone()[0]
            hosts = conn.execute(Q["count_hosts_with_work"], mine).fetchone()[0]
            share = fair_share(hosts, max(live, min_workers), max_hosts)
            held = len(conn.execute(Q["select_my_claims"], mine).fetchall())
            if step := claim_step(held, share):
                query, extra = step
                conn.execute(Q[query], {**mine, **extra, "expires_at": now + claim_seconds})
            rows = conn.execute(Q["select_my_claims"], mine).fetchall()
            return ClaimGrant(claims=tuple(claim_from_row(row) for row in rows), share=share)

        return await self._db.transaction(work)

    # -- per-host counters ----------------------------------------------------------------

    async def flush_host_stats(self, run_id: int, *, final: bool = False) -> int:
        def work(conn: sqlite3.Connection) -> int:
            now = self._db.clock()
            counted = 0
            for row in conn.execute(Q["count_uncounted"], {"run_id": run_id}).fetchall():
                params = {"run_id": run_id, "host": row["host"], "now": now,
                          "pages": row["pages"], "errors": row["errors"]}  # fmt: skip
                conn.execute(Q["add_host_counts"], params)
                conn.execute(Q["touch_domain"], params)
                counted += row["pages"] + row["errors"]
            conn.execute(Q["add_outcome_counts"], {"run_id": run_id})
            conn.execute(Q["mark_counted"], {"run_id": run_id})
            if final:
                conn.execute(Q["mark_exhausted"], {"run_id": run_id, "now": now})
            return counted

        return await self._db.transaction(work)

    # -- dead hosts -----------------------------------------------------------------------

    async def end_host(self, run_id: int, host: str, *, status: HostStatus, reason: str) -> int:
        def work(conn: sqlite3.Connection) -> int:
            now = self._db.clock()
            params = {"run_id": run_id, "host": host, "status": status.value,
                      "outcome": status.value, "reason": reason, "now": now}  # fmt: skip
            ended: int = conn.execute(Q["end_host_tasks"], params).rowcount
            if ended:
                conn.execute(Q["move_ended_counters"], {**params, "ended": ended})
            conn.execute(Q["mark_host_ended"], params)
            return ended

        return await self._db.transaction(work)


def end_tasks_of_ended_hosts(
    conn: sqlite3.Connection, run_id: int, hosts: Sequence[str], now: float
) -> int:
    """Inside an admission: tasks of hosts whose tasks were ended in the run end at once,
    the same way (a dead host is not revived by a link). Returns how many; the caller
    moves the counters."""
    params: dict[str, Any] = {"run_id": run_id, "hosts": json.dumps(sorted(set(hosts)))}
    ended = 0
    for row in conn.execute(Q["select_ended_hosts"], params).fetchall():
        update = {"run_id": run_id, "host": row["host"], "outcome": row["ended_as"],
                  "reason": row["ended_reason"], "now": now}  # fmt: skip
        ended += conn.execute(Q["end_host_tasks"], update).rowcount
    return ended
