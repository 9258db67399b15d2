"""Worker processes started by another sitesync process: the helpers that make one
``sitesync crawl`` use every core, and the workers of ``sitesync supervise``.

A supervisor's worker is ``sitesync worker`` in a fresh interpreter (no state inherited
but what it is told); the store's DSN, which may carry a password, goes over a pipe on its
stdin: a command line is readable by every user of the machine, an environment by the same
user. A crawl's helpers are forked (:class:`Helpers`). Every child gets a parent-death
signal, so a parent killed with SIGKILL takes its children with it.
"""

from __future__ import annotations

import contextlib
import ctypes
import gc
import logging
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Sequence

from sitesync.config import Settings

log = logging.getLogger(__name__)

_PR_SET_PDEATHSIG = 1

#: How long a helper may take to leave beyond ``drain_timeout`` (its last reports, its
#: claims handed back).
LEAVE_MARGIN_SECONDS = 20.0

#: What a foreground ``sitesync crawl`` sends its helpers when it is done (the run ended, or
#: it left): they leave as on SIGTERM, at once and without a word to the terminal.
FOREGROUND_DONE = signal.SIGUSR2

#: How a helper told to go exits: it left (0), it saw the run stopped (130), or the signal
#: reached it before its handlers were installed (killed by it).
_TOLD_TO_GO = frozenset({0, 130, -FOREGROUND_DONE})


