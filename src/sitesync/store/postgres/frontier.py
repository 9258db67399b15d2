"""Tasks of runs on PostgreSQL: admission with dedup, leasing, reports, release.

Every write locks the run's row first (one lock order); ``acquire`` still passes over
locked task rows (``FOR UPDATE SKIP LOCKED``) rather than wait for them. SQL in
``frontier.sql``; every decision (verdicts, counter moves, which candidates a batch leases)
in :mod:`sitesync.store.rules`, shared with the SQLite store.
"""

from __future__ import annotations

import secrets
from collections.abc import Sequence
from typing import Any

from sitesync.models import Lease, NewTask, ReportVerdict, Run, TaskReport, TaskState
from sitesync.store import rules
from sitesync.store._plain import TaskReads
from sitesync.store._rows import attempt_rows, lease_from_row
from sitesync.store.postgres._db import Conn, PostgresDb, Q, every, lock_run, one, require_run
from sitesync.store.postgres._rows import outcome_params, task_from_row
from sitesync.store.postgres.coordination import end_tasks_of_ended_hosts
from sitesync.store.postgres.records import save_records


class PostgresFrontier(TaskReads[PostgresDb]):
    _task = staticmethod(task_from_row)

    async def add_tasks(self, run_id: int, tasks: Sequence[NewTask]) -> int:
        if not tasks:
            return 0

        async def work(conn: Conn) -> int:
            return await admit(conn, await require_run(conn, run_id), tasks, self._db.clock())

        return await self._db.transaction(work)

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
        # One token for every attempt: a replay after a lost commit acknowledgement finds
        # the tasks the first attempt leased instead of leasing more (which this worker
        # would renew for ever and never fetch).
        token, replay = secrets.randbits(62), False

        async def work(conn: Conn) -> list[Lease]:
            nonlocal replay
            if await lock_run(conn, run_id) is None:
                return []  # as in SQLite: nothing of an unknown run is eligible
            if replay and (done := await _leased_with(conn, run_id, token)):
                return done
            replay = True
            now = self._db.clock()
            params = {
                "run_id": run_id, "worker_id": worker_id, "token": token,
                "expires_at": now + lease_seconds, "now": now,
                "scan": rules.candidate_scan(limit, per_host),
                "exclude_hosts": list(exclude_hosts), "claimed_only": claimed_only,
            }  # fmt: skip
            return await _lease(conn, params, limit, per_host)

        leases = await self._db.transaction(work)
        leases.sort(key=lambda lease: lease.task_id)
        return leases

    async def report(self, run_id: int, reports: Sequence[TaskReport]) -> list[ReportVerdict]:
        if not reports:
            return []

        async def work(conn: Conn) -> list[ReportVerdict]:
            run = await require_run(conn, run_id)
            now = self._db.clock()
            tally = rules.ReportTally()
            for report in reports:
                state = await _apply_report(conn, report, run.config.max_retries, now)
                if state is None:
                    tally.lost()
                elif tally.accept(report, state):
                    await save_records(conn, run_id, report, now, self.max_stored_body_bytes)
            if delta := tally.counter_params(run_id, now):
                await conn.execute(Q["move_counters"], delta)
            await _keep_attempts(conn, tally.accepted, self.max_attempts_kept, now)
            # move_counters leaves tasks_total alone, so the locked row's value still holds
            await admit(conn, run, tally.discovered, now)
            return tally.verdicts

        return await self._db.transaction(work)

    async def renew_leases(self, run_id: int, *, worker_id: str, lease_seconds: float) -> int:
        async def work(conn: Conn) -> int:
            if await lock_run(conn, run_id) is None:
                return 0
            now = self._db.clock()
            params = {"run_id": run_id, "worker_id": worker_id,
                      "expires_at": now + lease_seconds, "now": now}  # fmt: skip
            return (await conn.execute(Q["renew_leases"], params)).rowcount

        return await self._db.transaction(work)

    async def release(
        self, run_id: int, leases: Sequence[Lease], *, not_before: float | None = None
    ) -> int:
        if not leases:
            return 0

        async def work(conn: Conn) -> int:
            if await lock_run(conn, run_id) is None:
                return 0
            now = self._db.clock()
            released = 0
            for lease in leases:
                params = {"task_id": lease.task_id, "token": lease.token,
                          "not_before": not_before, "now": now}  # fmt: skip
                released += (await conn.execute(Q["release_lease"], params)).rowcount
            return await _count_released(conn, run_id, released, now)

        return await self._db.transaction(work)

    async def release_worker(self, run_id: int, *, worker_id: str) -> int:
        async def work(conn: Conn) -> int:
            if await lock_run(conn, run_id) is None:
                return 0
            now = self._db.clock()
            params = {"run_id": run_id, "worker_id": worker_id, "now": now}
            released = (await conn.execute(Q["release_worker"], params)).rowcount
            return await _count_released(conn, run_id, released, now)

        return await self._db.transaction(work)

    async def next_eligible_at(self, run_id: int) -> float | None:
        [row] = await self._db.rows("next_eligible_at", {"run_id": run_id})
        return None if row["next_at"] is None else float(row["next_at"])


