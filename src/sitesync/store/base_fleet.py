"""The store interfaces that let several workers share a run, and keep runs alive.

Part of :mod:`sitesync.store.base`, which re-exports them.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from sitesync.models import (
    Claim,
    ClaimGrant,
    HostState,
    HostStatus,
    Run,
    RunHost,
    WorkerInfo,
)


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
        busy_hosts: Sequence[str] = (),
        min_workers: int = 1,
    ) -> ClaimGrant:
        """One transaction: heartbeat the worker, renew its live claims, drop claims on
        hosts with no work left and surplus claims (over its fair share) where it has
        nothing in flight, then claim free (or expired) hosts with pending work up to that
        share. Returns its claims, oldest first, and the share.

        ``busy_hosts`` are never dropped: hosts where the worker has a request under way or
        waiting for its turn that is no task's (robots.txt, a sitemap, a redirect hop for a
        task of another host). The store sees only tasks; letting such a host go would let
        another worker send it a request while this one's is still in flight.

        The fair share is ceil(hosts with pending work / live workers), at least 1;
        workers whose heartbeat is older than ``worker_ttl`` are not live. ``min_workers``
        counts workers known to be joining (a crawl's helpers, still starting) as live, so
        that the first to claim leaves them their share instead of taking every host.
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

    async def get_host_states(self, hosts: Sequence[str]) -> dict[str, HostState]:
        """The stored politeness state of each of ``hosts`` that has one, in one query."""
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