def spawn_sitesync(
    args: Sequence[str], *, env: dict[str, str], stdin_line: str | None
) -> subprocess.Popen[bytes]:
    """Start ``sitesync ARGS`` that dies with this process, ``stdin_line`` on its stdin."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "sitesync", *args],
        env=env,
        preexec_fn=die_with_parent,
        stdin=subprocess.PIPE if stdin_line is not None else subprocess.DEVNULL,
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


#: Allocations (less deallocations) between two collections of the youngest generation.
YOUNG_COLLECTION_AFTER = 20_000


def freeze_startup_heap() -> None:
    """Leave what startup made (modules, settings, plugins) out of every later garbage
    collection.

    A crawl makes and drops objects for every page, so the cyclic collector runs often, and
    each full collection walked the objects of every imported module, none of which ever
    becomes garbage: about 4 % of a one-process crawl's pages/s (benchmarks/README.md).
    Garbage is collected first so that none of it is kept for good; helpers forked after
    this inherit the frozen objects (and, not walking them, leave their pages shared).

    The youngest generation is then collected every :data:`YOUNG_COLLECTION_AFTER`
    allocations, not every 700: a page's objects (leases, results, reports) are freed by
    reference counting as soon as the page is done, so frequent young collections walked
    live objects to find almost nothing: 5 % of an unchanged rescan's CPU (issue 30). The
    few cycles a page leaves wait a little longer; the older generations' ratios are kept.
    """
    gc.collect()
    gc.freeze()
    _, older, oldest = gc.get_threshold()
    gc.set_threshold(YOUNG_COLLECTION_AFTER, older, oldest)


def process_count(settings: Settings) -> int:
    """Worker processes of one ``crawl`` on this machine, its own included (one where
    processes cannot be forked)."""
    if not hasattr(os, "fork"):
        return 1
    return settings.processes or os.cpu_count() or 1


class Helpers:
    """The helper processes of one foreground ``crawl``.

    They are forked before the foreground opens its store or starts its event loop, so
    each has the foreground's settings and modules in memory already (a fresh interpreter
    took about a second to import them: a helper started that much later than the
    foreground), and nothing else of it: no connection, no thread, no loop. Each waits on
    a pipe for the run to join, then crawls it as ``sitesync worker --run ID`` would. Their
    output is the foreground's to give: only their warnings and errors reach the terminal.
    """

    def __init__(self, leave_seconds: float) -> None:
        self.leave_seconds = leave_seconds  # told to go, how long each may take to leave
        self.run_id: int | None = None  # once told
        self._pids: list[int] = []
        self._pipes: list[int] = []  # the write end of each helper's pipe, until told

    @classmethod
    def fork(cls, count: int, crawl_run: Callable[[int], int], *, drain_timeout: float) -> Helpers:
        """Fork ``count`` helpers; each runs ``crawl_run(run_id)`` once told the run, and
        exits with what it returns (told to go, within ``drain_timeout`` and a margin)."""
        helpers = cls(drain_timeout + LEAVE_MARGIN_SECONDS)
        parent = os.getpid()
        sys.stdout.flush()  # what is buffered now is the foreground's to print, once
        sys.stderr.flush()
        for _ in range(count):
            read_end, write_end = os.pipe()
            pid = os.fork()
            if pid == 0:  # the helper: it never returns from here
                code = 1
                try:
                    for pipe in (write_end, *helpers._pipes):
                        os.close(pipe)  # its siblings' EOF must not wait for it
                    code = _helper(read_end, parent, crawl_run)
                finally:
                    os._exit(code)  # not the foreground's atexit handlers or buffers
            os.close(read_end)
            helpers._pids.append(pid)
            helpers._pipes.append(write_end)
        return helpers

    def start(self, run_id: int) -> None:
        """Tell every helper the run to join."""
        self.run_id = run_id
        for pipe in self._pipes:
            with contextlib.suppress(OSError):  # it died already: its exit code says so
                os.write(pipe, f"{run_id}\n".encode())
        self._close_pipes()

    def finish(self) -> list[int]:
        """Tell the helpers this crawl is over for the foreground, and wait for them.

        Whether the run ended (completed, stopped) or the foreground left it, a helper is
        told (``FOREGROUND_DONE``), on which it leaves as on SIGTERM: told, it goes at once,
        instead of at its next read of the run's status. One never told a run (the
        foreground failed first) sees its pipe closed and exits. Returns their exit codes.
        """
        self._close_pipes()
        self._signal(FOREGROUND_DONE)
        codes = []
        for pid in self._pids:
            code = _wait(pid, self.leave_seconds)
            if code is None:
                # Slow to leave: SIGTERM (a second one ends it at once), then force.
                _kill(pid, signal.SIGTERM)
                code = _wait(pid, self.leave_seconds)
            if code is None:
                _kill(pid, signal.SIGKILL)
                code = _reap(pid)
            if code not in _TOLD_TO_GO:
                log.warning("a helper of run %s exited with %s", self.run_id, code)
            codes.append(code)
        self._pids = []
        return codes

    def _close_pipes(self) -> None:
        for pipe in self._pipes:
            os.close(pipe)
        self._pipes = []

    def _signal(self, sig: signal.Signals) -> None:
        for pid in self._pids:
            _kill(pid, sig)


def _helper(read_end: int, parent: int, crawl_run: Callable[[int], int]) -> int:
    """A forked helper: on its own, then told the run to crawl (or nothing: exit)."""
    os.setpgid(0, 0)  # Ctrl-C on the terminal reaches the foreground alone
    die_with_parent()
    if os.getppid() != parent:  # the foreground died before we could die with it
        return 0
    null = os.open(os.devnull, os.O_RDWR)
    os.dup2(null, 0)
    os.dup2(null, 1)  # stdout is the foreground's (its summary); warnings go to stderr
    with os.fdopen(read_end, "rb") as pipe:
        line = pipe.readline().strip()
    return crawl_run(int(line)) if line else 0


def _wait(pid: int, timeout: float) -> int | None:
    """The exit code of child ``pid`` (``-N``: killed by signal N), or None if it is still
    running after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            return os.waitstatus_to_exitcode(status)
        if time.monotonic() >= deadline:
            return None
        time.sleep(0.005)


def _reap(pid: int) -> int:
    return os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1])


def _kill(pid: int, sig: signal.Signals) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, sig)
