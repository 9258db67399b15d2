"""Store calls that are one named query on every backend, written once for both.

Both backends name their queries alike and their plumbing objects offer the same two
one-query calls (:class:`~sitesync.store._area.Plumbing`: ``rows`` and ``execute``), so a
call that is one read or one write needs no code of its own in a backend: its areas inherit
these. What a backend does its own way (several statements in one transaction, the
PostgreSQL row locks, JSON columns) stays in the backend.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any, TypeVar

from sitesync.errors import RunNotFound
from sitesync.models import (
    Attempt,
    Claim,
    Domain,
    DomainScan,
    HostAssets,
    HostBacklog,
    HostState,
    HostStatus,
    OutcomeCount,
    RecordVersion,
    Run,
    RunHost,
    Schedule,
    SettingChange,
    Task,
    TaskState,
    WorkerInfo,
    WorkerLeases,
)
from sitesync.store._area import Area, Plumbing
from sitesync.store._records import assets_from_row, decompress
from sitesync.store._rows import (
    attempt_from_row,
    claim_from_row,
    domain_scan_from_row,
    host_state_from_row,
    run_host_from_row,
    worker_from_row,
)

P = TypeVar("P", bound=Plumbing)


class PlainRuns(Area[P]):
    """Runs and domains: the calls that are one query each."""

    async def get_run(self, run_id: int) -> Run:
        rows = await self._db.rows("select_run", {"run_id": run_id})
        if not rows:
            raise RunNotFound(f"no run with id {run_id}")
        return self._db.decode.run(rows[0])

    async def list_runs(self, *, limit: int = 50) -> list[Run]:
        rows = await self._db.rows("select_runs", {"limit": limit})
        return [self._db.decode.run(row) for row in rows]

    async def mark_seeded(self, run_id: int) -> None:
        await self._db.execute("mark_seeded", {"run_id": run_id})

    async def complete_if_drained(self, run_id: int) -> bool:
        return await self._db.execute("complete_run_if_drained", {"run_id": run_id}) == 1

    async def get_domain(self, host: str) -> Domain | None:
        rows = await self._db.rows("select_domain", {"host": host})
        return self._db.decode.domain(rows[0]) if rows else None

    async def list_setting_changes(self, run_id: int) -> list[SettingChange]:
        rows = await self._db.rows("select_setting_changes", {"run_id": run_id})
        return [self._db.decode.setting_change(row) for row in rows]

    async def get_domains(self, hosts: Sequence[str]) -> dict[str, Domain]:
        rows = await self._db.rows("select_domains_of_hosts", {"hosts": self._db.text_list(hosts)})
        domains = (self._db.decode.domain(row) for row in rows)
        return {domain.host: domain for domain in domains}


class TaskReads(Area[P]):
    """Reads of a run's tasks."""

    async def get_task(self, run_id: int, url: str) -> Task | None:
        rows = await self._db.rows("select_task", {"run_id": run_id, "url": url})
        return self._db.decode.task(rows[0]) if rows else None

    async def list_tasks(
        self, run_id: int, *, state: TaskState | None = None, limit: int = 1000
    ) -> list[Task]:
        params = {"run_id": run_id, "state": None if state is None else state.value, "limit": limit}
        return [self._db.decode.task(row) for row in await self._db.rows("select_tasks", params)]

    async def count_tasks(self, run_id: int) -> dict[TaskState, int]:
        counts = dict.fromkeys(TaskState, 0)
        for row in await self._db.rows("count_by_state", {"run_id": run_id}):
            counts[TaskState(row["state"])] = row["n"]
        return counts

    async def list_attempts(self, task_id: int) -> list[Attempt]:
        rows = await self._db.rows("select_attempts", {"task_id": task_id})
        return [attempt_from_row(row) for row in rows]


