"""Tasks of runs on PostgreSQL: admission with dedup, leasing, reports, release.

No transaction here locks the run's row: every task transition moves the counters of its
host's row in ``run_host_counts`` in the same transaction (a run's counters are their sum),
and the host rows of one transaction are written by one statement in host order, after its
task rows; a run with ``max_pages`` admits within slots of its budget (``budget.py``).
Acquire is one statement; a batch of reports a constant number of statements (records
aside). SQL in ``frontier.sql``; every decision (verdicts, counter moves) in
:mod:`sitesync.store.rules`, shared with the SQLite store.
"""

from __future__ import annotations

import secrets
from collections.abc import Sequence
from typing import Any

from sitesync.errors import RunNotFound
from sitesync.models import Lease, NewTask, ReportVerdict, RunConfig, TaskReport, TaskState
from sitesync.store import rules
from sitesync.store._plain import TaskReads
from sitesync.store._rows import attempt_rows, lease_from_row
from sitesync.store.postgres import budget
from sitesync.store.postgres._db import Conn, PostgresDb, Q, every, one
from sitesync.store.postgres._rows import report_arrays, task_from_row
from sitesync.store.postgres.coordination import end_tasks_of_ended_hosts
from sitesync.store.postgres.records import save_records
from sitesync.store.postgres.revisits import save_revisits


class PostgresFrontier(TaskReads[PostgresDb]):
    _task = staticmethod(task_from_row)

    async def add_tasks(self, run_id: int, tasks: Sequence[NewTask]) -> int:
        if not tasks:
            return 0

        async def work(conn: Conn) -> int:
            config = await _config(conn, run_id)
            return await admit(conn, run_id, config, tasks, self._db.clock(), rules.HostMoves())

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
            if replay and (done := await _leased_with(conn, run_id, token)):
                return done
            replay = True
            now = self._db.clock()
            expires_at = now + lease_seconds
            params = {
                "run_id": run_id, "worker_id": worker_id, "token": token,
                "expires_at": expires_at, "now": now, "limit": limit, "per_host": per_host,
                "scan": rules.candidate_scan(limit, per_host),
                "exclude_hosts": list(exclude_hosts), "claimed_only": claimed_only,
            }  # fmt: skip
            rows = await every(conn, "acquire", params)
            return [lease_from_row(row, run_id, token, expires_at) for row in rows]

        leases = await self._db.transaction(work)
        leases.sort(key=lambda lease: lease.task_id)
        return leases

    async def report(self, run_id: int, reports: Sequence[TaskReport]) -> list[ReportVerdict]:
        if not reports:
            return []

        async def work(conn: Conn) -> list[ReportVerdict]:
            config = await _config(conn, run_id)
            now = self._db.clock()
            states = await _apply_reports(conn, reports, config.max_retries, now)
            tally = rules.ReportTally()
            with_records = []
            revisits = []  # completed reports that leave a fetch for the next scan
            for report in reports:
                # A task reported twice in one batch: the first report is the one applied.
                state = states.pop(report.lease.task_id, None)
                if state is None:
                    tally.lost()
                else:
                    if tally.accept(report, state):
                        with_records.append(report)
                    if state is TaskState.COMPLETED and report.revisit is not None:
                        revisits.append(report)
            await save_records(conn, run_id, with_records, now, self.max_stored_body_bytes)
            await save_revisits(conn, run_id, revisits, now)
            await _keep_attempts(conn, tally.accepted, self.max_attempts_kept, now)
            await admit(conn, run_id, config, tally.discovered, now, tally.by_host)
            return tally.verdicts

        return await self._db.transaction(work)

    async def renew_leases(self, run_id: int, *, worker_id: str, lease_seconds: float) -> int:
        now = self._db.clock()
        params = {"run_id": run_id, "worker_id": worker_id,
                  "expires_at": now + lease_seconds, "now": now}  # fmt: skip
        return await self._db.execute("renew_leases", params)

    async def release(
        self, run_id: int, leases: Sequence[Lease], *, not_before: float | None = None
    ) -> int:
        if not leases:
            return 0

        async def work(conn: Conn) -> int:
            now = self._db.clock()
            params = {"task_ids": [lease.task_id for lease in leases],
                      "tokens": [lease.token for lease in leases],
                      "not_before": not_before, "now": now}  # fmt: skip
            rows = await every(conn, "release_leases", params)
            return await _count_released(conn, run_id, rows, now)

        return await self._db.transaction(work)

    async def release_worker(self, run_id: int, *, worker_id: str) -> int:
        async def work(conn: Conn) -> int:
            now = self._db.clock()
            params = {"run_id": run_id, "worker_id": worker_id, "now": now}
            rows = await every(conn, "release_worker", params)
            return await _count_released(conn, run_id, rows, now)

        return await self._db.transaction(work)

    async def next_eligible_at(self, run_id: int) -> float | None:
        [row] = await self._db.rows("next_eligible_at", {"run_id": run_id})
        return None if row["next_at"] is None else float(row["next_at"])


