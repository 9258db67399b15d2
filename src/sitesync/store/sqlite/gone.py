"""Pages that disappear, on SQLite (the GoneStore part of the store). SQL in ``gone.sql``;
the decisions in :mod:`sitesync.store._gone`."""

from __future__ import annotations

import sqlite3

from sitesync.errors import RunNotFound
from sitesync.store._gone import followed_hosts, previous_scan, tombstones
from sitesync.store.sqlite._db import Q, SqliteArea
from sitesync.store.sqlite._rows import run_from_row


class SqliteGone(SqliteArea):
    async def mark_gone(self, run_id: int) -> int:
        def work(conn: sqlite3.Connection) -> int:
            row = conn.execute(Q["select_run"], {"run_id": run_id}).fetchone()
            if row is None:
                raise RunNotFound(f"no run with id {run_id}")
            run = run_from_row(row)
            earlier = conn.execute(
                Q["select_earlier_completed_runs"], {"run_id": run_id, "scope": run.scope}
            )
            previous = previous_scan(run, [run_from_row(r) for r in earlier])
            if previous is None:
                return 0
            params = {"run_id": run_id, "previous_run_id": previous.id}
            candidates = conn.execute(Q["select_gone_candidates"], params).fetchall()
            if not candidates:
                return 0
            ends = conn.execute(Q["select_task_ends"], {"run_id": run_id})
            now = self._db.clock()
            marked = 0
            for gone in tombstones(run, previous.id, candidates, followed_hosts(ends)):
                values = gone.params(run_id, now)
                if conn.execute(Q["mark_record_gone"], values).fetchone() is None:
                    continue  # a newer version came first: the page is not gone
                conn.execute(Q["insert_tombstone"], values)
                conn.execute(Q["delete_last_fetch"], values)
                marked += 1
            return marked

        return await self._db.transaction(work)
