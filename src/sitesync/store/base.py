"""The store interfaces. Every backend implements all of them; ``tests/contract`` checks it.

The store is the single source of truth and the only coordinator between workers: every
method is one transaction, and every counter moves in the transaction of the task
transition that causes it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from sitesync.models import (
    Attempt,
    Claim,
    ClaimGrant,
    Domain,
    DomainScan,
    HostAssets,
    HostBacklog,
    HostState,
    HostStatus,
    Lease,
    NewTask,
    OutcomeCount,
    RecordVersion,
    ReportVerdict,
    Run,
    RunConfig,
    RunDiff,
    RunHost,
    RunStatus,
    ScanSummary,
    Schedule,
    Task,
    TaskReport,
    TaskState,
    WorkerInfo,
    WorkerLeases,
)


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
        """Earliest time a PENDING task of the run becomes eligible; None if none is pending."""
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

    async def create_run(self, config: RunConfig) -> Run:
        """Create a run in status ``queued``."""
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


class CoordinationStore(Protocol):
    """What lets several workers share a run: registrations, host claims, politeness
    state and per-host counters."""

    async def register_worker(
        self,
        run_id: int,
        *,
        worker_id: str,
        host: str,
        pid: int,
        boot_id: str | None = None,
        proc_start: int | None = None,
    ) -> None:
        """Record that ``worker_id`` works on the run (again); it counts as live.

        ``boot_id`` and ``proc_start`` identify the process on its machine, so that a
        worker on the same machine can prove it gone (see ``release_gone_worker``).
        """
        ...

    async def release_gone_worker(self, run_id: int, worker: WorkerInfo) -> int:
        """A worker proven gone by another process on its machine: one transaction.

        Fenced on everything the proof was about: only if the worker's row still has
        ``worker``'s host, pid, boot id and process start time, and is not stopped, is it
        marked stopped, and its leases and claims in the run end now (its tasks go back
        to pending at the next acquire, as with expired leases; its hosts are free to
        claim). Returns how many leases ended; 0 and no change when the row differs.
        """
        ...

    async def stop_worker(self, worker_id: str) -> None:
        """Record that the worker stopped; it no longer counts for fair shares."""
        ...

    async def list_workers(self, run_id: int) -> list[WorkerInfo]:
        """Workers that joined the run, oldest first."""
        ...

    async def claim_hosts(
        self,
        run_id: int,
        *,
        worker_id: str,
        claim_seconds: float,
        worker_ttl: float,
        max_hosts: int | None = None,
    ) -> ClaimGrant:
        """One transaction: heartbeat the worker, renew its live claims, drop claims on
        hosts with no work left and surplus claims (over its fair share) where it has
        nothing in flight, then claim free (or expired) hosts with pending work up to that
        share. Returns its claims, oldest first, and the share.

        The fair share is ceil(hosts with pending work / live workers), at least 1;
        workers whose heartbeat is older than ``worker_ttl`` are not live.
        """
        ...

    async def release_claims(self, run_id: int, *, worker_id: str) -> int:
        """Give up every claim the worker holds in the run."""
        ...

    async def list_claims(self, run_id: int) -> list[Claim]:
        """Every claim row of the run, expired ones included."""
        ...

    async def get_host_state(self, host: str) -> HostState | None:
        """The host's stored politeness state, or None."""
        ...

    async def save_host_pause(self, host: str, *, until: float) -> None:
        """Nothing may start on ``host`` before ``until`` (only ever moves later)."""
        ...

    async def save_host_pace(
        self, host: str, *, delay: float, concurrency: int, reason: str, since: float
    ) -> None:
        """Keep the host's adaptive pace (learned at ``since``) for every worker of the fleet;
        an empty ``reason`` means recovered to the configured pace."""
        ...

    async def save_host_robots(
        self, host: str, *, origin: str, status: int, body: str | None, expires_at: float
    ) -> None:
        """Keep the host's robots.txt answer so a worker taking over need not refetch it."""
        ...

    async def flush_host_stats(self, run_id: int, *, final: bool = False) -> int:
        """Add finished tasks not yet counted to the run's per-host counters, marking them
        counted in the same transaction (exact across crashes); with ``final``, hosts
        with nothing left become ``exhausted``. Returns how many tasks were counted."""
        ...

    async def set_host_status(self, run_id: int, host: str, status: HostStatus) -> None:
        """Set a host's status in the run; a terminal status is never overwritten."""
        ...

    async def list_run_hosts(self, run_id: int) -> list[RunHost]:
        """Per-host counters of the run."""
        ...

    async def get_run_host(self, run_id: int, host: str) -> RunHost | None:
        """One host's counters and dead-host state in the run, or None."""
        ...

    async def save_host_failures(self, run_id: int, host: str, *, failures: int) -> None:
        """Keep the host's count of consecutive host-level failures in the run (connection
        refused, name not resolved, robots.txt unavailable), so that a worker taking the
        host over continues it."""
        ...

    async def end_host(self, run_id: int, host: str, *, status: HostStatus, reason: str) -> int:
        """A dead host, in one transaction: every PENDING task of ``host`` in the run
        becomes FAILED with outcome ``status.value`` (``unreachable`` or ``blocked``) and
        ``reason`` as its error, counters moved exactly; the host gets ``status`` unless it
        already has a terminal one. Tasks of the host admitted later in the run end at once
        the same way. Leased tasks are left to their reports. Returns how many ended."""
        ...


