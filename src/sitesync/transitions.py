"""How a task moves between states: the rulebook both stores implement, as data.

Each row is one (state, event) pair and the state it leads to. The stores enforce it in
their SQL (every transition is one UPDATE guarded by state and lease token); the contract
suite (``tests/contract/test_transitions.py``) drives every row through the public Store
API on each backend, and ``docs/architecture.md`` draws this table (``make docs``).
A pair that is not in the table changes nothing: a report under a lost lease, a release
of a task that is no longer leased.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

from sitesync.models import TaskState


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


def transitions_table() -> str:
    """The table as docs/architecture.md draws it (Markdown)."""
    rows = ["| from | event | to | made by |", "| --- | --- | --- | --- |"]
    for t in TASK_TRANSITIONS:
        rows.append(f"| {t.state.name} | {t.event.value} | {t.to.name} | {t.how} |")
    return "\n".join(rows) + "\n"
