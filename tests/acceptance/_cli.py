from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
from pathlib import Path

from sitesync.models import Run, Task, TaskState
from sitesync.store import open_store

#: Settings the test session sets for every process: loopback opened, one process per crawl
#: (see tests/conftest.py).
KEPT = frozenset({"SITESYNC_ALLOWED_NETWORKS", "SITESYNC_PROCESSES"})


def sitesync(
    *args: str, settings: dict[str, str] | None = None, **popen: object
) -> subprocess.Popen[str]:
    """Start the real CLI in a subprocess, as a user would (``settings`` as SITESYNC_*)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("SITESYNC_") or k in KEPT}
    env.update({f"SITESYNC_{k.upper()}": v for k, v in (settings or {}).items()})
    return subprocess.Popen(  # type: ignore[call-overload,no-any-return]
        [sys.executable, "-m", "sitesync", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        **popen,
    )


def communicate(proc: subprocess.Popen[str], timeout: float) -> tuple[str, str]:
    """``proc.communicate(timeout=...)``, except that a process still running at the timeout
    prints what it waits on (``kill -USR1``, sitesync.runs.taskdump), is killed, and fails
    the test with its stderr: a hang is explained, and leaves no process or pipe behind."""
    try:
        return proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.send_signal(signal.SIGUSR1)
        try:
            _, err = proc.communicate(timeout=3)
        except subprocess.TimeoutExpired:
            proc.kill()
            _, err = proc.communicate()
        shown = err.decode(errors="replace") if isinstance(err, bytes) else (err or "")
        raise AssertionError(
            f"{' '.join(map(str, proc.args[2:4]))} still running after {timeout:g} s; "
            f"its stderr:\n{shown[-20000:]}"
        ) from None


def crawl_args(db: Path | str, *extra: str) -> list[str]:
    return [
        "--db", str(db), "--no-progress", "--delay", "0", "--per-host-concurrency", "0",
        "--retry-backoff", "0.05", "--no-robots", "--no-sitemaps",
        # short claims, so a killed worker's hosts pass on within seconds
        "--timeout", "2", "--claim-seconds", "4", "--heartbeat-seconds", "0.3", *extra,
    ]  # fmt: skip


def read_run(db: Path | str, run_id: int = 1) -> tuple[Run, dict[TaskState, int], list[Task]]:
    async def go() -> tuple[Run, dict[TaskState, int], list[Task]]:
        store = await open_store(str(db))
        try:
            run = await store.get_run(run_id)
            return run, await store.count_tasks(run_id), await store.list_tasks(run_id, limit=10**6)
        finally:
            await store.close()

    return asyncio.run(go())