class RecordStore(Protocol):
    """Versioned AssetRecords, written with the reports that carry them (docs/plugins.md).

    A report's records are saved in its own transaction when its task ends (completed, or
    failed for good): a new version only when a key's content hash changed, and a sighting
    per run either way. Bodies are kept once per sha256, compressed, up to
    ``max_stored_body_bytes`` (a larger one is not kept; its version says so).
    """

    max_stored_body_bytes: int

    async def record_history(self, key: str) -> list[RecordVersion]:
        """Every version of ``key``, oldest first; empty if the key was never recorded."""
        ...

    async def records_of_run(self, run_id: int, *, kind: str | None = None) -> list[RecordVersion]:
        """The version of each record the run saw (optionally of one kind), by key."""
        ...

    async def diff_runs(self, run_a: int, run_b: int) -> RunDiff:
        """Keys seen only in ``run_b`` (added), only in ``run_a`` (removed), or in both with
        different content (changed)."""
        ...

    async def get_body(self, content_hash: str) -> bytes | None:
        """A kept body by its sha256, decompressed; None if no body has that hash."""
        ...

    async def records_of_task(self, run_id: int, task_id: int) -> list[RecordVersion]:
        """The version of each record the run first saw on the task's page, by key."""
        ...

    async def pages_linking_to(self, run_id: int, url: str, *, limit: int = 5) -> list[str]:
        """URLs of the run's pages whose ``links`` record lists ``url`` (normalized), first
        seen first. A scan of the run's links records: for diagnostics, not the crawl."""
        ...

    async def run_assets(self, run_id: int) -> list[HostAssets]:
        """Assets found and stored in the run, per host of the pages they were found on."""
        ...


class SupervisionStore(Protocol):
    """Keeping runs alive: heartbeats, the watchdog, and the operator's clean-up tools."""

    async def heartbeat_run(self, run_id: int) -> None:
        """A sign of life for the run (its workers and its supervisor send them)."""
        ...

    async def start_queued_run(self, run_id: int, *, supervisor_id: str) -> Run | None:
        """Move a queued run to running under ``supervisor_id``, atomically; None when
        another supervisor (or a user) got there first."""
        ...

    async def recover_stale_runs(self, *, stale_after: float, max_crash_retries: int) -> list[Run]:
        """Runs still ``running`` whose heartbeat is older than ``stale_after`` seconds.

        A run whose last event is a worker leaving cleanly (``stop_worker`` after its last
        task transition, and after every worker still registered as alive) was left, not
        crashed: it is re-queued ("all workers left; re-queued") without spending a retry.
        Any other crashed: re-queued (``crash_retries`` + 1) while under
        ``max_crash_retries``, else ``failed`` with "crashed and exceeded max retries".
        Returns them as they became."""
        ...

    async def find_inactive_runs(self, *, idle_seconds: float) -> list[Run]:
        """Non-terminal runs with no activity (task transitions or heartbeats) for
        ``idle_seconds``."""
        ...

    async def release_claims_where(
        self, *, expired_only: bool, worker_id: str | None, dry_run: bool
    ) -> list[Claim]:
        """Operator tool: release claims (all runs). ``expired_only`` keeps live claims;
        ``worker_id`` limits to one worker. With ``dry_run`` nothing changes. Returns the
        claims released (or that would be)."""
        ...


