"""Proof, on this machine, that a worker process is gone.

A worker registers its host name, pid, boot id and process start time. Another process
that shares the host name, the boot (and the pid namespace: containers share a kernel)
can then look at ``/proc``: no process with that pid, a zombie, or one that started at
another time (the pid was reused) means the worker is gone, and its leases and claims need
not wait for expiry. Anything less than that proof (another machine, another boot, a system
without ``/proc``) proves nothing: those workers are recovered when their leases and
claims expire.
"""

from __future__ import annotations

import os
import socket
from dataclasses import dataclass
from pathlib import Path

from sitesync.models import WorkerInfo

_PROC = Path("/proc")


@dataclass(frozen=True, slots=True)
class ProcessIdentity:
    host: str
    pid: int
    boot_id: str | None  # None: this system cannot prove anything (no /proc)
    proc_start: int | None


def this_process() -> ProcessIdentity:
    pid = os.getpid()
    return ProcessIdentity(
        host=socket.gethostname(), pid=pid, boot_id=machine_boot_id(), proc_start=start_of(pid)
    )


def machine_boot_id() -> str | None:
    """The kernel's boot id with this process's pid namespace, or None off Linux."""
    try:
        boot = (_PROC / "sys/kernel/random/boot_id").read_text().strip()
        namespace = os.readlink(_PROC / "self/ns/pid")
    except OSError:
        return None
    return f"{boot}/{namespace}"


def start_of(pid: int) -> int | None:
    """When process ``pid`` started (clock ticks after boot); None if there is no such
    live process (a zombie has exited: only its exit status is left to collect)."""
    try:
        stat = (_PROC / str(pid) / "stat").read_text()
    except OSError:
        return None
    # The command name (field 2) may hold spaces and parentheses: split after its last ')'.
    fields = stat[stat.rindex(")") + 2 :].split()
    state, start = fields[0], fields[19]  # fields 3 and 22 of proc(5)
    if state in ("Z", "X"):
        return None
    return int(start)


def is_gone(worker: WorkerInfo, here: ProcessIdentity) -> bool:
    """Whether ``worker`` provably no longer runs (only ever True for this machine)."""
    if worker.stopped_at is not None or worker.boot_id is None or worker.proc_start is None:
        return False
    if here.boot_id is None or (worker.host, worker.boot_id) != (here.host, here.boot_id):
        return False  # another machine, or a host name shared across machines
    if (worker.pid, worker.proc_start) == (here.pid, here.proc_start):
        return False  # this very process
    return start_of(worker.pid) != worker.proc_start
