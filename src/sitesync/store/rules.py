"""What both backends decide alike, written once: plain Python, no database.

The backends differ in SQL, in sync/async and in how a few values are encoded (JSON text in
SQLite, ``jsonb`` and arrays in PostgreSQL). Every *decision* of a store call lives here:
whether a run may move, which tasks a batch leases, what a report's verdicts are and how
the run's counters move, how many hosts a worker may claim, what becomes of a stale run,
and (in :mod:`sitesync.store.domain_lifecycle`) the stale lifecycle of a scanned domain.
``tests/unit/test_store_rules.py`` checks them without a database; ``tests/contract``
checks that both backends apply them alike.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from sitesync.errors import IllegalTransition
from sitesync.frontier.transitions import TaskEvent, next_state, run_may_become
from sitesync.models import (
    NewTask,
    ReportVerdict,
    Run,
    RunStatus,
    TaskReport,
    TaskState,
    WorkerInfo,
)

#: The run counters that task transitions move (``tasks_total`` moves only on admission).
COUNTERS = (
    "pending", "assigned", "completed", "failed", "pages_fetched", "bytes_fetched", "retries",
)  # fmt: skip


class Row(Protocol):
    """A database row readable by column name (sqlite3.Row, psycopg's dict rows)."""

    def __getitem__(self, key: str, /) -> Any: ...


# -- runs ---------------------------------------------------------------------------------


def check_transition(run: Run, to: RunStatus) -> None:
    """Raise ``IllegalTransition`` unless the run table (:mod:`sitesync.frontier.transitions`)
    lets ``run`` become ``to``."""
    if not run_may_become(run.status, to):
        raise IllegalTransition(f"run {run.id} is {run.status.value}; it cannot become {to.value}")


def transition_params(run: Run, to: RunStatus, reason: str | None, now: float) -> dict[str, Any]:
    """Parameters of ``update_run_status`` moving ``run`` to ``to``, fenced on its current
    status; raises ``IllegalTransition`` unless the run table allows the move."""
    check_transition(run, to)
    return {
        "run_id": run.id,
        "status": to.value,
        "expected": run.status.value,
        "reason": reason,
        "terminal": to.is_terminal,
        # A pause or a resume is a sign of life, not work: it refreshes the run's heartbeat
        # and leaves its last activity alone, so that the watchdog still sees that the
        # workers left before it (re-queued without spending a crash retry).
        "pause_or_resume": {run.status, to} == {RunStatus.PAUSED, RunStatus.RUNNING},
        "now": now,
    }


@dataclass(frozen=True, slots=True)
class SettingsPlan:
    """What ``change_run_settings`` writes: the run's new settings, its version after the
    change, and each setting that changed with its old and new value."""

    settings: dict[str, Any]
    version: int
    changed: list[tuple[str, Any, Any]]


def settings_change(run: Run, changes: Mapping[str, Any]) -> SettingsPlan | None:
    """The run's settings with ``changes`` applied, or None when none of them changes a value
    (nothing is written or recorded then). Which settings may change is decided above the
    store (:mod:`sitesync.run_settings`); here a change is only applied and recorded."""
    current = dict(run.settings or {})
    changed = [
        (name, current.get(name), value)
        for name, value in sorted(changes.items())
        if current.get(name) != value
    ]
    if not changed:
        return None
    current.update({name: value for name, _, value in changed})
    return SettingsPlan(settings=current, version=run.settings_version + 1, changed=changed)


def extended_hosts(known: Sequence[str], hosts: Sequence[str]) -> tuple[str, ...] | None:
    """The run's ``extra_hosts`` with ``hosts`` added in order, or None if nothing is new."""
    extra = tuple(dict.fromkeys((*known, *hosts)))
    return None if extra == tuple(known) else extra


def merged_aliases(known: Sequence[str], aliases: Sequence[str], canonical: str) -> list[str]:
    """A domain's alias hosts after another root redirect: they accumulate, in first-seen
    order, and the canonical host is never its own alias."""
    return [a for a in dict.fromkeys((*known, *aliases)) if a != canonical]


def admission_room(run: Run) -> int | None:
    """How many more tasks the run may admit: None without ``max_pages``, else what is left
    (0 or less: none)."""
    if run.config.max_pages is None:
        return None
    return run.config.max_pages - run.counters.tasks_total


# -- counters -----------------------------------------------------------------------------


def counter_delta(run_id: int, now: float, **moves: int) -> dict[str, Any]:
    """Parameters of SQLite's ``move_counters`` (the run's row): every counter, moved by
    ``moves``."""
    params: dict[str, Any] = dict.fromkeys(COUNTERS, 0)
    params.update(moves)
    params["run_id"] = run_id
    params["now"] = now
    return params


def leased_delta(run_id: int, now: float, leased: int, reclaimed: int) -> dict[str, Any] | None:
    """Counters after an acquire: ``reclaimed`` expired leases went back to pending and
    ``leased`` tasks left it (None: nothing moved)."""
    if not leased and not reclaimed:
        return None
    moved = leased - reclaimed
    return counter_delta(run_id, now, pending=-moved, assigned=moved)


def released_delta(run_id: int, now: float, released: int) -> dict[str, Any] | None:
    """Counters after ``released`` leased tasks went back to pending (None: none did)."""
    if not released:
        return None
    return counter_delta(run_id, now, pending=released, assigned=-released)


def ended_delta(run_id: int, now: float, ended: int) -> dict[str, Any] | None:
    """Counters after ``ended`` pending tasks of dead hosts failed (None: none did)."""
    if not ended:
        return None
    return counter_delta(run_id, now, pending=-ended, failed=ended)


@dataclass(slots=True)
class HostMoves:
    """Counter moves per host, for a backend that keeps a run's counters in host rows
    (PostgreSQL's ``run_host_counts``): what one transaction moves, written at once."""

    moves: dict[str, dict[str, int]] = field(default_factory=dict)

    def add(self, host: str, **moves: int) -> None:
        counters = self.moves.setdefault(host, dict.fromkeys(("tasks_total", *COUNTERS), 0))
        for name, by in moves.items():
            counters[name] += by

    def take(self, run_id: int, now: float) -> dict[str, Any] | None:
        """Parameters of PostgreSQL's ``move_counters`` (one array per counter, hosts in order, so
        that transactions lock host rows in one order), and start over; None: no move."""
        hosts = sorted(h for h, counters in self.moves.items() if any(counters.values()))
        params: dict[str, Any] | None = None
        if hosts:
            params = {"run_id": run_id, "now": now, "hosts": hosts}
            for name in ("tasks_total", *COUNTERS):
                params[name] = [self.moves[host][name] for host in hosts]
        self.moves.clear()
        return params


# -- acquire ------------------------------------------------------------------------------


def candidate_scan(limit: int, per_host: int | None) -> int:
    """How many candidate rows to read for ``limit`` leases: more when hosts are capped,
    so that a run whose first pending tasks all share one host still fills the batch."""
    return limit if per_host is None else limit * 8


def pick_per_host(candidates: Iterable[Row], limit: int, per_host: int | None) -> list[int]:
    """Ids of the first ``limit`` candidates, at most ``per_host`` of any one host."""
    picked: list[int] = []
    taken: dict[str, int] = {}
    for row in candidates:
        host = row["host"]
        if per_host is not None and taken.get(host, 0) >= per_host:
            continue
        taken[host] = taken.get(host, 0) + 1
        picked.append(row["id"])
        if len(picked) >= limit:
            break
    return picked


# -- report -------------------------------------------------------------------------------


def report_query(report: TaskReport, max_retries: int, now: float) -> tuple[str, dict[str, Any]]:
    """The query that applies one report under its lease, and its parameters (the backend
    adds ``outcome``, ``final_url`` and ``redirects``, which it encodes its own way).

    A success completes the task; a failure goes back to pending after ``retry_delay``
    while attempts are left, else fails for good (``give_up`` fails it at once): see
    :func:`retries`.
    """
    lease = report.lease
    params: dict[str, Any] = {"task_id": lease.task_id, "token": lease.token, "now": now}
    if report.ok:
        params.update(http_status=report.http_status, error=report.error)
        return "complete_tasks", params
    params.update(
        retry=retries(report, max_retries),
        retry_at=now + report.retry_delay,
        http_status=report.http_status or None,
        error=report.error or "failed",
    )
    return "fail_attempts", params


def failure_event(report: TaskReport, max_retries: int) -> TaskEvent:
    """The row of the task table an accepted failure makes: at once when it is not transient
    (``give_up``), a retry while attempts are left, else its last attempt. The lease's
    ``attempt_count`` is the task's: a report is applied only under its lease's token."""
    if report.give_up:
        return TaskEvent.GIVE_UP
    if report.lease.attempt_count < max_retries:
        return TaskEvent.REPORT_RETRY
    return TaskEvent.REPORT_LAST


def retries(report: TaskReport, max_retries: int) -> bool:
    """Whether an accepted failure puts its task back to pending (``fail_attempts``'s
    ``retry``), as the task table says of its :func:`failure_event`."""
    return next_state(TaskState.ASSIGNED, failure_event(report, max_retries)) is TaskState.PENDING


@dataclass(slots=True)
class ReportTally:
    """One report batch's decisions: a verdict per report, the run's counter moves, the
    accepted reports (their attempt history) and the links they discovered."""

    verdicts: list[ReportVerdict] = field(default_factory=list)
    moves: dict[str, int] = field(default_factory=lambda: dict.fromkeys(COUNTERS, 0))
    by_host: HostMoves = field(default_factory=HostMoves)
    accepted: list[TaskReport] = field(default_factory=list)
    discovered: list[NewTask] = field(default_factory=list)

    def lost(self) -> None:
        """The report's lease was no longer current: it changes nothing."""
        self.verdicts.append(ReportVerdict.LEASE_LOST)

    def accept(self, report: TaskReport, state: TaskState) -> bool:
        """The report moved its task to ``state``; True when its records are to be saved.

        Records are saved only with a final answer (completed, or failed for good): a
        retried attempt's records come again with the attempt that ends it.
        """
        self.verdicts.append(ReportVerdict.ACCEPTED)
        self.accepted.append(report)
        moves = {"assigned": -1, state.value: 1}
        if state is TaskState.PENDING:
            moves["retries"] = 1
        if report.http_status > 0:
            moves["pages_fetched"] = 1
            moves["bytes_fetched"] = report.bytes_fetched
        for name, by in moves.items():
            self.moves[name] += by
        self.by_host.add(report.lease.host, **moves)
        self.discovered.extend(report.discovered)
        return bool(report.records) and state is not TaskState.PENDING

    def counter_params(self, run_id: int, now: float) -> dict[str, Any] | None:
        """Parameters of ``move_counters`` for the batch; None when no counter moved."""
        if not any(self.moves.values()):
            return None
        return counter_delta(run_id, now, **self.moves)


def prune_bounds(accepted: Sequence[TaskReport], keep: int) -> dict[int, int]:
    """Tasks whose history outgrew ``keep`` attempts: task id -> last attempt to drop.

    Empty for almost every batch (a task attempted at most ``keep`` times has nothing to
    drop), so pruning costs nothing on the common path."""
    return {
        report.lease.task_id: report.lease.attempt_count - keep
        for report in accepted
        if report.lease.attempt_count > keep
    }


# -- coordination -------------------------------------------------------------------------


def fair_share(hosts_with_work: int, live_workers: int, cap: int | None) -> int:
    """How many hosts one worker may hold: an even split, at least one, at most ``cap``."""
    share = max(1, math.ceil(hosts_with_work / max(1, live_workers)))
    return share if cap is None else min(share, cap)


def claim_step(held: int, share: int) -> tuple[str, dict[str, int]] | None:
    """What a worker holding ``held`` claims does about its ``share``: drop the surplus,
    claim more, or nothing.

    No slack over the share: the shares of the live workers add up to barely more than the
    hosts with work, so one host kept over the share can leave a worker that joins last
    with none (6 hosts: 3 + 3 kept from the share of two workers, 0 for the third), and the
    worker takes no new tasks on its surplus anyway (``ClaimGrant``). Claims do not flap
    without it: only hosts with nothing in flight are dropped, only free ones claimed."""
    if held > share:
        return "drop_surplus_claims", {"surplus": held - share}
    if held < share:
        return "claim_free_hosts", {"limit": share - held}
    return None


def gone_worker_params(worker: WorkerInfo) -> dict[str, Any]:
    """The facts a gone worker was proven gone on: its row must still show them all."""
    return {
        "worker_id": worker.worker_id,
        "host": worker.host,
        "pid": worker.pid,
        "boot_id": worker.boot_id,
        "proc_start": worker.proc_start,
    }


# -- supervision --------------------------------------------------------------------------


def recovery_step(
    row: Row, *, stale_after: float, max_crash_retries: int
) -> tuple[str, dict[str, Any]]:
    """What becomes of a stale running run (a ``select_stale_running`` row): re-queued
    without spending a retry when its workers left cleanly, re-queued as crashed while
    retries are left, else failed. The query and its extra parameters."""
    if row["workers_left"]:
        return "requeue_left", {}
    if row["crash_retries"] < max_crash_retries:
        return "requeue_crashed", {
            "reason": f"crashed (no heartbeat for {stale_after:g}s); re-queued"
        }
    return "fail_crashed", {}