class RegistryStore(Protocol):
    """Registered domains grouped in scopes, their scans (remembered per domain) and
    schedules."""

    async def import_domains(self, scope: str, hosts: Sequence[str]) -> int:
        """Register hosts in ``scope`` (active; a known host moves to the scope).
        Returns how many were new."""
        ...

    async def list_domains(
        self,
        *,
        scope: str | None = None,
        stale: bool | None = None,
        active: bool | None = None,
    ) -> list[Domain]:
        """Registered domains, filtered."""
        ...

    async def start_scan(self, scope: str, config: RunConfig) -> Run:
        """Create a queued run of the scope (``config`` has its active domains as seeds);
        raises ``ScanConflict`` with the existing run's id if the scope has an active run,
        and creates nothing."""
        ...

    async def apply_scan_results(self, run_id: int) -> ScanSummary | None:
        """Apply the stale lifecycle of a finished scan to its scope's domains, once
        (None if the run has no scope or it was applied already)."""
        ...

    async def list_unapplied_scans(self) -> list[int]:
        """Ids of completed scans whose lifecycle was not applied yet (the worker that
        completed one died before applying it), oldest first."""
        ...

    async def set_schedule(self, scope: str, *, cadence: str, next_run_at: float) -> None:
        """Scan ``scope`` on ``cadence`` (cron syntax), next at ``next_run_at``."""
        ...

    async def list_schedules(self) -> list[Schedule]:
        """Every schedule."""
        ...

    async def advance_schedule(
        self, scope: str, *, next_run_at: float, last_run_id: int | None
    ) -> None:
        """Record a scan started by the schedule and when the next one is due."""
        ...

    async def delete_schedule(self, scope: str) -> bool:
        """Scan ``scope`` on no cadence any more; False if it had no schedule."""
        ...

    async def record_domain_scans(self, run_id: int) -> int:
        """Remember what the ended scan ``run_id`` did on each domain of its scope (pages,
        errors, assets, its terminal status); again later, the numbers are rewritten.
        Returns how many domains; 0 for a run without a scope."""
        ...

    async def latest_domain_scans(self, host: str | None = None) -> list[DomainScan]:
        """Each registered domain's latest recorded scan (or only ``host``'s), by host."""
        ...

    async def domain_history(self, host: str) -> list[DomainScan]:
        """Every recorded scan of ``host``, newest first."""
        ...


class OverviewStore(Protocol):
    """Cheap aggregates for the dashboard, the JSON API, ``/metrics`` and ``sitesync status``.

    Reads only. Totals of pending work come from the runs' counters, never from these.
    """

    async def list_active_runs(self) -> list[Run]:
        """Runs that are queued, running or paused, oldest first."""
        ...

    async def count_outcomes(self, run_id: int) -> list[OutcomeCount]:
        """Finished tasks (completed or failed) of the run by final outcome and HTTP status
        class, most frequent first. One aggregate over the run's tasks."""
        ...

    async def list_redirected(self, run_id: int, *, limit: int = 100) -> list[Task]:
        """Tasks whose fetch followed redirects (``redirects`` not empty), in admission order."""
        ...

    async def pending_by_host(self, run_id: int, *, limit: int = 100) -> list[HostBacklog]:
        """Hosts with pending tasks in the run, most pending first, with the earliest time
        one of them may start."""
        ...

    async def leases_by_worker(self, run_id: int) -> list[WorkerLeases]:
        """Leased (assigned) tasks of the run per worker, with how many leases expired."""
        ...


class Store(
    FrontierStore,
    RunStore,
    DomainStore,
    CoordinationStore,
    SupervisionStore,
    RegistryStore,
    RecordStore,
    OverviewStore,
    Protocol,
):
    """A whole backend."""

    async def close(self) -> None:
        """Release connections and threads. Idempotent."""
        ...
