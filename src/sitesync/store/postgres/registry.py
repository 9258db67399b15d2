"""The domain registry, scans of scopes and their schedules on PostgreSQL.

SQL in ``registry.sql``, under the same names as the SQLite store's. The stale lifecycle rule is
:func:`sitesync.store.domain_lifecycle.lifecycle_changes`, so both
backends decide alike. Applying a scan locks its run row first, like every write that
touches a run (one lock order), then the scope's domain rows in host order.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from psycopg import errors
from psycopg.types.json import Jsonb

from sitesync.errors import ScanConflict, StoreError
from sitesync.models import Run, RunConfig, ScanSummary
from sitesync.store._plain import PlainRegistry
from sitesync.store.domain_lifecycle import lifecycle_changes
from sitesync.store.postgres._db import (
    Conn,
    PostgresDb,
    Q,
    every,
    hold_run,
    new_create_token,
    one,
    read_run,
)

_ONE_ACTIVE_PER_SCOPE = "runs_one_active_per_scope"
# A conflicting run that ends between our failed insert and the look-up: insert again.
_CONFLICT_ATTEMPTS = 3


class PostgresRegistry(PlainRegistry[PostgresDb]):
    # -- domains --------------------------------------------------------------------------

    async def import_domains(
        self,
        scope: str,
        hosts: Sequence[str],
        profiles: Mapping[str, Mapping[str, Any] | None] | None = None,
    ) -> int:
        unique = list(dict.fromkeys(hosts))  # ON CONFLICT may not touch a row twice
        params = {"scope": scope, "hosts": unique, "now": self._db.clock()}
        profile_rows = [  # in host order, the order register_domains locked the rows in
            {"host": host, "profile": self._db.json(_table((profiles or {}).get(host)))}
            for host in ([] if profiles is None else sorted(unique))
        ]

        async def work(conn: Conn) -> int:
            row = await one(conn, "count_registered", params)
            assert row is not None  # COUNT(*) always yields a row
            await conn.execute(Q["register_domains"], params)
            if profile_rows:
                async with conn.cursor() as cursor:
                    await cursor.executemany(Q["set_domain_profile"], profile_rows)
            return len(unique) - int(row["n"])

        return await self._db.transaction(work)

    # -- scans ----------------------------------------------------------------------------

    async def start_scan(
        self, scope: str, config: RunConfig, *, settings: Mapping[str, Any] | None = None
    ) -> Run:
        params = {
            "scope": scope,
            "config": Jsonb(config.to_json()),
            "settings": self._db.json(None if settings is None else dict(settings)),
            "now": self._db.clock(),
            "create_token": new_create_token(),  # this call's, whatever its attempts
        }

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
                if row is None:  # the first attempt committed; its acknowledgement was lost
                    row = await one(conn, "select_run_by_create_token", params)
                    assert row is not None  # the conflict was on this very token
                run = await read_run(conn, row["id"])
                assert run is not None  # inserted by this transaction, or its first attempt
                return run
            raise StoreError(
                f"scope {scope!r}: could not start a scan (its active run kept changing)"
            )

        return await self._db.transaction(work)

    async def apply_scan_results(self, run_id: int) -> ScanSummary | None:
        async def work(conn: Conn) -> ScanSummary | None:
            if not await hold_run(conn, run_id):
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


def _table(profile: Mapping[str, Any] | None) -> dict[str, Any] | None:
    return dict(profile) if profile else None