async def admit(conn: Conn, run: Run, tasks: Sequence[NewTask], now: float) -> int:
    """Insert new tasks under the locked run row; how many were admitted."""
    if not tasks:
        return 0
    room = rules.admission_room(run)
    if room is not None and room <= 0:
        return 0
    params = {
        "run_id": run.id,
        "urls": [task.url for task in tasks],
        "hosts": [task.host for task in tasks],
        "depths": [task.depth for task in tasks],
        "priorities": [task.priority for task in tasks],
        "found_from": [task.found_from for task in tasks],
        "room": room,
        "now": now,
    }
    row = await one(conn, "insert_tasks", params)
    admitted = 0 if row is None else int(row["admitted"])
    if admitted:
        params = {"run_id": run.id, "admitted": admitted, "now": now}
        await conn.execute(Q["add_admitted"], params)
        ended = await end_tasks_of_ended_hosts(conn, run.id, [t.host for t in tasks], now)
        if delta := rules.ended_delta(run.id, now, ended):
            await conn.execute(Q["move_counters"], delta)
    return admitted


async def _leased_with(conn: Conn, run_id: int, token: int) -> list[Lease]:
    """The leases an earlier attempt of this acquire committed (its token's tasks)."""
    rows = await every(conn, "select_leased_by_token", {"run_id": run_id, "token": token})
    return [lease_from_row(r, run_id, token, r["lease_expires_at"]) for r in rows]


async def _lease(
    conn: Conn, params: dict[str, Any], limit: int, per_host: int | None
) -> list[Lease]:
    """Expired leases back to pending, then lease the picked candidates, counters moved."""
    run_id, now = params["run_id"], params["now"]
    reclaimed = (await conn.execute(Q["reclaim_expired"], {"run_id": run_id, "now": now})).rowcount
    candidates = await every(conn, "acquire_candidates", params)
    ids = rules.pick_per_host(candidates, limit, per_host)
    rows = await every(conn, "lease_tasks", {**params, "ids": ids})
    if delta := rules.leased_delta(run_id, now, len(rows), reclaimed):
        await conn.execute(Q["move_counters"], delta)
    return [lease_from_row(row, run_id, params["token"], params["expires_at"]) for row in rows]


async def _keep_attempts(conn: Conn, accepted: Sequence[TaskReport], keep: int, now: float) -> None:
    """The batch's attempt history in one statement; a prune only for tasks past the bound."""
    if not accepted:
        return
    rows = attempt_rows(accepted, now)
    columns = {
        "task_ids": "task_id", "attempts": "attempt", "started_at": "started_at",
        "ended_at": "ended_at", "worker_ids": "worker_id", "outcomes": "outcome",
        "http_statuses": "http_status", "errors": "error", "bytes": "bytes",
        "redirect_hops": "redirect_hops",
    }  # fmt: skip
    await conn.execute(
        Q["insert_attempts"], {param: [row[col] for row in rows] for param, col in columns.items()}
    )
    bounds = rules.prune_bounds(accepted, keep)
    if bounds:
        params = {"task_ids": list(bounds), "oldest_dropped": list(bounds.values())}
        await conn.execute(Q["prune_attempts"], params)


async def _apply_report(
    conn: Conn, report: TaskReport, max_retries: int, now: float
) -> TaskState | None:
    """Apply one report under its lease; the task's new state, or None if fenced out."""
    query, params = rules.report_query(report, max_retries, now)
    params.update(outcome_params(report))
    if report.ok:
        cursor = await conn.execute(Q[query], params)
        return TaskState.COMPLETED if cursor.rowcount == 1 else None
    row = await one(conn, query, params)
    return None if row is None else TaskState(row["state"])


async def _count_released(conn: Conn, run_id: int, released: int, now: float) -> int:
    if delta := rules.released_delta(run_id, now, released):
        await conn.execute(Q["move_counters"], delta)
    return released
