"""The domain registry, scans of scopes and their schedules on SQLite.

Every method is one transaction on the store's thread, with its SQL in ``registry.sql``.
The stale lifecycle rule itself is
:func:`sitesync.store.domain_lifecycle.lifecycle_changes`, so both backends decide alike.

Registered hosts are bare ``host[:port]`` strings (no scheme, no path), as
:func:`sitesync.urls.url_host` gives them: the scan's seeds carry the scheme.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Mapping, Sequence
from typing import Any

from sitesync.errors import ScanConflict
from sitesync.models import Run, RunConfig, ScanSummary
from sitesync.store._plain import PlainRegistry
from sitesync.store.domain_lifecycle import lifecycle_changes
from sitesync.store.sqlite._db import Q, SqliteDb
from sitesync.store.sqlite._rows import run_from_row


class SqliteRegistry(PlainRegistry[SqliteDb]):
    # -- domains --------------------------------------------------------------------------

    async def import_domains(
        self,
        scope: str,
        hosts: Sequence[str],
        profiles: Mapping[str, Mapping[str, Any] | None] | None = None,
    ) -> int:
        unique = list(dict.fromkeys(hosts))
        params = {"scope": scope, "hosts": json.dumps(unique), "now": self._db.clock()}
        profile_rows = [
            {"host": host, "profile": self._db.json(_table((profiles or {}).get(host)))}
            for host in ([] if profiles is None else unique)
        ]

        def work(conn: sqlite3.Connection) -> int:
            known = conn.execute(Q["count_registered"], params).fetchone()["n"]
            conn.execute(Q["register_domains"], params)
            conn.executemany(Q["set_domain_profile"], profile_rows)
            return len(unique) - int(known)

        return await self._db.transaction(work)

    # -- scans ----------------------------------------------------------------------------

    async def start_scan(
        self, scope: str, config: RunConfig, *, settings: Mapping[str, Any] | None = None
    ) -> Run:
        params = {
            "scope": scope,
            "config": json.dumps(config.to_json()),
            "settings": self._db.json(None if settings is None else dict(settings)),
            "now": self._db.clock(),
        }

        def work(conn: sqlite3.Connection) -> Run:
            try:
                row = conn.execute(Q["insert_scan_run"], params).fetchone()
            except sqlite3.IntegrityError:
                # BEGIN IMMEDIATE serializes writers, so the run that holds the index
                # entry is visible here; raising rolls the (failed) insert back.
                active = conn.execute(Q["select_active_scan"], params).fetchone()
                if active is None:
                    raise
                raise ScanConflict(scope, active["id"]) from None
            return run_from_row(row)

        return await self._db.transaction(work)

    async def apply_scan_results(self, run_id: int) -> ScanSummary | None:
        def work(conn: sqlite3.Connection) -> ScanSummary | None:
            now = self._db.clock()
            claimed = conn.execute(
                Q["claim_scan_results"], {"run_id": run_id, "now": now}
            ).fetchone()
            if claimed is None:
                return None
            rows = conn.execute(
                Q["select_scan_roots"], {"run_id": run_id, "scope": claimed["scope"]}
            ).fetchall()
            summary, updates = lifecycle_changes(run_id, rows, now)
            conn.executemany(Q["update_domain_lifecycle"], updates)
            return summary

        return await self._db.transaction(work)


def _table(profile: Mapping[str, Any] | None) -> dict[str, Any] | None:
    return dict(profile) if profile else None
