"""Tasks of runs on SQLite: admission with dedup, leasing, reports, release.

SQL in ``frontier.sql``; every decision (verdicts, counter moves, which candidates a batch
leases) in :mod:`sitesync.store.rules`, shared with the PostgreSQL store.
"""

from __future__ import annotations

import json
import secrets
import sqlite3
from collections.abc import Sequence

from sitesync.models import Lease, NewTask, ReportVerdict, TaskReport, TaskState
from sitesync.store import rules
from sitesync.store._plain import TaskReads
from sitesync.store._rows import attempt_rows, lease_from_row
from sitesync.store.sqlite._db import Q, SqliteDb
from sitesync.store.sqlite._rows import outcome_params, task_from_row, task_rows
from sitesync.store.sqlite.coordination import end_tasks_of_ended_hosts
from sitesync.store.sqlite.records import save_records
from sitesync.store.sqlite.revisits import save_revisits
from sitesync.store.sqlite.runs import select_run


class SqliteFrontier(TaskReads[SqliteDb]):
    _task = staticmethod(task_from_row)

    async def add_tasks(self, run_id: int, tasks: Sequence[NewTask]) -> int:
        if not tasks:
            return 0
        return await self._db.transaction(lambda conn: admit(conn, run_id, tasks, self._db.clock()))

    async def acquire(
        self,
        run_id: int,
        *,
        worker_id: str,
        limit: int,
        lease_seconds: float,
        exclude_hosts: Sequence[str] = (),
        claimed_only: bool = False,
        per_host: int | None = None,
    ) -> list[Lease]:
        token = secrets.randbits(62)

        def work(conn: sqlite3.Connection) -> list[Lease]:
            now = self._db.clock()
            expires_at = now + lease_seconds
            reclaimed = conn.execute(Q["reclaim_expired"], {"run_id": run_id, "now": now}).rowcount
            params = {
                "run_id": run_id, "worker_id": worker_id, "token": token,
                "expires_at": expires_at, "now": now,
                "scan": rules.candidate_scan(limit, per_host),
                "exclude_hosts": json.dumps(list(exclude_hosts)), "claimed_only": claimed_only,
            }  # fmt: skip
            candidates = conn.execute(Q["acquire_candidates"], params).fetchall()
            ids = rules.pick_per_host(candidates, limit, per_host)
            rows = conn.execute(Q["lease_tasks"], {**params, "ids": json.dumps(ids)}).fetchall()
            if delta := rules.leased_delta(run_id, now, len(rows), reclaimed):
                conn.execute(Q["move_counters"], delta)
            return [lease_from_row(row, run_id, token, expires_at) for row in rows]

        leases = await self._db.transaction(work)
        leases.sort(key=lambda lease: lease.task_id)
        return leases

    async def report(self, run_id: int, reports: Sequence[TaskReport]) -> list[ReportVerdict]:
        if not reports:
            return []

        def work(conn: sqlite3.Connection) -> list[ReportVerdict]:
            now = self._db.clock()
            tally = rules.ReportTally()
            max_retries = select_run(conn, run_id).config.max_retries
            with_records = []
            revisits = []  # completed reports that leave a fetch for the next scan
            for report in reports:
                state = _apply_report(conn, report, max_retries, now)
                if state is None:
                    tally.lost()
                else:
                    if tally.accept(report, state):
                        with_records.append(report)
                    if state is TaskState.COMPLETED and report.revisit is not None:
                        revisits.append(report)
            save_records(conn, run_id, with_records, now, self.max_stored_body_bytes)
            save_revisits(conn, run_id, revisits, now)
            if delta := tally.counter_params(run_id, now):
                conn.execute(Q["move_counters"], delta)
            _keep_attempts(conn, tally.accepted, self.max_attempts_kept, now)
            admit(conn, run_id, tally.discovered, now)
            return tally.verdicts

        return await self._db.transaction(work)

    async def renew_leases(self, run_id: int, *, worker_id: str, lease_seconds: float) -> int:
        def work(conn: sqlite3.Connection) -> int:
            now = self._db.clock()
            params = {"run_id": run_id, "worker_id": worker_id,
                      "expires_at": now + lease_seconds, "now": now}  # fmt: skip
            return conn.execute(Q["renew_leases"], params).rowcount

        return await self._db.transaction(work)

    async def release(
        self, run_id: int, leases: Sequence[Lease], *, not_before: float | None = None
    ) -> int:
        if not leases:
            return 0

        def work(conn: sqlite3.Connection) -> int:
            now = self._db.clock()
            released = 0
            for lease in leases:
                params = {"task_id": lease.task_id, "token": lease.token,
                          "not_before": not_before, "now": now}  # fmt: skip
                released += conn.execute(Q["release_leases"], params).rowcount
            return _count_released(conn, run_id, released, now)

        return await self._db.transaction(work)

    async def release_worker(self, run_id: int, *, worker_id: str) -> int:
        def work(conn: sqlite3.Connection) -> int:
            now = self._db.clock()
            params = {"run_id": run_id, "worker_id": worker_id, "now": now}
            released: int = conn.execute(Q["release_worker"], params).rowcount
            return _count_released(conn, run_id, released, now)

        return await self._db.transaction(work)

    async def next_eligible_at(self, run_id: int) -> float | None:
        [row] = await self._db.rows("next_eligible_at", {"run_id": run_id})
        return None if row[0] is None else float(row[0])


