from __future__ import annotations

import asyncio
import contextlib
import io
import os
import signal
import subprocess
import sys
from pathlib import Path

from rich.console import Console

from sitesync.models import Run, Task, TaskState
from sitesync.store import open_store

#: Settings the test session sets for every process: loopback opened, one process per crawl
#: (see tests/conftest.py).
KEPT = frozenset({"SITESYNC_ALLOWED_NETWORKS", "SITESYNC_PROCESSES"})


def sitesync(
    *args: str,
    settings: dict[str, str] | None = None,
    env: dict[str, str] | None = None,
    **popen: object,
) -> subprocess.Popen[str]:
    """Start the real CLI in a subprocess, as a user would (``settings`` as SITESYNC_*,
    ``env`` as given: PYTHONPATH to install a test plugin, for one)."""
    environment = {
        k: v for k, v in os.environ.items() if not k.startswith("SITESYNC_") or k in KEPT
    }
    environment.update({f"SITESYNC_{k.upper()}": v for k, v in (settings or {}).items()})
    environment.update(env or {})
    proc: subprocess.Popen[str] = subprocess.Popen(  # type: ignore[call-overload]
        [sys.executable, "-m", "sitesync", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=environment,
        **popen,
    )
    STARTED.append(proc)
    return proc


#: Every CLI process a test started; ``reap`` kills what is left when the test ends, so a
#: failed assertion never leaves a crawl running into the next test on that worker.
STARTED: list[subprocess.Popen[str]] = []


def reap() -> list[str]:
    """Kill and wait for every process :func:`sitesync` started that is still running; the
    command lines of those that were (a test that passes waits for its own)."""
    left = []
    while STARTED:
        proc = STARTED.pop()
        if proc.poll() is None:
            left.append(" ".join(str(a) for a in proc.args[3:]))  # type: ignore[index]
            proc.kill()
        proc.communicate()
    return left


def run_in_process(
    *args: str,
    settings: dict[str, str] | None = None,
    env: dict[str, str] | None = None,
    cwd: Path | None = None,
) -> subprocess.CompletedProcess[str]:
    """The CLI run in this process, as ``sitesync ARGS`` would run: its exit code, standard
    output and standard error, with the environment a subprocess of :func:`sitesync` would
    have (``settings`` as SITESYNC_*, ``env`` as given). For tests of what a command does
    and prints; the process boundary (signals, exit codes of a real process, several
    processes) is tested with :func:`sitesync`. About 0.4 s cheaper a call."""
    from sitesync.cli import app  # the CLI's modules, once for the whole session
    from sitesync.cli._common import exit_code_of

    environment = {
        k: v for k, v in os.environ.items() if not k.startswith("SITESYNC_") or k in KEPT
    }
    environment.update({f"SITESYNC_{k.upper()}": v for k, v in (settings or {}).items()})
    environment.update(env or {})
    out, err = io.StringIO(), io.StringIO()
    saved_env, saved_cwd = dict(os.environ), os.getcwd()
    sized = _module_consoles()
    try:
        os.environ.clear()
        os.environ.update(environment)
        for console in sized:  # sized by this call's COLUMNS, as a new process's would be
            console._width = None
        if cwd is not None:
            os.chdir(cwd)
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                code = exit_code_of(lambda: app(list(args), prog_name="sitesync"))
            except SystemExit as exc:  # click's standalone mode ends every command so
                code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    finally:
        os.chdir(saved_cwd)
        os.environ.clear()
        os.environ.update(saved_env)
        for console, width in sized.items():
            console._width = width
    return subprocess.CompletedProcess(["sitesync", *args], code, out.getvalue(), err.getvalue())


def _module_consoles() -> dict[Console, int | None]:
    """The CLI modules' consoles, with the width each fixed when it was made: rich reads
    COLUMNS once, when a console is made (at the module's import, in whatever environment
    the test that imported it first had), and keeps it."""
    found: dict[Console, int | None] = {}
    for name, module in list(sys.modules.items()):
        if name.startswith("sitesync.cli"):
            for value in vars(module).values():
                if isinstance(value, Console):
                    found[value] = value._width
    return found


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