class PlainCoordination(Area[P]):
    """Workers, claims and host state: the calls that are one query each."""

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
        params = {"worker_id": worker_id, "host": host, "pid": pid, "run_id": run_id,
                  "boot_id": boot_id, "proc_start": proc_start}  # fmt: skip
        await self._db.execute("upsert_worker", params)

    async def stop_worker(self, worker_id: str) -> None:
        await self._db.execute("stop_worker", {"worker_id": worker_id})

    async def list_workers(self, run_id: int) -> list[WorkerInfo]:
        rows = await self._db.rows("select_workers", {"run_id": run_id})
        return [worker_from_row(row) for row in rows]

    async def release_claims(self, run_id: int, *, worker_id: str) -> int:
        params = {"run_id": run_id, "worker_id": worker_id}
        return await self._db.execute("release_claims", params, run_id=run_id)

    async def list_claims(self, run_id: int) -> list[Claim]:
        return [
            claim_from_row(row) for row in await self._db.rows("select_claims", {"run_id": run_id})
        ]

    async def get_host_state(self, host: str) -> HostState | None:
        rows = await self._db.rows("select_host_state", {"host": host})
        return host_state_from_row(rows[0]) if rows else None

    async def get_host_states(self, hosts: Sequence[str]) -> dict[str, HostState]:
        rows = await self._db.rows("select_host_states", {"hosts": self._db.text_list(hosts)})
        states = (host_state_from_row(row) for row in rows)
        return {state.host: state for state in states}

    async def save_host_pause(self, host: str, *, until: float) -> None:
        await self._db.execute("save_host_pause", {"host": host, "until": until})

    async def save_host_pace(
        self, host: str, *, delay: float, concurrency: int, reason: str, since: float
    ) -> None:
        params = {
            "host": host, "delay": delay, "concurrency": concurrency, "reason": reason,
            "since": since,
        }  # fmt: skip
        await self._db.execute("save_host_pace", params)

    async def save_host_robots(
        self, host: str, *, origin: str, status: int, body: str | None, expires_at: float
    ) -> None:
        params = {
            "host": host, "origin": origin, "status": status, "body": body,
            "expires_at": expires_at,
        }  # fmt: skip
        await self._db.execute("save_host_robots", params)

    async def set_host_status(self, run_id: int, host: str, status: HostStatus) -> None:
        params = {"run_id": run_id, "host": host, "status": status.value}
        await self._db.execute("set_host_status", params, run_id=run_id)

    async def list_run_hosts(self, run_id: int) -> list[RunHost]:
        rows = await self._db.rows("select_run_hosts", {"run_id": run_id})
        return [run_host_from_row(row) for row in rows]

    async def get_run_host(self, run_id: int, host: str) -> RunHost | None:
        rows = await self._db.rows("select_run_host", {"run_id": run_id, "host": host})
        return run_host_from_row(rows[0]) if rows else None

    async def save_host_failures(self, run_id: int, host: str, *, failures: int) -> None:
        params = {"run_id": run_id, "host": host, "failures": failures}
        await self._db.execute("save_host_failures", params, run_id=run_id)


class PlainRecords(Area[P]):
    """Reads of versioned records: one query each."""

    async def record_history(self, key: str) -> list[RecordVersion]:
        rows = await self._db.rows("select_history", {"key": key})
        return [self._db.decode.version(row) for row in rows]

    async def records_of_run(self, run_id: int, *, kind: str | None = None) -> list[RecordVersion]:
        rows = await self._db.rows("select_run_records", {"run_id": run_id, "kind": kind})
        return [self._db.decode.version(row) for row in rows]

    async def records_of_task(self, run_id: int, task_id: int) -> list[RecordVersion]:
        params = {"run_id": run_id, "task_id": task_id}
        rows = await self._db.rows("select_task_records", params)
        return [self._db.decode.version(row) for row in rows]

    async def pages_linking_to(self, run_id: int, url: str, *, limit: int = 5) -> list[str]:
        params = {"run_id": run_id, "url": url, "limit": limit}
        return [row["url"] for row in await self._db.rows("select_pages_linking_to", params)]

    async def get_body(self, content_hash: str) -> bytes | None:
        rows = await self._db.rows("select_body", {"content_hash": content_hash})
        return decompress(rows[0]["compression"], rows[0]["data"]) if rows else None

    async def run_assets(self, run_id: int) -> list[HostAssets]:
        rows = await self._db.rows("select_run_assets", {"run_id": run_id})
        return [assets_from_row(row) for row in rows]


