"""Proving a worker process gone from /proc, with real processes (issue 10.7)."""

from __future__ import annotations

import dataclasses
import subprocess
import sys
import time
from collections.abc import Iterator

import pytest

from sitesync.engine.liveness import ProcessIdentity, is_gone, start_of, this_process
from sitesync.models import WorkerInfo


@pytest.fixture
def child() -> Iterator[subprocess.Popen[bytes]]:
    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    yield proc
    proc.kill()
    proc.wait()


def registered(proc: subprocess.Popen[bytes], here: ProcessIdentity) -> WorkerInfo:
    """The row a worker running as ``proc`` on this machine would have registered."""
    return WorkerInfo(
        worker_id=f"w-{proc.pid}", host=here.host, pid=proc.pid, run_id=1,
        started_at=time.time(), last_heartbeat=time.time(), stopped_at=None,
        boot_id=here.boot_id, proc_start=start_of(proc.pid),
    )  # fmt: skip


def test_this_machine_can_prove_things() -> None:
    here = this_process()
    assert here.boot_id is not None and "pid:[" in here.boot_id
    assert here.proc_start is not None and here.proc_start == start_of(here.pid)


def test_a_live_worker_is_not_gone(child: subprocess.Popen[bytes]) -> None:
    here = this_process()
    assert not is_gone(registered(child, here), here)


def test_a_killed_worker_is_gone_even_before_it_is_reaped(
    child: subprocess.Popen[bytes],
) -> None:
    here = this_process()
    worker = registered(child, here)
    child.kill()
    deadline = time.monotonic() + 10
    while start_of(child.pid) is not None and time.monotonic() < deadline:
        time.sleep(0.01)  # a zombie until wait(): it has exited all the same
    assert is_gone(worker, here)
    child.wait()
    assert is_gone(worker, here)


def test_a_reused_pid_does_not_keep_a_dead_worker_alive(child: subprocess.Popen[bytes]) -> None:
    here = this_process()
    # the row is about an earlier process that had this pid: it started at another time
    earlier = dataclasses.replace(registered(child, here), proc_start=start_of(child.pid) - 1)
    assert is_gone(earlier, here)


@pytest.mark.parametrize(
    "change",
    [
        {"host": "another-machine"},
        {"boot_id": "another-boot/pid:[1]"},  # same name, another machine or boot
        {"boot_id": None},  # registered where nothing can be proven
        {"stopped_at": 1.0},  # stopped cleanly: nothing to release
    ],
)
def test_nothing_is_proven_about_other_machines(
    child: subprocess.Popen[bytes], change: dict[str, object]
) -> None:
    here = this_process()
    worker = dataclasses.replace(registered(child, here), **change)
    child.kill()
    child.wait()
    assert not is_gone(worker, here)


def test_this_very_process_is_never_gone() -> None:
    here = this_process()
    me = WorkerInfo(
        worker_id="me", host=here.host, pid=here.pid, run_id=1, started_at=0.0,
        last_heartbeat=0.0, stopped_at=None, boot_id=here.boot_id, proc_start=here.proc_start,
    )  # fmt: skip
    assert not is_gone(me, here)
