"""``sitesync status`` and ``sitesync dashboard``'s start-up checks, through the real CLI."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import time
from pathlib import Path

from typer.testing import CliRunner

from sitesync.cli import app
from sitesync.cli.status import EXIT_ATTENTION
from sitesync.models import RunStatus, TaskReport
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


async def runs_needing_attention(db: str) -> tuple[int, int, int]:
    """A run with pending work and no worker (stalled), one whose URLs mostly fail, and one
    started three hours ago (the store's clock moved back, not a sleep)."""
    store = await open_store(db, clock=lambda: time.time() - 3 * 3600)
    try:
        old = await running_run(store)
        await store.add_tasks(old, [task(1, host="old.test")])
    finally:
        await store.close()
    store = await open_store(db)
    try:
        stalled = await running_run(store)
        await store.add_tasks(stalled, [task(n, host="s.test") for n in range(3)])
        failing = await running_run(store, max_retries=1)
        await store.add_tasks(failing, [task(n, host="f.test") for n in range(20)])
        leases = await store.acquire(failing, worker_id="w", limit=20, lease_seconds=60)
        reports = [
            TaskReport(lease=lease, ok=n >= 12, http_status=200 if n >= 12 else 500, error="x")
            for n, lease in enumerate(leases)
        ]
        await store.report(failing, reports)
        return stalled, failing, old
    finally:
        await store.close()


def test_status_check_names_every_run_that_needs_attention_and_exits_4(tmp_path: Path) -> None:
    db = str(tmp_path / "health.db")
    assert run_in_process("migrate", "--db", db).returncode == 0
    quiet = run_in_process("status", "--check", "--db", db)
    assert (quiet.returncode, quiet.stdout.strip()) == (
        0,
        "ok: 0 active runs, none stalled or failing",
    )
    stalled, failing, old = asyncio.run(runs_needing_attention(db))
    checked = run_in_process("status", "--check", "--max-duration", "120", "--db", db,
                             env={"COLUMNS": "1000"})  # fmt: skip
    assert checked.returncode == EXIT_ATTENTION
    [line] = checked.stdout.strip().splitlines()  # one line, as a monitor shows it
    assert line.startswith("attention: ")
    assert f"run {stalled} stalled: no worker has joined" in line
    assert f"run {failing} failing: 60% of 20 finished URLs failed" in line
    assert f"run {old} past its expected end: running for 3 h 0 min, more than 2 h 0 min" in line
    lenient = run_in_process("status", "--check", "--max-failed-share", "0.7", "--db", db)
    assert f"run {failing} failing" not in lenient.stdout and "run" in lenient.stdout
    document = run_in_process("status", "--json", "--db", db)
    assert document.returncode == 0  # --json alone reports; only --check judges by exit code
    assert len(json.loads(document.stdout)["data"]["problems"]) == 3  # stalled x2, failing
