"""Workers, host claims, politeness state and per-host counters on PostgreSQL.

SQL in ``coordination.sql``; the fair share and the claim decisions in
:mod:`sitesync.store.rules`; claims and gone workers, the same statements on both backends,
are written once in :mod:`sitesync.store._scripts`. A run's claim decisions take its row
lock, so they are made one at a time; "hosts with work" is read from the run's host rows
(``run_host_counts``), so a claim refresh costs what the hosts cost, not what the frontier
holds.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sitesync.models import HostStatus
from sitesync.store._scripts import ScriptedCoordination
from sitesync.store.postgres._db import Conn, PostgresDb, Q, every, hold_run
from sitesync.store.rules import HostMoves


class PostgresCoordination(ScriptedCoordination[PostgresDb]):
    """What takes more than one query and is this backend's own: counters, dead hosts
    (claims and gone workers are written once for both, in :mod:`sitesync.store._scripts`)."""

    # -- per-host counters ----------------------------------------------------------------

    async def flush_host_stats(self, run_id: int, *, final: bool = False) -> int:
        async def work(conn: Conn) -> int:
            if not await hold_run(conn, run_id):
                return 0
            now = self._db.clock()
            rows = await every(conn, "count_uncounted", {"run_id": run_id})
            if rows:
                params = {"run_id": run_id, "now": now, "hosts": [row["host"] for row in rows],
                          "pages": [row["pages"] for row in rows],
                          "errors": [row["errors"] for row in rows]}  # fmt: skip
                await conn.execute(Q["add_host_counts"], params)
                await conn.execute(Q["touch_domains"], params)
            counted: int = sum(row["pages"] + row["errors"] for row in rows)
            if final:
                await conn.execute(Q["mark_exhausted"], {"run_id": run_id, "now": now})
            return counted

        return await self._db.transaction(work)

    # -- dead hosts -----------------------------------------------------------------------

    async def end_host(self, run_id: int, host: str, *, status: HostStatus, reason: str) -> int:
        async def work(conn: Conn) -> int:
            now = self._db.clock()
            params = {"run_id": run_id, "host": host, "status": status.value,
                      "outcome": status.value, "reason": reason, "now": now}  # fmt: skip
            # The host's counter row first: an admission of its tasks holds it until it
            # commits (then end_host_tasks, a later statement, sees them), or comes after
            # and finds the host ended (see end_tasks_of_ended_hosts).
            if (await conn.execute(Q["lock_host_counts"], params)).rowcount != 1:
                return 0  # no such run
            await conn.execute(Q["mark_host_ended"], params)
            ended = (await conn.execute(Q["end_host_tasks"], params)).rowcount
            if ended:
                moves = HostMoves()
                moves.add(host, pending=-ended, failed=ended)
                await conn.execute(Q["move_counters"], moves.take(run_id, now))
            return ended

        return await self._db.transaction(work)


async def end_tasks_of_ended_hosts(
    conn: Conn, run_id: int, hosts: Sequence[str], now: float, moves: HostMoves
) -> None:
    """Inside an admission, once it holds the host rows it moved: tasks of hosts whose tasks
    were ended in the run end at once, the same way (a dead host is not revived by a link);
    their counter moves go to ``moves``, which the caller writes.

    ``end_host`` locks the host's row before it ends the host's pending tasks, so either it
    committed before this admission took the row (this read, a later statement, sees the
    host ended), or it waits for this admission to commit (and its own UPDATE then sees
    the admitted tasks): no task of a dead host is left pending either way."""
    params: dict[str, Any] = {"run_id": run_id, "hosts": sorted(set(hosts))}
    rows = await every(conn, "select_ended_hosts", params)
    for row in rows:
        update = {"run_id": run_id, "host": row["host"], "outcome": row["ended_as"],
                  "reason": row["ended_reason"], "now": now}  # fmt: skip
        if ended := (await conn.execute(Q["end_host_tasks"], update)).rowcount:
            moves.add(row["host"], pending=-ended, failed=ended)
