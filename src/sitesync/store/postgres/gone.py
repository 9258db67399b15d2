"""Pages that disappear, on PostgreSQL (the GoneStore part of the store). SQL in
``gone.sql``; the decisions in :mod:`sitesync.store._gone`. The run's row lock queues two
workers seeing the same end: the second finds the pages already gone."""

from __future__ import annotations

from sitesync.errors import RunNotFound
from sitesync.store._gone import followed_hosts, previous_scan, tombstones
from sitesync.store.postgres._db import Conn, PostgresArea, Q, every, lock_run, one
from sitesync.store.postgres._rows import run_from_row


class PostgresGone(PostgresArea):
    async def mark_gone(self, run_id: int) -> int:
        async def work(conn: Conn) -> int:
            run = await lock_run(conn, run_id)
            if run is None:
                raise RunNotFound(f"no run with id {run_id}")
            params = {"run_id": run_id, "scope": run.scope}
            earlier = await every(conn, "select_earlier_completed_runs", params)
            previous = previous_scan(run, [run_from_row(r) for r in earlier])
            if previous is None:
                return 0
            params = {"run_id": run_id, "previous_run_id": previous.id}
            candidates = await every(conn, "select_gone_candidates", params)
            if not candidates:
                return 0
            ends = await every(conn, "select_task_ends", {"run_id": run_id})
            now = self._db.clock()
            marked = 0
            for gone in tombstones(run, previous.id, candidates, followed_hosts(ends)):
                values = gone.params(run_id, now)
                if await one(conn, "mark_record_gone", values) is None:
                    continue  # a newer version came first: the page is not gone
                await conn.execute(Q["insert_tombstone"], values)
                await conn.execute(Q["delete_last_fetch"], values)
                marked += 1
            return marked

        return await self._db.transaction(work)