def admit(conn: sqlite3.Connection, run_id: int, tasks: Sequence[NewTask], now: float) -> int:
    """Insert new tasks in the caller's transaction; how many were admitted."""
    if not tasks:
        return 0
    room = rules.admission_room(select_run(conn, run_id))
    [(after,)] = conn.execute(Q["last_task_id"]).fetchall()
    # rowcount: the rows the batch's inserts took (a known URL is ignored), summed by
    # executemany over the batch; the hosts' counts follow from the rowid range taken.
    if room is None:
        admitted = conn.executemany(Q["insert_tasks"], task_rows(run_id, tasks, now)).rowcount
    else:
        # Duplicates do not count against max_pages, so insert in slices no larger
        # than the room left and re-measure after each.
        admitted, position = 0, 0
        while room > 0 and position < len(tasks):
            chunk = tasks[position : position + room]
            position += len(chunk)
            gained = conn.executemany(Q["insert_tasks"], task_rows(run_id, chunk, now)).rowcount
            admitted += gained
            room -= gained
    if admitted:
        conn.execute(Q["count_admitted_by_host"], {"after": after})
        conn.execute(Q["add_admitted"], {"run_id": run_id, "admitted": admitted, "now": now})
        ended = end_tasks_of_ended_hosts(conn, run_id, [t.host for t in tasks], now)
        if delta := rules.ended_delta(run_id, now, ended):
            conn.execute(Q["move_counters"], delta)
    return admitted


def _apply_report(
    conn: sqlite3.Connection, report: TaskReport, max_retries: int, now: float
) -> TaskState | None:
    """Apply one report under its lease; the task's new state, or None if fenced out."""
    query, params = rules.report_query(report, max_retries, now)
    params.update(outcome_params(report))
    if report.ok:
        cursor = conn.execute(Q[query], params)
        return TaskState.COMPLETED if cursor.rowcount == 1 else None
    row = conn.execute(Q[query], params).fetchone()
    return None if row is None else TaskState(row[0])


def _keep_attempts(
    conn: sqlite3.Connection, accepted: Sequence[TaskReport], keep: int, now: float
) -> None:
    """The batch's attempt history: one executemany, and a prune only for tasks past the
    bound."""
    if not accepted:
        return
    conn.executemany(Q["insert_attempts"], attempt_rows(accepted, now))
    for task_id, oldest_dropped in rules.prune_bounds(accepted, keep).items():
        conn.execute(Q["prune_attempts"], {"task_id": task_id, "oldest_dropped": oldest_dropped})


def _count_released(conn: sqlite3.Connection, run_id: int, released: int, now: float) -> int:
    if delta := rules.released_delta(run_id, now, released):
        conn.execute(Q["move_counters"], delta)
    return released
