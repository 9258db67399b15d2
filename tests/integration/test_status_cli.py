"""``sitesync status`` and ``sitesync dashboard``'s start-up checks, through the real CLI."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from pathlib import Path

from typer.testing import CliRunner

from sitesync.cli import app
from sitesync.models import RunStatus
from sitesync.store import open_store
from tests.acceptance._cli import run_in_process
from tests.contract.test_frontier_store import running_run, task


async def two_active_runs(db: str) -> tuple[int, int]:
    store = await open_store(db)
    try:
        waiting = await running_run(store)
        await store.add_tasks(waiting, [task(n) for n in range(12)])
        paused = await running_run(store)
        await store.add_tasks(paused, [task(n, host="b.test") for n in range(3)])
        await store.transition_run(paused, RunStatus.PAUSED)
        return waiting, paused
    finally:
        await store.close()


def test_status_shows_active_runs_pending_work_and_why_they_are_idle(tmp_path: Path) -> None:
    db = str(tmp_path / "status.db")
    waiting, paused = asyncio.run(two_active_runs(db))
    result = CliRunner().invoke(app, ["status", "--db", db], env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    out = result.output
    assert "active runs" in out and "pending across active runs: 15 (0 in flight)" in out
    assert f"no worker has joined: start one with 'sitesync worker --run {waiting}'" in out
    assert "paused by a user at " in out
    lines = [line for line in out.splitlines() if line.strip().startswith(("│", "┃"))]
    assert any(f" {paused} " in line and "paused" in line for line in lines)


def test_status_of_an_empty_store_says_so(tmp_path: Path) -> None:
    db = str(tmp_path / "empty.db")
    assert CliRunner().invoke(app, ["migrate", "--db", db]).exit_code == 0
    result = CliRunner().invoke(app, ["status", "--db", db])
    assert result.exit_code == 0 and "no active run" in result.output


def test_status_of_a_mistyped_store_is_an_error_not_an_all_clear(tmp_path: Path) -> None:
    db = tmp_path / "typo" / "x.db"
    result = run_in_process("status", "--db", str(db))
    assert result.returncode == 1 and f"error: no store at {db}" in result.stderr
    assert not db.parent.exists()  # reading created nothing


def test_the_dashboard_refuses_to_listen_beyond_loopback_without_a_token(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("SITESYNC_")}
    result = subprocess.run(
        [sys.executable, "-m", "sitesync", "dashboard", "--host", "0.0.0.0"],
        capture_output=True,
        text=True,
        env={**env, "SITESYNC_DB": str(tmp_path / "d.db"), "COLUMNS": "300"},
        timeout=60,
    )
    assert result.returncode == 1
    assert result.stderr.strip().splitlines() == [
        "error: dashboard_host 0.0.0.0 is not a loopback address: set dashboard_token "
        "(--token / SITESYNC_DASHBOARD_TOKEN) to expose the dashboard"
    ]
