"""Runs and their lifecycle, and the domains their roots redirect to, on PostgreSQL.

SQL in ``runs.sql``; the decisions (which transitions the run table allows, how hosts and
aliases accumulate) in :mod:`sitesync.store.rules`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

from psycopg.types.json import Jsonb

from sitesync.frontier.transitions import RUN_CREATED_AS
from sitesync.models import Domain, Run, RunConfig, RunStatus
from sitesync.store._plain import PlainRuns
from sitesync.store.postgres import budget
from sitesync.store.postgres._db import (
    Conn,
    PostgresDb,
    Q,
    new_create_token,
    one,
    read_run,
    require_run,
)
from sitesync.store.postgres._rows import domain_from_row
from sitesync.store.rules import (
    extended_hosts,
    merged_aliases,
    settings_change,
    transition_params,
)


class PostgresRuns(PlainRuns[PostgresDb]):
    async def create_run(
        self, config: RunConfig, *, settings: Mapping[str, Any] | None = None
    ) -> Run:
        token = new_create_token()  # this call's, whatever its attempts

        async def work(conn: Conn) -> Run:
            params = {
                "status": RUN_CREATED_AS.value,
                "config": Jsonb(config.to_json()),
                "settings": self._db.json(None if settings is None else dict(settings)),
                "now": self._db.clock(),
                "create_token": token,
            }
            row = await one(conn, "insert_run", params)
            if row is None:  # the first attempt committed; its acknowledgement was lost
                made = await one(conn, "select_run_by_create_token", params)
                assert made is not None  # the conflict was on this very token
                return await _read(conn, made["id"])
            if config.max_pages is not None:
                await budget.create(conn, row["id"], config.max_pages)
            return await _read(conn, row["id"])

        return await self._db.transaction(work)

    async def change_run_settings(self, run_id: int, changes: Mapping[str, Any]) -> Run:
        async def work(conn: Conn) -> Run:
            run = await require_run(conn, run_id)
            plan = settings_change(run, changes)
            if plan is None:  # nothing to change (or a replay whose commit went through)
                return run
            now, params = self._db.clock(), {"run_id": run_id, "version": run.settings_version}
            await conn.execute(
                Q["update_run_settings"], {**params, "settings": Jsonb(plan.settings)}
            )
            for name, old, new in plan.changed:
                await conn.execute(Q["insert_setting_change"], {
                    "run_id": run_id, "version": plan.version, "name": name,
                    "old_value": Jsonb(old), "new_value": Jsonb(new), "now": now,
                })  # fmt: skip
            return await _read(conn, run_id)

        return await self._db.transaction(work)

    async def transition_run(self, run_id: int, to: RunStatus, *, reason: str | None = None) -> Run:
        replay = False

        async def work(conn: Conn) -> Run:
            nonlocal replay
            current = await require_run(conn, run_id)
            if replay and current.status is to:
                return current  # the first attempt committed; its acknowledgement was lost
            replay = True
            params = transition_params(current, to, reason, self._db.clock())
            row = await one(conn, "update_run_status", params)
            assert row is not None  # the run row is locked: its status cannot have moved
            return await _read(conn, run_id)

        return await self._db.transaction(work)

    async def extend_scope(self, run_id: int, hosts: Sequence[str]) -> Run:
        async def work(conn: Conn) -> Run:
            run = await require_run(conn, run_id)
            extra = extended_hosts(run.config.extra_hosts, hosts)
            if extra is None:
                return run
            config = replace(run.config, extra_hosts=extra)
            params = {"run_id": run_id, "config": Jsonb(config.to_json())}
            row = await one(conn, "update_run_config", params)
            assert row is not None  # the run row is locked: it still exists
            return await _read(conn, run_id)

        return await self._db.transaction(work)

    # -- domains ----------------------------------------------------------------------------

    async def record_root_redirect(
        self, host: str, *, canonical_host: str, aliases: Sequence[str]
    ) -> Domain:
        async def work(conn: Conn) -> Domain:
            params = {
                "host": host,
                "canonical_host": canonical_host,
                # The aliases already known are merged in by the upsert itself.
                "aliases": merged_aliases((), aliases, canonical_host),
                "now": self._db.clock(),
            }
            row = await one(conn, "upsert_domain_redirect", params)
            assert row is not None  # an upsert with RETURNING always yields the row
            return domain_from_row(row)

        return await self._db.transaction(work)


async def _read(conn: Conn, run_id: int) -> Run:
    """The run as the caller's transaction just wrote it (counters folded by run_view)."""
    run = await read_run(conn, run_id)
    assert run is not None  # written in this transaction: it exists
    return run
