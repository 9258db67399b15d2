"""The store interfaces of records, the domain registry and the read models.

Part of :mod:`sitesync.store.base`, which re-exports them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Protocol

from sitesync.models import (
    Domain,
    DomainScan,
    HostAssets,
    HostBacklog,
    OutcomeCount,
    RecordVersion,
    Run,
    RunConfig,
    RunDiff,
    ScanSummary,
    Schedule,
    Task,
    WorkerLeases,
)


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


class RegistryStore(Protocol):
    """Registered domains grouped in scopes, their scans (remembered per domain) and
    schedules."""

    async def import_domains(
        self,
        scope: str,
        hosts: Sequence[str],
        profiles: Mapping[str, Mapping[str, Any] | None] | None = None,
    ) -> int:
        """Register hosts in ``scope`` (active; a known host moves to the scope).
        ``profiles``: each host's own request profile (a ``[sites."HOST"]`` table; None or
        absent clears it), from a file with profile columns; None keeps every host's as it
        is. Returns how many were new."""
        ...

    async def domain_profiles(self, scope: str) -> dict[str, dict[str, Any]]:
        """The request profile of each active domain of ``scope`` that has one, by host:
        what a scan of the scope records in its run's ``sites`` setting."""
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

    async def start_scan(
        self, scope: str, config: RunConfig, *, settings: Mapping[str, Any] | None = None
    ) -> Run:
        """Create a queued run of the scope (``config`` has its active domains as seeds)
        with these settings; raises ``ScanConflict`` with the existing run's id if the scope
        has an active run, and creates nothing."""
        ...

    async def apply_scan_results(self, run_id: int) -> ScanSummary | None:
        """Apply the stale lifecycle of a finished scan to its scope's domains, once
        (None if the run has no scope or it was applied already)."""
        ...

    async def list_unapplied_scans(self) -> list[int]:
        """Ids of completed scans whose lifecycle was not applied yet (the worker that
        completed one died before applying it), oldest first."""
        ...

    async def set_schedule(
        self,
        scope: str,
        *,
        cadence: str,
        next_run_at: float,
        settings: Mapping[str, Any] | None = None,
    ) -> None:
        """Scan ``scope`` on ``cadence`` (cron syntax), next at ``next_run_at``, each scan
        created with ``settings``."""
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
        """Hosts with pending tasks in the run, most pending first (from the hosts-with-work
        counts: its cost follows the hosts, not the pending tasks)."""
        ...

    async def leases_by_worker(self, run_id: int) -> list[WorkerLeases]:
        """Leased (assigned) tasks of the run per worker, with how many leases expired."""
        ...