class PlainRegistry(Area[P]):
    """Schedules and remembered domain scans: the calls that are one query each."""

    async def list_domains(
        self,
        *,
        scope: str | None = None,
        stale: bool | None = None,
        active: bool | None = None,
    ) -> list[Domain]:
        params = {"scope": scope, "stale": stale, "active": active}
        return [
            self._db.decode.domain(row) for row in await self._db.rows("select_domains", params)
        ]

    async def domain_profiles(self, scope: str) -> dict[str, dict[str, Any]]:
        rows = await self._db.rows("select_domain_profiles", {"scope": scope})
        # jsonb arrives decoded from PostgreSQL, JSON text from SQLite
        return {
            row["host"]: dict(
                row["request_profile"]
                if isinstance(row["request_profile"], Mapping)
                else json.loads(row["request_profile"])
            )
            for row in rows
        }

    async def list_unapplied_scans(self) -> list[int]:
        return [row["id"] for row in await self._db.rows("select_unapplied_scans")]

    async def set_schedule(
        self,
        scope: str,
        *,
        cadence: str,
        next_run_at: float,
        settings: Mapping[str, Any] | None = None,
    ) -> None:
        params = {
            "scope": scope,
            "cadence": cadence,
            "next_run_at": next_run_at,
            "settings": self._db.json(None if settings is None else dict(settings)),
        }
        await self._db.execute("upsert_schedule", params)

    async def list_schedules(self) -> list[Schedule]:
        return [self._db.decode.schedule(row) for row in await self._db.rows("select_schedules")]

    async def advance_schedule(
        self, scope: str, *, next_run_at: float, last_run_id: int | None
    ) -> None:
        params = {"scope": scope, "next_run_at": next_run_at, "last_run_id": last_run_id}
        await self._db.execute("advance_schedule", params)

    async def delete_schedule(self, scope: str) -> bool:
        return await self._db.execute("delete_schedule", {"scope": scope}) > 0

    async def record_domain_scans(self, run_id: int) -> int:
        return await self._db.execute("record_domain_scans", {"run_id": run_id})

    async def latest_domain_scans(self, host: str | None = None) -> list[DomainScan]:
        return await self._scans("select_latest_domain_scans", host)

    async def domain_history(self, host: str) -> list[DomainScan]:
        return await self._scans("select_domain_history", host)

    async def _scans(self, query: str, host: str | None) -> list[DomainScan]:
        return [domain_scan_from_row(row) for row in await self._db.rows(query, {"host": host})]


class PlainSupervision(Area[P]):
    """Heartbeats and idle runs: the calls that are one query each."""

    async def heartbeat_run(self, run_id: int) -> None:
        await self._db.execute("heartbeat_run", {"run_id": run_id})

    async def find_inactive_runs(self, *, idle_seconds: float) -> list[Run]:
        params = {"idle_before": self._db.clock() - idle_seconds}
        rows = await self._db.rows("select_inactive_runs", params)
        return [self._db.decode.run(row) for row in rows]


class PlainOverview(Area[P]):
    """The read models of the dashboard, the API and ``/metrics``: one query each."""

    async def list_active_runs(self) -> list[Run]:
        return [self._db.decode.run(row) for row in await self._db.rows("select_active_runs")]

    async def count_outcomes(self, run_id: int) -> list[OutcomeCount]:
        rows = await self._db.rows("count_outcomes", {"run_id": run_id})
        return [OutcomeCount(row["outcome"], row["status_class"], row["tasks"]) for row in rows]

    async def list_redirected(self, run_id: int, *, limit: int = 100) -> list[Task]:
        rows = await self._db.rows("select_redirected", {"run_id": run_id, "limit": limit})
        return [self._db.decode.task(row) for row in rows]

    async def pending_by_host(self, run_id: int, *, limit: int = 100) -> list[HostBacklog]:
        rows = await self._db.rows("pending_by_host", {"run_id": run_id, "limit": limit})
        return [HostBacklog(row["host"], int(row["pending"])) for row in rows]

    async def leases_by_worker(self, run_id: int) -> list[WorkerLeases]:
        params = {"run_id": run_id, "now": self._db.clock()}
        return [
            WorkerLeases(
                row["worker_id"], row["tasks"], int(row["expired"]), float(row["earliest_expiry"])
            )
            for row in await self._db.rows("leases_by_worker", params)
        ]
