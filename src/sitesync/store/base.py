"""The store interfaces. Every backend implements all of them; ``tests/contract`` checks it.

The store is the single source of truth and the only coordinator between workers: every
method is one transaction, and every counter moves in the transaction of the task
transition that causes it.

The frontier, runs and domains are here; the other parts live in :mod:`.base_fleet` and
:mod:`.base_registry` and are re-exported, so ``sitesync.store.base`` names every one.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Protocol

from sitesync.models import (
    Attempt,
    Domain,
    Lease,
    NewTask,
    ReportVerdict,
    Run,
    RunConfig,
    RunStatus,
    SettingChange,
    Task,
    TaskReport,
    TaskState,
)
from sitesync.store.base_fleet import CoordinationStore, SupervisionStore
from sitesync.store.base_gone import ChangeStore, GoneStore
from sitesync.store.base_registry import OverviewStore, RecordStore, RegistryStore
from sitesync.store.base_revisits import RevisitStore

__all__ = [
    "ChangeStore",
    "CoordinationStore",
    "DomainStore",
    "FrontierStore",
    "GoneStore",
    "OverviewStore",
    "RecordStore",
    "RegistryStore",
    "RevisitStore",
    "RunStore",
    "Store",
    "SupervisionStore",
]


class FrontierStore(Protocol):
    """Tasks of runs: admission with dedup, leasing, reports, release."""

    max_attempts_kept: int  # attempts kept per task (list_attempts); the oldest go first

    async def add_tasks(self, run_id: int, tasks: Sequence[NewTask]) -> int:
        """Admit tasks as PENDING; return how many were new.

        A URL already in the run in any state is discarded (dedup pre-flight). When the
        run has ``max_pages``, admission stops once the run holds that many tasks.
        """
        ...

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
        """Lease up to ``limit`` eligible PENDING tasks to ``worker_id``, highest priority first.

        With ``claimed_only``, only tasks of hosts the worker holds a live claim on; with
        ``per_host``, at most that many of any one host in this call (the rest of a host's
        tasks wait, and other hosts' tasks fill the batch).

        In the same transaction, and first, every expired lease of the run goes back to
        PENDING. Each returned task had its ``attempt_count`` incremented. Tasks of
        ``exclude_hosts`` are skipped (the worker has enough of them in hand). An empty
        list means nothing is eligible now, not that the run is drained.
        """
        ...

    async def report(self, run_id: int, reports: Sequence[TaskReport]) -> list[ReportVerdict]:
        """Record finished attempts, one verdict per report, all in one transaction.

        A report whose lease token is no longer the task's current one (expired and
        taken over, or released) changes nothing, its discovered links included, and
        gets ``LEASE_LOST``.
        """
        ...

    async def renew_leases(self, run_id: int, *, worker_id: str, lease_seconds: float) -> int:
        """Extend every lease ``worker_id`` holds in the run; return how many."""
        ...

    async def release(
        self, run_id: int, leases: Sequence[Lease], *, not_before: float | None = None
    ) -> int:
        """Return leased tasks to PENDING as if never attempted.

        Their ``attempt_count`` goes back down (the attempt did not happen); with
        ``not_before`` they are not eligible again before that time (a host backing off).
        """
        ...

    async def release_worker(self, run_id: int, *, worker_id: str) -> int:
        """Return every task ``worker_id`` holds in the run to PENDING; return how many."""
        ...

    async def next_eligible_at(self, run_id: int) -> float | None:
        """Earliest time a PENDING task of the run becomes eligible (0 for one never put off);
        None if none is pending. Reads only the tasks put off to a later time."""
        ...

    async def get_task(self, run_id: int, url: str) -> Task | None:
        """The task of a normalized URL in the run, or None."""
        ...

    async def list_tasks(
        self, run_id: int, *, state: TaskState | None = None, limit: int = 1000
    ) -> list[Task]:
        """Tasks of the run in admission order, optionally of one state."""
        ...

    async def count_tasks(self, run_id: int) -> dict[TaskState, int]:
        """Tasks per state, counted from the tasks themselves (slow; for checks and tests)."""
        ...

    async def list_attempts(self, task_id: int) -> list[Attempt]:
        """The task's kept attempts, oldest first: every accepted report wrote one, in its
        batch's transaction, and only the last ``max_attempts_kept`` are kept."""
        ...


class RunStore(Protocol):
    """Runs and their lifecycle."""

    async def mark_seeded(self, run_id: int) -> None:
        """Record that the run's seeds and sitemaps were admitted."""
        ...

    async def extend_scope(self, run_id: int, hosts: Sequence[str]) -> Run:
        """Add hosts to the run's ``extra_hosts`` (where its seeds redirect to)."""
        ...

    async def create_run(
        self, config: RunConfig, *, settings: Mapping[str, Any] | None = None
    ) -> Run:
        """Create a run in status ``queued``, recording the settings it is created with
        (:mod:`sitesync.run_settings`; None: none recorded, as before runs kept them)."""
        ...

    async def change_run_settings(self, run_id: int, changes: Mapping[str, Any]) -> Run:
        """Set these of the run's settings and record each one whose value changed, with its
        old and new value and the time, under the run's next ``settings_version``. Nothing is
        written when no value changes. Which settings may change is checked by the caller."""
        ...

    async def list_setting_changes(self, run_id: int) -> list[SettingChange]:
        """The run's setting changes, oldest first."""
        ...

    async def get_run(self, run_id: int) -> Run:
        """The run; raises ``RunNotFound``."""
        ...

    async def list_runs(self, *, limit: int = 50) -> list[Run]:
        """Newest runs first."""
        ...

    async def transition_run(self, run_id: int, to: RunStatus, *, reason: str | None = None) -> Run:
        """Move the run to ``to``; raises ``IllegalTransition`` if the table forbids it."""
        ...

    async def complete_if_drained(self, run_id: int) -> bool:
        """Mark a running run completed if nothing is pending or assigned; True if it was."""
        ...


class DomainStore(Protocol):
    """Sites across runs."""

    async def record_root_redirect(
        self, host: str, *, canonical_host: str, aliases: Sequence[str]
    ) -> Domain:
        """Persist where ``host``'s root redirects: its canonical host and alias hosts.

        Aliases accumulate across calls; the canonical host is the latest seen.
        """
        ...

    async def get_domain(self, host: str) -> Domain | None:
        """The domain, or None if it was never recorded."""
        ...

    async def get_domains(self, hosts: Sequence[str]) -> dict[str, Domain]:
        """Each of ``hosts`` that was ever recorded, by host, in one query."""
        ...


class Store(
    FrontierStore,
    RunStore,
    DomainStore,
    CoordinationStore,
    SupervisionStore,
    RegistryStore,
    RecordStore,
    RevisitStore,
    GoneStore,
    ChangeStore,
    OverviewStore,
    Protocol,
):
    """A whole backend."""

    def now(self) -> float:
        """The store's time (epoch seconds): what leases, claims, pauses and schedules are
        measured against. Workers compare the expiries they hold with this, never with
        their own machine's wall clock, which may be minutes off the fleet's."""
        ...

    async def close(self) -> None:
        """Release connections and threads. Idempotent."""
        ...
