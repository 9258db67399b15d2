"""The domain registry, scans of scopes and their schedules on SQLite.

Mixed into :class:`~sitesync.store.sqlite.store.SqliteStore`: every method is one
transaction on the store's thread, with its SQL in ``registry.sql``. The stale lifecycle
rule itself is :func:`sitesync.store.rules.lifecycle_changes`, so both backends decide
alike.

Registered hosts are bare ``host[:port]`` strings (no scheme, no path), as
:func:`sitesync.urls.url_host` gives them: the scan's seeds carry the scheme.
"""

from __future__ import annotations

import contextlib
import json
import sqlite3
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

from sitesync.errors import ScanConflict
from sitesync.models import Domain, DomainScan, Run, RunConfig, ScanSummary, Schedule
from sitesync.store._rows import domain_scan_from_row, schedule_from_row
from sitesync.store._sql import load_queries
from sitesync.store.rules import lifecycle_changes
from sitesync.store.sqlite._rows import domain_from_row, run_from_row

T = TypeVar("T")

_Q = load_queries("sitesync.store.sqlite", "registry.sql")


class SqliteRegistry:
    if TYPE_CHECKING:
        _clock: Callable[[], float]

        async def _call(self, fn: Callable[..., T], *args: Any) -> T: ...

        def _write(self) -> contextlib.AbstractContextManager[sqlite3.Connection]: ...

        def _errors(self) -> contextlib.AbstractContextManager[None]: ...

        def _connection(self) -> sqlite3.Connection: ...

    # -- domains --------------------------------------------------------------------------

    async def import_domains(self, scope: str, hosts: Sequence[str]) -> int:
        return await self._call(self._import_domains, scope, list(dict.fromkeys(hosts)))

    def _import_domains(self, scope: str, hosts: list[str]) -> int:
        params = {"scope": scope, "hosts": json.dumps(hosts), "now": self._clock()}
        with self._write() as conn:
            known = conn.execute(_Q["count_registered"], params).fetchone()["n"]
            conn.execute(_Q["register_domains"], params)
        return len(hosts) - int(known)

    async def list_domains(
        self,
        *,
        scope: str | None = None,
        stale: bool | None = None,
        active: bool | None = None,
    ) -> list[Domain]:
        params = {"scope": scope, "stale": stale, "active": active}
        return await self._call(self._list_domains, params)

    def _list_domains(self, params: dict[str, Any]) -> list[Domain]:
        with self._errors():
            rows = self._connection().execute(_Q["select_domains"], params).fetchall()
        return [domain_from_row(row) for row in rows]

    # -- scans ----------------------------------------------------------------------------

    async def start_scan(self, scope: str, config: RunConfig) -> Run:
        return await self._call(self._start_scan, scope, config)

    def _start_scan(self, scope: str, config: RunConfig) -> Run:
        params = {"scope": scope, "config": json.dumps(config.to_json()), "now": self._clock()}
        with self._write() as conn:
            try:
                row = conn.execute(_Q["insert_scan_run"], params).fetchone()
            except sqlite3.IntegrityError:
                # BEGIN IMMEDIATE serializes writers, so the run that holds the index
                # entry is visible here; raising rolls the (failed) insert back.
                active = conn.execute(_Q["select_active_scan"], params).fetchone()
                if active is None:
                    raise
                raise ScanConflict(scope, active["id"]) from None
            return run_from_row(row)

    async def apply_scan_results(self, run_id: int) -> ScanSummary | None:
        return await self._call(self._apply_scan_results, run_id)

    def _apply_scan_results(self, run_id: int) -> ScanSummary | None:
        now = self._clock()
        with self._write() as conn:
            claimed = conn.execute(
                _Q["claim_scan_results"], {"run_id": run_id, "now": now}
            ).fetchone()
            if claimed is None:
                return None
            rows = conn.execute(
                _Q["select_scan_roots"], {"run_id": run_id, "scope": claimed["scope"]}
            ).fetchall()
            summary, updates = lifecycle_changes(run_id, rows, now)
            conn.executemany(_Q["update_domain_lifecycle"], updates)
        return summary

    async def list_unapplied_scans(self) -> list[int]:
        return await self._call(self._list_unapplied_scans)

    def _list_unapplied_scans(self) -> list[int]:
        with self._errors():
            rows = self._connection().execute(_Q["select_unapplied_scans"]).fetchall()
        return [row["id"] for row in rows]

    # -- schedules ------------------------------------------------------------------------

    async def set_schedule(self, scope: str, *, cadence: str, next_run_at: float) -> None:
        params = {"scope": scope, "cadence": cadence, "next_run_at": next_run_at}
        await self._call(self._exec_registry, "upsert_schedule", params)

    async def list_schedules(self) -> list[Schedule]:
        return await self._call(self._list_schedules)

    def _list_schedules(self) -> list[Schedule]:
        with self._errors():
            rows = self._connection().execute(_Q["select_schedules"]).fetchall()
        return [schedule_from_row(row) for row in rows]

    async def advance_schedule(
        self, scope: str, *, next_run_at: float, last_run_id: int | None
    ) -> None:
        params = {"scope": scope, "next_run_at": next_run_at, "last_run_id": last_run_id}
        await self._call(self._exec_registry, "advance_schedule", params)

    async def delete_schedule(self, scope: str) -> bool:
        return await self._call(self._delete_schedule, scope)

    def _delete_schedule(self, scope: str) -> bool:
        with self._write() as conn:
            return conn.execute(_Q["delete_schedule"], {"scope": scope}).rowcount > 0

    # -- the registry across scans --------------------------------------------------------

    async def record_domain_scans(self, run_id: int) -> int:
        return await self._call(self._record_domain_scans, run_id)

    def _record_domain_scans(self, run_id: int) -> int:
        with self._write() as conn:
            params = {"run_id": run_id, "now": self._clock()}
            return conn.execute(_Q["record_domain_scans"], params).rowcount

    async def latest_domain_scans(self, host: str | None = None) -> list[DomainScan]:
        return await self._call(self._scans, "select_latest_domain_scans", host)

    async def domain_history(self, host: str) -> list[DomainScan]:
        return await self._call(self._scans, "select_domain_history", host)

    def _scans(self, query: str, host: str | None) -> list[DomainScan]:
        with self._errors():
            rows = self._connection().execute(_Q[query], {"host": host}).fetchall()
        return [domain_scan_from_row(row) for row in rows]

    def _exec_registry(self, query: str, params: dict[str, Any]) -> None:
        with self._write() as conn:
            conn.execute(_Q[query], {**params, "now": self._clock()})
