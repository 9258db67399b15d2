"""The promise: a killed or stopped crawl loses nothing committed and double-counts nothing.

These run the real CLI in a subprocess and kill it with real signals.
"""

from __future__ import annotations

import random
import signal
import time
from pathlib import Path

import pytest

from sitesync.models import RunStatus, TaskState
from sitesync.testing import LoopbackSite, SiteSpec
from tests.acceptance._cli import communicate, crawl_args, read_run, sitesync

pytestmark = pytest.mark.slow

CONCURRENCY = 4
IN_FLIGHT_LIMIT = 8


def wait_for_progress(db: Path | str, at_least: int, timeout: float = 20.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if not isinstance(db, Path) or db.exists():
            try:
                run, _, _ = read_run(db)
                if run.counters.completed >= at_least:
                    return
            except Exception:  # the run row may not exist yet
                pass
        time.sleep(0.05)
    raise AssertionError(f"no progress to {at_least} pages within {timeout}s")


def assert_exact(db: Path | str, site: LoopbackSite) -> None:
    run, counts, tasks = read_run(db)
    pages = set(site.page_urls())
    assert run.status is RunStatus.COMPLETED
    assert {t.url for t in tasks} == pages
    assert all(t.state is TaskState.COMPLETED for t in tasks)
    assert run.counters.completed == counts[TaskState.COMPLETED] == len(pages)
    assert run.counters.tasks_total == len(tasks)
    assert run.counters.pages_fetched == len(pages)  # one accepted fetch per page, no retries
    assert run.counters.pending == run.counters.assigned == run.counters.failed == 0


def test_sigkill_at_random_points_then_resume_loses_and_double_counts_nothing(
    tmp_path: Path, rng: random.Random
) -> None:
    db = tmp_path / "crash.db"
    site = LoopbackSite(SiteSpec(hosts=3, pages_per_host=80, delay=0.02)).start()
    try:
        common = crawl_args(
            db, "--concurrency", str(CONCURRENCY), "--in-flight-limit", str(IN_FLIGHT_LIMIT),
            "--lease-seconds", "1",
        )  # fmt: skip
        kills = 0
        proc = sitesync("crawl", *site.root_urls, *common)
        for target in (20, 70, 130):
            wait_for_progress(db, target)
            time.sleep(rng.uniform(0, 0.15))  # a random point of a real process's work
            proc.send_signal(signal.SIGKILL)
            communicate(proc, timeout=10)
            assert proc.returncode == -signal.SIGKILL  # it was killed, not already done
            kills += 1
            run, _, _ = read_run(db)
            assert run.status is RunStatus.RUNNING  # a kill leaves it running, for resume
            proc = sitesync("crawl", "--resume", "1", *common)
        _, err = communicate(proc, timeout=60)
        assert proc.returncode == 0, err
        assert_exact(db, site)
        fetches = site.fetch_counts()
        extra = sum(fetches.values()) - len(site.page_urls())
        assert extra <= kills * IN_FLIGHT_LIMIT, (extra, kills)
    finally:
        site.stop()


def test_ctrl_c_stops_releases_in_flight_work_and_resume_finishes(tmp_path: Path) -> None:
    db = tmp_path / "stop.db"
    site = LoopbackSite(SiteSpec(hosts=2, pages_per_host=80, delay=0.05)).start()
    try:
        common = crawl_args(db, "--concurrency", str(CONCURRENCY))
        proc = sitesync("crawl", *site.root_urls, *common)
        wait_for_progress(db, 15)
        proc.send_signal(signal.SIGINT)
        _, err = communicate(proc, timeout=30)
        assert proc.returncode == 130, err
        assert "resume with 'sitesync crawl --resume 1'" in err
        run, counts, _ = read_run(db)
        assert run.status is RunStatus.STOPPED  # never "completed"
        assert run.ended_at is not None
        assert run.counters.assigned == counts[TaskState.ASSIGNED] == 0  # in-flight released
        assert run.counters.pending == counts[TaskState.PENDING] > 0
        assert run.counters.completed == counts[TaskState.COMPLETED]

        resumed = sitesync("crawl", "--resume", "1", *common)
        _, err = communicate(resumed, timeout=60)
        assert resumed.returncode == 0, err
        assert_exact(db, site)
        # a graceful stop wastes at most the fetches that were in flight
        assert sum(site.fetch_counts().values()) - len(site.page_urls()) <= 2 * CONCURRENCY
    finally:
        site.stop()


def test_resuming_a_completed_run_is_refused_with_one_clear_line(tmp_path: Path) -> None:
    db = tmp_path / "done.db"
    with LoopbackSite(SiteSpec(hosts=1, pages_per_host=5)) as site:
        first = sitesync("crawl", *site.root_urls, *crawl_args(db))
        communicate(first, timeout=30)
        assert first.returncode == 0
        again = sitesync("crawl", "--resume", "1", *crawl_args(db))
        _, err = communicate(again, timeout=30)
    assert again.returncode == 1
    assert err.strip() == "error: run 1 is completed and cannot be resumed"
