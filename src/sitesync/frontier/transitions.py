"""How a task moves between states, and a run between statuses: the one table, as data.

Each row is one (state, event) pair and the state it leads to. This module is what runs:

- Runs: ``transition_run`` asks :func:`run_may_become` (through ``store/rules.py``) before
  it writes, and its UPDATE is fenced on the status it read; ``sitesync resume`` asks it too.
- Tasks: the stores write each move as one UPDATE guarded by state (and lease token).
  ``tests/unit/test_state_machine_sql.py`` reads every state change in both backends' SQL
  and fails on any move this table does not allow, or on one it cannot check (no guard);
  ``tests/contract/test_transitions.py`` drives every task row through the public Store
  API on each backend.

``docs/architecture.md`` draws both tables (``make docs``). A pair that is not in the table
changes nothing: a report under a lost lease, a release of a task that is no longer leased.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

from sitesync.models import RunStatus, TaskState

# -- tasks --------------------------------------------------------------------------------


class TaskEvent(enum.StrEnum):
    ADMIT = "admit"  # add_tasks, or a link in an accepted report: in scope, new to the run
    ACQUIRE = "acquire"  # leased to a worker: attempt_count + 1, a fresh token and expiry
    REPORT_OK = "report_ok"  # an accepted report with an HTTP response (a final answer)
    REPORT_RETRY = "report_retry"  # an accepted failure with attempts left
    REPORT_LAST = "report_last"  # an accepted failure once attempt_count >= max_retries
    GIVE_UP = "give_up"  # an accepted failure that is not transient
    RELEASE = "release"  # given back untried (a deferral, a pause): the attempt undone
    RELEASE_WORKER = "release_worker"  # a worker's shutdown gives back all it holds
    WORKER_GONE = "worker_gone"  # a worker proven dead on this machine: its leases freed
    LEASE_EXPIRED = "lease_expired"  # reclaimed inside the next acquire's transaction
    HOST_ENDED = "host_ended"  # the host is dead (unreachable, blocked): its tasks end


@dataclass(frozen=True, slots=True)
class Transition:
    state: TaskState
    event: TaskEvent
    to: TaskState
    how: str  # the Store call that makes it, for the docs


_S = TaskState
_E = TaskEvent

TASK_TRANSITIONS: tuple[Transition, ...] = (
    Transition(_S.DISCOVERED, _E.ADMIT, _S.PENDING, "`add_tasks`; `report` (its `discovered`)"),
    Transition(_S.PENDING, _E.ACQUIRE, _S.ASSIGNED, "`acquire`"),
    Transition(_S.PENDING, _E.HOST_ENDED, _S.FAILED, "`end_host`"),
    Transition(_S.ASSIGNED, _E.REPORT_OK, _S.COMPLETED, "`report` (ok)"),
    Transition(_S.ASSIGNED, _E.REPORT_RETRY, _S.PENDING, "`report` (failed, retry_delay)"),
    Transition(_S.ASSIGNED, _E.REPORT_LAST, _S.FAILED, "`report` (failed, no attempts left)"),
    Transition(_S.ASSIGNED, _E.GIVE_UP, _S.FAILED, "`report` (failed, give_up)"),
    Transition(_S.ASSIGNED, _E.RELEASE, _S.PENDING, "`release`"),
    Transition(_S.ASSIGNED, _E.RELEASE_WORKER, _S.PENDING, "`release_worker`"),
    Transition(_S.ASSIGNED, _E.WORKER_GONE, _S.PENDING, "`release_gone_worker`"),
    Transition(_S.ASSIGNED, _E.LEASE_EXPIRED, _S.PENDING, "the next `acquire`"),
)

_NEXT = {(t.state, t.event): t.to for t in TASK_TRANSITIONS}


def next_state(state: TaskState, event: TaskEvent) -> TaskState | None:
    """The state ``event`` moves a task in ``state`` to; None: the event changes nothing."""
    return _NEXT.get((state, event))


#: Every (from, to) move of a task some event makes; DISCOVERED is never stored, so a move
#: from it is an INSERT of the new row.
TASK_MOVES: frozenset[tuple[TaskState, TaskState]] = frozenset(
    (t.state, t.to) for t in TASK_TRANSITIONS
)


# -- runs ---------------------------------------------------------------------------------


class RunEvent(enum.StrEnum):
    START = "start"  # a supervisor (or a crawl, a worker) starts it
    PAUSE = "pause"
    RESUME = "resume"  # carries on in this process (`sitesync resume` of a paused run)
    REQUEUE = "requeue"  # handed (back) to a supervisor: the watchdog, `sitesync resume`
    COMPLETE = "complete"  # the frontier drained
    STOP = "stop"
    CANCEL = "cancel"
    FAIL = "fail"  # a fatal error, a crash past its retries, `cleanup-stale`


@dataclass(frozen=True, slots=True)
class RunTransition:
    status: RunStatus
    event: RunEvent
    to: RunStatus
    how: str  # who makes it, for the docs


#: A run is created queued (``create_run``, a scan's run); the rows say where it goes next.
RUN_CREATED_AS = RunStatus.QUEUED

_R = RunStatus
_V = RunEvent
_TRANSITION_RUN = "`transition_run`"

RUN_TRANSITION_ROWS: tuple[RunTransition, ...] = (
    RunTransition(_R.QUEUED, _V.START, _R.RUNNING, "`start_queued_run`; `transition_run` (crawl)"),
    RunTransition(_R.QUEUED, _V.CANCEL, _R.CANCELLED, _TRANSITION_RUN),
    RunTransition(_R.QUEUED, _V.FAIL, _R.FAILED, "`transition_run` (`cleanup-stale`)"),
    RunTransition(_R.RUNNING, _V.PAUSE, _R.PAUSED, _TRANSITION_RUN),
    RunTransition(_R.RUNNING, _V.COMPLETE, _R.COMPLETED, "`complete_run_if_drained`"),
    RunTransition(_R.RUNNING, _V.STOP, _R.STOPPED, _TRANSITION_RUN),
    RunTransition(_R.RUNNING, _V.CANCEL, _R.CANCELLED, _TRANSITION_RUN),
    RunTransition(_R.RUNNING, _V.FAIL, _R.FAILED, "`transition_run`; the watchdog (crashed)"),
    RunTransition(_R.RUNNING, _V.REQUEUE, _R.QUEUED, "the watchdog; a supervisor shutting down"),
    RunTransition(_R.PAUSED, _V.RESUME, _R.RUNNING, _TRANSITION_RUN),
    RunTransition(_R.PAUSED, _V.STOP, _R.STOPPED, _TRANSITION_RUN),
    RunTransition(_R.PAUSED, _V.CANCEL, _R.CANCELLED, _TRANSITION_RUN),
    RunTransition(_R.PAUSED, _V.FAIL, _R.FAILED, _TRANSITION_RUN),
    # A stopped or failed run is resumed in place (running: `crawl --resume`) or handed to
    # the supervisor (queued: `sitesync resume`); completed and cancelled are final.
    RunTransition(_R.STOPPED, _V.RESUME, _R.RUNNING, "`transition_run` (`crawl --resume`)"),
    RunTransition(_R.STOPPED, _V.REQUEUE, _R.QUEUED, "`transition_run` (`sitesync resume`)"),
    RunTransition(_R.STOPPED, _V.CANCEL, _R.CANCELLED, _TRANSITION_RUN),
    RunTransition(_R.FAILED, _V.RESUME, _R.RUNNING, "`transition_run` (`crawl --resume`)"),
    RunTransition(_R.FAILED, _V.REQUEUE, _R.QUEUED, "`transition_run` (`sitesync resume`)"),
    RunTransition(_R.FAILED, _V.CANCEL, _R.CANCELLED, _TRANSITION_RUN),
)

#: Which status a run may move to from each status (none from a final one).
RUN_TRANSITIONS: dict[RunStatus, frozenset[RunStatus]] = {
    status: frozenset(row.to for row in RUN_TRANSITION_ROWS if row.status is status)
    for status in RunStatus
}


_NEXT_STATUS = {(r.status, r.event): r.to for r in RUN_TRANSITION_ROWS}


def next_status(status: RunStatus, event: RunEvent) -> RunStatus | None:
    """The status ``event`` moves a run in ``status`` to; None: the table forbids it."""
    return _NEXT_STATUS.get((status, event))


def run_may_become(status: RunStatus, to: RunStatus) -> bool:
    """Whether the table lets a run in ``status`` move to ``to``."""
    return to in RUN_TRANSITIONS[status]


# -- the docs -----------------------------------------------------------------------------


def transitions_table() -> str:
    """The task table as docs/architecture.md draws it (Markdown)."""
    rows = ["| from | event | to | made by |", "| --- | --- | --- | --- |"]
    for t in TASK_TRANSITIONS:
        rows.append(f"| {t.state.name} | {t.event.value} | {t.to.name} | {t.how} |")
    return "\n".join(rows) + "\n"


def run_transitions_table() -> str:
    """The run table as docs/architecture.md draws it (Markdown)."""
    rows = ["| run from | event | to | made by |", "| --- | --- | --- | --- |"]
    for r in RUN_TRANSITION_ROWS:
        rows.append(f"| {r.status.name} | {r.event.value} | {r.to.name} | {r.how} |")
    return "\n".join(rows) + "\n"
