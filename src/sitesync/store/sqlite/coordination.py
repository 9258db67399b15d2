"""Workers, host claims, politeness state and per-host counters on SQLite.

SQL in ``coordination.sql``; the fair share and the claim decisions in
:mod:`sitesync.store.rules`; claims and gone workers, the same statements on both backends,
are written once in :mod:`sitesync.store._scripts`.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Sequence
from typing import Any

from sitesync.models import HostStatus
from sitesync.store._scripts import ScriptedCoordination
from sitesync.store.rules import ended_delta
from sitesync.store.sqlite._db import Q, SqliteDb


class SqliteCoordination(ScriptedCoordination[SqliteDb]):
    """What takes more than one query and is this backend's own: counters, dead hosts
    (claims and gone workers are written once for both, in :mod:`sitesync.store._scripts`)."""

    # -- per-host counters ----------------------------------------------------------------

    async def flush_host_stats(self, run_id: int, *, final: bool = False) -> int:
        def work(conn: sqlite3.Connection) -> int:
            now = self._db.clock()
            counted = 0
            for row in conn.execute(Q["count_uncounted"], {"run_id": run_id}).fetchall():
                params = {"run_id": run_id, "host": row["host"], "now": now,
                          "pages": row["pages"], "errors": row["errors"]}  # fmt: skip
                conn.execute(Q["add_host_counts"], params)
                conn.execute(Q["touch_domains"], params)
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
            if delta := ended_delta(run_id, now, ended):
                conn.execute(Q["move_counters"], delta)
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
