"""A crawl's helper processes (issue 13, item 8): forked before the crawl opens its store,
told the run to join, told when the foreground is done. Real forks, real signals."""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

from sitesync.config import load_settings
from sitesync.runs.processes import FOREGROUND_DONE, Helpers, process_count


def wait_for(path: Path, count: int) -> list[str]:
    deadline = time.monotonic() + 20
    while len(found := sorted(path.glob("*.txt"))) < count:
        assert time.monotonic() < deadline, f"only {len(found)} of {count} helpers crawled"
        time.sleep(0.01)
    return [f.read_text() for f in found]


def test_helpers_crawl_the_run_they_are_told_and_leave_when_the_foreground_is_done(
    tmp_path: Path,
) -> None:
    def crawl_run(run_id: int) -> int:  # in the helper: what `worker --run ID` would do
        signal.pthread_sigmask(signal.SIG_BLOCK, {FOREGROUND_DONE})
        (tmp_path / f"{os.getpid()}.txt").write_text(f"{run_id} {os.getpgid(0)}")
        signal.sigwait({FOREGROUND_DONE})  # crawls until told
        return 0

    helpers = Helpers.fork(2, crawl_run, drain_timeout=10)
    helpers.start(7)
    crawled = wait_for(tmp_path, 2)
    pids = sorted(int(f.stem) for f in tmp_path.glob("*.txt"))
    assert os.getpid() not in pids
    # Each crawled run 7 in a process group of its own (Ctrl-C reaches the foreground alone).
    assert crawled == [f"7 {pid}" for pid in pids]
    assert helpers.finish() == [0, 0]
    for pid in pids:  # reaped: no process of that id is left to signal
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            continue
        raise AssertionError(f"helper {pid} still exists")


def test_helpers_never_told_a_run_exit_without_crawling(tmp_path: Path) -> None:
    def crawl_run(run_id: int) -> int:
        (tmp_path / "crawled.txt").write_text(str(run_id))
        return 0

    helpers = Helpers.fork(1, crawl_run, drain_timeout=10)
    time.sleep(0.2)  # the helper is waiting on its pipe (or still starting): either way
    [code] = helpers.finish()  # the foreground failed before it had a run to give
    assert code in (0, -FOREGROUND_DONE)
    assert not (tmp_path / "crawled.txt").exists()


def test_a_helper_that_fails_reports_its_exit_code() -> None:
    helpers = Helpers.fork(1, lambda run_id: 3, drain_timeout=10)
    helpers.start(1)
    [pid] = helpers._pids
    os.waitid(os.P_PID, pid, os.WEXITED | os.WNOWAIT)  # it failed on its own, not yet reaped
    assert helpers.finish() == [3]


def test_zero_processes_is_one_per_core() -> None:
    assert process_count(load_settings(processes=0)) == (os.cpu_count() or 1)
    assert process_count(load_settings(processes=2)) == 2
