"""The domain registry, scans of scopes and their schedules on PostgreSQL.

SQL in ``registry.sql``, under the same names as the SQLite store's. The stale lifecycle rule is
:func:`sitesync.store.rules.lifecycle_changes`, so both
backends decide alike. Applying a scan locks its run row first, like every write that
touches a run (one lock order), then the scope's domain rows in host order.
"""

from __future__ import annotations

from collections.abc import Sequence

from psycopg import errors
from psycopg.types.json import Jsonb

from sitesync.errors import ScanConflict, StoreError
from sitesync.models import Domain, DomainScan, Run, RunConfig, ScanSummary, Schedule
from sitesync.store._rows import domain_scan_from_row, schedule_from_row
from sitesync.store.postgres._db import Conn, PostgresArea, Q, every, lock_run, one
from sitesync.store.postgres._rows import domain_from_row, run_from_row
from sitesync.store.rules import lifecycle_changes

_ONE_ACTIVE_PER_SCOPE = "runs_one_active_per_scope"
# A conflicting run that ends between our failed insert and the look-up: insert again.
_CONFLICT_ATTEMPTS = 3


class PostgresRegistry(PostgresArea):
    # -- domains --------------------------------------------------------------------------

    async def import_domains(self, scope: str, hosts: Sequence[str]) -> int:
        unique = list(dict.fromkeys(hosts))  # ON CONFLICT may not touch a row twice
        params = {"scope": scope, "hosts": unique, "now": self._db.clock()}

        async def work(conn: Conn) -> int:
            row = await one(conn, "count_registered", params)
            assert row is not None  # COUNT(*) always yields a row
            await conn.execute(Q["register_domains"], params)
            return len(unique) - int(row["n"])

        return await self._db.transaction(work)

    async def list_domains(
        self,
        *,
        scope: str | None = None,
        stale: bool | None = None,
        active: bool | None = None,
    ) -> list[Domain]:
        params = {"scope": scope, "stale": stale, "active": active}
        return [domain_from_row(row) for row in await self._db.rows("select_domains", params)]

    # -- scans ----------------------------------------------------------------------------

    async def start_scan(self, scope: str, config: RunConfig) -> Run:
        params = {"scope": scope, "config": Jsonb(config.to_json()), "now": self._db.clock()}

        async def work(conn: Conn) -> Run:
            for _ in range(_CONFLICT_ATTEMPTS):
                try:
                    # A savepoint: the violation must leave the transaction usable for
                    # the look-up below.
                    async with conn.transaction():
                        row = await one(conn, "insert_scan_run", params)
                except errors.UniqueViolation as exc:
                    if exc.diag.constraint_name != _ONE_ACTIVE_PER_SCOPE:
                        raise
                    # READ COMMITTED: this statement sees the run that won the index entry.
                    active = await one(conn, "select_active_scan", params)
                    if active is not None:
                        raise ScanConflict(scope, active["id"]) from None
                    continue
                assert row is not None  # INSERT ... RETURNING always yields the row
                return run_from_row(row)
            raise StoreError(
                f"scope {scope!r}: could not start a scan (its active run kept changing)"
            )

        return await self._db.transaction(work)

    async def apply_scan_results(self, run_id: int) -> ScanSummary | None:
        async def work(conn: Conn) -> ScanSummary | None:
            if await lock_run(conn, run_id) is None:
                return None
            now = self._db.clock()
            params = {"run_id": run_id, "now": now}
            claimed = await one(conn, "claim_scan_results", params)
            if claimed is None:
                return None
            roots_params = {"run_id": run_id, "scope": claimed["scope"]}
            rows = await every(conn, "select_scan_roots", roots_params)
            summary, updates = lifecycle_changes(run_id, rows, now)
            if updates:
                async with conn.cursor() as cursor:
                    await cursor.executemany(Q["update_domain_lifecycle"], updates)
            return summary

        return await self._db.transaction(work)

    async def list_unapplied_scans(self) -> list[int]:
        return [row["id"] for row in await self._db.rows("select_unapplied_scans")]

    # -- schedules ------------------------------------------------------------------------

    async def set_schedule(self, scope: str, *, cadence: str, next_run_at: float) -> None:
        params = {"scope": scope, "cadence": cadence, "next_run_at": next_run_at}
        await self._db.execute("upsert_schedule", params)

    async def list_schedules(self) -> list[Schedule]:
        return [schedule_from_row(row) for row in await self._db.rows("select_schedules")]

    async def advance_schedule(
        self, scope: str, *, next_run_at: float, last_run_id: int | None
    ) -> None:
        params = {"scope": scope, "next_run_at": next_run_at, "last_run_id": last_run_id}
        await self._db.execute("advance_schedule", params)

    async def delete_schedule(self, scope: str) -> bool:
        return await self._db.execute("delete_schedule", {"scope": scope}) > 0

    # -- the registry across scans --------------------------------------------------------

    async def record_domain_scans(self, run_id: int) -> int:
        return await self._db.execute("record_domain_scans", {"run_id": run_id})

    async def latest_domain_scans(self, host: str | None = None) -> list[DomainScan]:
        rows = await self._db.rows("select_latest_domain_scans", {"host": host})
        return [domain_scan_from_row(row) for row in rows]

    async def domain_history(self, host: str) -> list[DomainScan]:
        rows = await self._db.rows("select_domain_history", {"host": host})
        return [domain_scan_from_row(row) for row in rows]
