"""Worker processes started by another sitesync process: the helpers that make one
``sitesync crawl`` use every core, and the workers of ``sitesync supervise``.

A child is ``sitesync worker`` in a fresh interpreter (no state inherited but what it is
told). What may carry a password (the store's DSN, or the whole settings) goes over a pipe
on its stdin: a command line is readable by every user of the machine, an environment by
the same user. Every child gets a parent-death signal, so a parent killed with SIGKILL
takes its children with it.
"""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import json
import logging
import os
import signal
import subprocess
import sys
from collections.abc import Sequence

from sitesync.config import Settings, load_settings

log = logging.getLogger(__name__)

_PR_SET_PDEATHSIG = 1

#: How a helper of ``crawl`` is told its settings: all of them, as JSON on one stdin line.
SETTINGS_FROM_STDIN = "--settings-from-stdin"

#: How long a helper may take to leave (its fetches under way finish within 10 s).
LEAVE_SECONDS = 30.0

#: What a foreground ``sitesync crawl`` sends its helpers when it is done (the run ended, or
#: it left): they leave as on SIGTERM, at once and without a word to the terminal.
FOREGROUND_DONE = signal.SIGUSR2

#: How a helper told to go exits: it left (0), it saw the run stopped (130), or the signal
#: reached it before its handlers were installed (killed by it).
_TOLD_TO_GO = frozenset({0, 130, -FOREGROUND_DONE})


def spawn_sitesync(
    args: Sequence[str], *, env: dict[str, str], stdin_line: str | None, helper: bool = False
) -> subprocess.Popen[bytes]:
    """Start ``sitesync ARGS`` that dies with this process, ``stdin_line`` on its stdin.

    A ``helper`` prints nothing on stdout and has a process group of its own: Ctrl-C on the
    terminal reaches the foreground alone, which stops the run, and the helpers see that."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "sitesync", *args],
        env=env,
        preexec_fn=die_with_parent,
        stdin=subprocess.PIPE if stdin_line is not None else subprocess.DEVNULL,
        stdout=subprocess.DEVNULL if helper else None,
        process_group=0 if helper else None,
    )
    if stdin_line is not None and proc.stdin is not None:
        with contextlib.suppress(BrokenPipeError):  # it died at once: its exit code says so
            proc.stdin.write(stdin_line.encode() + b"\n")
        with contextlib.suppress(BrokenPipeError):
            proc.stdin.close()
    return proc


def die_with_parent() -> None:
    """In the child before exec: get SIGKILL when the parent dies (Linux)."""
    try:
        libc = ctypes.CDLL("libc.so.6", use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
    except OSError:  # not Linux: children outlive a killed parent, leases still expire
        pass


def process_count(settings: Settings) -> int:
    """Worker processes of one ``crawl`` on this machine, its own included."""
    return settings.processes or os.cpu_count() or 1


def settings_line(settings: Settings) -> str:
    """The settings a helper must crawl with, exactly: flags, environment and file alike.
    (The dashboard's token is no worker's business.)"""
    return json.dumps(settings.model_dump(mode="json", exclude={"dashboard_token"}))


def settings_from_line(line: str) -> Settings:
    return load_settings(**json.loads(line))


class Helpers:
    """The helper processes of one foreground ``crawl``: ``sitesync worker --run ID``
    with the foreground's settings. Their output is the foreground's to give: only their
    warnings and errors reach the terminal."""

    def __init__(self, settings: Settings, run_id: int, count: int) -> None:
        self.settings = settings
        self.run_id = run_id
        self.count = count
        self.procs: list[subprocess.Popen[bytes]] = []

    def start(self) -> None:
        args = ("worker", "--run", str(self.run_id), SETTINGS_FROM_STDIN)
        line = settings_line(self.settings)
        env = dict(os.environ)
        for _ in range(self.count):
            self.procs.append(spawn_sitesync(args, env=env, stdin_line=line, helper=True))

    async def finish(self) -> None:
        """Tell the helpers this crawl is over for the foreground, and wait for them.

        Whether the run ended (completed, stopped) or the foreground left it, a helper is
        told (``FOREGROUND_DONE``), on which it leaves as on SIGTERM: told, it goes at once,
        instead of at its next read of the run's status. One still starting up dies of the
        signal, which is as harmless: it held nothing yet.
        """
        self._signal(FOREGROUND_DONE)
        for proc in self.procs:
            try:
                await asyncio.to_thread(proc.wait, LEAVE_SECONDS)
            except subprocess.TimeoutExpired:
                # Slow to leave: tell it again (a second SIGTERM ends it at once), then force.
                self._signal(signal.SIGTERM)
                try:
                    await asyncio.to_thread(proc.wait, LEAVE_SECONDS)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    await asyncio.to_thread(proc.wait)
            if proc.returncode not in _TOLD_TO_GO:
                log.warning("a helper of run %d exited with %d", self.run_id, proc.returncode)

    def _signal(self, sig: signal.Signals) -> None:
        for proc in self.procs:
            if proc.poll() is None:
                proc.send_signal(sig)
