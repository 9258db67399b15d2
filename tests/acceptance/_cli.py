from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from pathlib import Path

from sitesync.models import Run, Task, TaskState
from sitesync.store.sqlite.store import SqliteStore


def sitesync(*args: str, **popen: object) -> subprocess.Popen[str]:
    """Start the real CLI in a subprocess, as a user would."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("SITESYNC_")}
    return subprocess.Popen(  # type: ignore[call-overload,no-any-return]
        [sys.executable, "-m", "sitesync", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        **popen,
    )


def crawl_args(db: Path, *extra: str) -> list[str]:
    return [
        "--db", str(db), "--no-progress", "--delay", "0", "--per-host-concurrency", "0",
        "--retry-backoff", "0.05", "--no-robots", "--no-sitemaps", *extra,
    ]  # fmt: skip


def read_run(db: Path, run_id: int = 1) -> tuple[Run, dict[TaskState, int], list[Task]]:
    async def go() -> tuple[Run, dict[TaskState, int], list[Task]]:
        store = await SqliteStore.open(db)
        try:
            run = await store.get_run(run_id)
            return run, await store.count_tasks(run_id), await store.list_tasks(run_id, limit=10**6)
        finally:
            await store.close()

    return asyncio.run(go())
