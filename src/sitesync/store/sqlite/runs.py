"""Runs and their lifecycle, and the domains their roots redirect to, on SQLite.

SQL in ``runs.sql``; the decisions (which transitions the run table allows, how hosts and
aliases accumulate) in :mod:`sitesync.store.rules`.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

from sitesync.errors import RunNotFound
from sitesync.frontier.transitions import RUN_CREATED_AS
from sitesync.models import Domain, Run, RunConfig, RunStatus
from sitesync.store._plain import PlainRuns
from sitesync.store.rules import (
    extended_hosts,
    merged_aliases,
    settings_change,
    transition_params,
)
from sitesync.store.sqlite._db import Q, SqliteDb
from sitesync.store.sqlite._rows import domain_from_row, run_from_row


class SqliteRuns(PlainRuns[SqliteDb]):
    async def create_run(
        self, config: RunConfig, *, settings: Mapping[str, Any] | None = None
    ) -> Run:
        params = {
            "status": RUN_CREATED_AS.value,
            "config": json.dumps(config.to_json()),
            "settings": self._db.json(None if settings is None else dict(settings)),
            "now": self._db.clock(),
        }

        def work(conn: sqlite3.Connection) -> Run:
            return select_run(conn, conn.execute(Q["insert_run"], params).fetchone()[0])

        return await self._db.transaction(work)

    async def transition_run(self, run_id: int, to: RunStatus, *, reason: str | None = None) -> Run:
        def work(conn: sqlite3.Connection) -> Run:
            params = transition_params(select_run(conn, run_id), to, reason, self._db.clock())
            conn.execute(Q["update_run_status"], params)
            return select_run(conn, run_id)

        return await self._db.transaction(work)

    async def change_run_settings(self, run_id: int, changes: Mapping[str, Any]) -> Run:
        def work(conn: sqlite3.Connection) -> Run:
            run = select_run(conn, run_id)
            plan = settings_change(run, changes)
            if plan is None:
                return run
            now, params = self._db.clock(), {"run_id": run_id, "version": run.settings_version}
            conn.execute(
                Q["update_run_settings"], {**params, "settings": json.dumps(plan.settings)}
            )
            for name, old, new in plan.changed:
                conn.execute(Q["insert_setting_change"], {
                    "run_id": run_id, "version": plan.version, "name": name,
                    "old_value": json.dumps(old), "new_value": json.dumps(new), "now": now,
                })  # fmt: skip
            return select_run(conn, run_id)

        return await self._db.transaction(work)

    async def extend_scope(self, run_id: int, hosts: Sequence[str]) -> Run:
        def work(conn: sqlite3.Connection) -> Run:
            run = select_run(conn, run_id)
            extra = extended_hosts(run.config.extra_hosts, hosts)
            if extra is None:
                return run
            config = json.dumps(replace(run.config, extra_hosts=extra).to_json())
            conn.execute(Q["update_run_config"], {"run_id": run_id, "config": config})
            return select_run(conn, run_id)

        return await self._db.transaction(work)

    # -- domains ----------------------------------------------------------------------------

    async def record_root_redirect(
        self, host: str, *, canonical_host: str, aliases: Sequence[str]
    ) -> Domain:
        def work(conn: sqlite3.Connection) -> Domain:
            row = conn.execute(Q["select_domain"], {"host": host}).fetchone()
            known = json.loads(row["aliases"]) if row is not None else []
            params = {
                "host": host,
                "canonical_host": canonical_host,
                "aliases": json.dumps(merged_aliases(known, aliases, canonical_host)),
                "now": self._db.clock(),
            }
            conn.execute(Q["upsert_domain_redirect"], params)
            return domain_from_row(conn.execute(Q["select_domain"], {"host": host}).fetchone())

        return await self._db.transaction(work)


def select_run(conn: sqlite3.Connection, run_id: int) -> Run:
    """The run, read in the caller's transaction; raises ``RunNotFound``."""
    row = conn.execute(Q["select_run"], {"run_id": run_id}).fetchone()
    if row is None:
        raise RunNotFound(f"no run with id {run_id}")
    return run_from_row(row)