async def admit(
    conn: Conn,
    run_id: int,
    config: RunConfig,
    tasks: Sequence[NewTask],
    now: float,
    moves: rules.HostMoves,
) -> int:
    """Insert new tasks, and write ``moves`` (the caller's counter moves) with theirs; how
    many were admitted.

    A run with ``max_pages`` admits within the slots of its budget that this transaction
    holds (:mod:`~sitesync.store.postgres.budget`), never on its run's row: capped or not,
    the admissions of a run go side by side.
    """
    admitted = 0
    if tasks:
        params = {
            "run_id": run_id,
            "urls": [task.url for task in tasks],
            "hosts": [task.host for task in tasks],
            "depths": [task.depth for task in tasks],
            "priorities": [task.priority for task in tasks],
            "found_from": [task.found_from for task in tasks],
            "now": now,
        }
        if config.max_pages is None:
            admitted, _ = await _insert(conn, params, None, moves)
        else:
            admitted = await _admit_within_budget(conn, run_id, params, moves)
    await _move(conn, run_id, moves, now)
    if admitted:
        # After the host rows are locked: see end_tasks_of_ended_hosts.
        await end_tasks_of_ended_hosts(conn, run_id, [t.host for t in tasks], now, moves)
        await _move(conn, run_id, moves, now)
    return admitted


async def _admit_within_budget(
    conn: Conn, run_id: int, params: dict[str, Any], moves: rules.HostMoves
) -> int:
    """Admit the batch's first new URLs (by position) that the slots this transaction can
    take have room for; how many.

    Each round inserts up to the room held. A round that chose fewer URLs than its room
    saw every new URL of the batch. One that chose as many may have left some: it goes
    again, with the room its URLs did not use (another transaction's commit took some of
    them first: the next round's probe sees those) or with one more slot.
    """
    slots, admitted = budget.AdmissionBudget(run_id), 0
    while slots.room or await slots.take(conn):
        room = slots.room
        inserted, chosen = await _insert(conn, params, room, moves)
        slots.spend(inserted)
        admitted += inserted
        if chosen < room:
            break
    await slots.settle(conn)
    return admitted


async def _insert(
    conn: Conn, params: dict[str, Any], room: int | None, moves: rules.HostMoves
) -> tuple[int, int]:
    """One ``insert_tasks``: how many it admitted, and how many new URLs it chose."""
    admitted = chosen = 0
    for row in await every(conn, "insert_tasks", {**params, "room": room}):
        if row["host"] is None:
            chosen = row["admitted"]
        else:
            moves.add(row["host"], tasks_total=row["admitted"], pending=row["admitted"])
            admitted += row["admitted"]
    return admitted, chosen


async def _config(conn: Conn, run_id: int) -> RunConfig:
    """The run's config, without folding its counters (reports need only this)."""
    row = await one(conn, "select_run_config", {"run_id": run_id})
    if row is None:
        raise RunNotFound(f"no run with id {run_id}")
    return RunConfig.from_json(dict(row["config"]))


async def _move(conn: Conn, run_id: int, moves: rules.HostMoves, now: float) -> None:
    if params := moves.take(run_id, now):
        await conn.execute(Q["move_counters"], params)


async def _leased_with(conn: Conn, run_id: int, token: int) -> list[Lease]:
    """The leases an earlier attempt of this acquire committed (its token's tasks)."""
    rows = await every(conn, "select_leased_by_token", {"run_id": run_id, "token": token})
    return [lease_from_row(r, run_id, token, r["lease_expires_at"]) for r in rows]


async def _apply_reports(
    conn: Conn, reports: Sequence[TaskReport], max_retries: int, now: float
) -> dict[int, TaskState]:
    """Apply a batch of reports under their leases (one statement for the successes, one
    for the failures); the new state of each task whose lease was still current."""
    states: dict[int, TaskState] = {}
    for query, batch in (
        ("complete_tasks", [r for r in reports if r.ok]),
        ("fail_attempts", [r for r in reports if not r.ok]),
    ):
        if batch:
            rows = await every(conn, query, report_arrays(batch, now, max_retries))
            states.update((row["id"], TaskState(row["state"])) for row in rows)
    return states


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


async def _count_released(conn: Conn, run_id: int, rows: Sequence[Any], now: float) -> int:
    """Move the host rows of released tasks (each a row with its host) back to pending."""
    moves = rules.HostMoves()
    for row in rows:
        moves.add(row["host"], pending=1, assigned=-1)
    await _move(conn, run_id, moves, now)
    return len(rows)
