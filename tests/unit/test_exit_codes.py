"""Every exit code of docs/operating.md's table, produced by the real CLI (in this process).

75 (store unavailable), 130 (Ctrl-C) and 143 (SIGTERM) need a real process and a real
signal or outage: tests/faults/test_store_faults.py, tests/acceptance/test_crash_and_stop.py
and tests/acceptance/test_crawl_processes.py assert them.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

from sitesync.config import load_settings
from sitesync.errors import ExitCode
from sitesync.models import RunConfig
from sitesync.run_settings import snapshot
from sitesync.store import open_store
from tests.acceptance._cli import run_in_process
from tests.contract.test_frontier_store import running_run, task


def test_each_code_a_command_can_give_without_a_signal(tmp_path: Path) -> None:
    db = str(tmp_path / "codes.db")
    assert run_in_process("--version").returncode == ExitCode.OK
    assert run_in_process("status", "--db", db).returncode == ExitCode.ERROR  # no store
    assert run_in_process("status", "--no-such-flag").returncode == ExitCode.USAGE
    assert run_in_process("migrate", "--db", db).returncode == ExitCode.OK

    async def store_with_a_stalled_run_and_a_scan() -> None:
        store = await open_store(db)
        try:
            stalled = await running_run(store)
            await store.add_tasks(stalled, [task(1)])
            await store.import_domains("fr", ["a.example"])
            await store.start_scan("fr", RunConfig(seeds=("https://a.example/",)))
            recorded = snapshot(load_settings(), plugins=["page", "no_such_plugin"])
            await store.create_run(RunConfig(seeds=("http://127.0.0.1:9/",)), settings=recorded)
        finally:
            await store.close()

    asyncio.run(store_with_a_stalled_run_and_a_scan())
    assert run_in_process("scan", "fr", "--db", db).returncode == ExitCode.SCAN_CONFLICT
    assert run_in_process("status", "--check", "--db", db).returncode == ExitCode.ATTENTION
    refused = run_in_process("worker", "--run", "3", "--db", db)
    assert refused.returncode == ExitCode.CANNOT_JOIN, refused.stderr
