"""The domain registry, scans of scopes and their schedules on SQLite.

Mixed into :class:`~sitesync.store.sqlite.store.SqliteStore`: every method is one
transaction on the store's thread, with its SQL in ``registry.sql``. The stale lifecycle
rule itself (:func:`lifecycle_changes`) is plain Python shared with the PostgreSQL store,
so both backends decide alike.

Registered hosts are bare ``host[:port]`` strings (no scheme, no path), as
:func:`sitesync.urls.url_host` gives them: the scan's seeds carry the scheme.
"""

from __future__ import annotations

import contextlib
import json
import sqlite3
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

from sitesync.errors import ScanConflict
from sitesync.models import Domain, DomainScan, Run, RunConfig, ScanSummary, Schedule
from sitesync.store._rows import domain_scan_from_row
from sitesync.store._sql import load_queries

T = TypeVar("T")

_Q = load_queries("sitesync.store.sqlite", "registry.sql")

#: Outcomes that mean the site did not answer at all (SPEC H2).
UNREACHABLE_OUTCOMES = frozenset({"unreachable", "timeout"})


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
        # Imported here: store.py imports this module for its class declaration.
        from sitesync.store.sqlite.store import _domain_from_row

        with self._errors():
            rows = self._connection().execute(_Q["select_domains"], params).fetchall()
        return [_domain_from_row(row) for row in rows]

    # -- scans ----------------------------------------------------------------------------

    async def start_scan(self, scope: str, config: RunConfig) -> Run:
        return await self._call(self._start_scan, scope, config)

    def _start_scan(self, scope: str, config: RunConfig) -> Run:
        from sitesync.store.sqlite.store import _run_from_row

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
            return _run_from_row(row)

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


def root_reachable(
    state: str, outcome: str | None, http_status: int | None, site_blocked: bool
) -> bool:
    """Whether a finished root task shows its site answering.

    A root that failed as ``unreachable`` or ``timeout``, or failed with no HTTP response at
    all (robots.txt unreachable until the retries ran out), did not answer. A robots.txt
    that answered and disallows the whole site (the run marked the host ``blocked``) is an
    answer, and so is any HTTP status, an error page included.
    """
    if state != "failed":
        return True
    if outcome in UNREACHABLE_OUTCOMES:
        return False
    return http_status is not None or site_blocked


def lifecycle_changes(
    run_id: int, rows: Iterable[Mapping[str, Any]], now: float
) -> tuple[ScanSummary, list[dict[str, Any]]]:
    """The stale lifecycle (SPEC S2) for the roots a scan finished: what it did, and the
    parameters of ``update_domain_lifecycle`` for each domain.

    Reachable: stale and streak reset. First unreachable scan: stale, streak 1, still
    active. Second consecutive (streak 2 or more): out of the active scan set.
    """
    seen: dict[str, tuple[bool, int, bool]] = {}  # host -> (active, streak, reachable)
    for row in rows:
        host = row["host"]
        reachable = root_reachable(
            row["state"], row["outcome"], row["http_status"], bool(row["site_blocked"])
        )
        if host in seen:  # several roots (seeds) on one host: any answer counts
            reachable = reachable or seen[host][2]
        seen[host] = (bool(row["active"]), int(row["unreachable_streak"]), reachable)
    ok: list[str] = []
    stale: list[str] = []
    deactivated: list[str] = []
    updates: list[dict[str, Any]] = []
    for host, (active, streak, reachable) in seen.items():
        if reachable:
            ok.append(host)
            streak, is_stale = 0, False
        else:
            streak, is_stale = streak + 1, True
            if streak == 1:
                stale.append(host)
            elif active:
                deactivated.append(host)
            active = active and streak < 2
        updates.append({"host": host, "active": active, "stale": is_stale, "streak": streak,
                        "run_id": run_id, "now": now})  # fmt: skip
    summary = ScanSummary(
        run_id=run_id,
        reachable=tuple(ok),
        newly_stale=tuple(stale),
        deactivated=tuple(deactivated),
    )
    return summary, updates


def schedule_from_row(row: Mapping[str, Any]) -> Schedule:
    return Schedule(
        scope=row["scope"],
        cadence=row["cadence"],
        next_run_at=row["next_run_at"],
        last_run_id=row["last_run_id"],
    )
