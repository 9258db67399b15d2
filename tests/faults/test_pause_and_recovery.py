"""A pause is a pause, and recovery on the same machine is as fast as the facts allow
(issue 10, items 5 and 7).

The real CLI in subprocesses, on both backends, against a real loopback site whose request
log has the time each request reached the server (``time.monotonic()`` of this process).
"""

from __future__ import annotations

import signal
import subprocess
import time

import pytest

from sitesync.models import RunStatus, TaskState
from sitesync.testing import LoopbackSite, SiteSpec
from tests.acceptance._cli import read_run, sitesync

pytestmark = pytest.mark.slow

#: What the issue promises: after ``pause`` returns no request starts later than this,
#: and after ``resume`` returns requests start again within this.
PROMISE = 2.0


def wait_until(what: str, check: object, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            if check():  # type: ignore[operator]
                return
        except Exception:  # the store or the run may not exist yet
            pass
        time.sleep(0.05)
    raise AssertionError(f"{what}: not within {timeout}s")


def completed(db: str) -> int:
    run, _, _ = read_run(db)
    return run.counters.completed


def steer(command: str, db: str) -> float:
    """Run ``sitesync pause|resume 1`` to its end; the time it returned."""
    proc = sitesync(command, "1", "--db", db)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err
    return time.monotonic()


def assert_completed_exactly(db: str, site: LoopbackSite, *, refetched_at_most: int) -> None:
    run, counts, tasks = read_run(db)
    pages = set(site.page_urls())
    assert run.status is RunStatus.COMPLETED
    assert {t.url for t in tasks} == pages
    assert run.counters.completed == counts[TaskState.COMPLETED] == len(pages)
    assert run.counters.pending == run.counters.assigned == run.counters.failed == 0
    fetches = site.fetch_counts()
    assert all(fetches[url] >= 1 for url in pages)
    assert sum(fetches[url] for url in pages) - len(pages) <= refetched_at_most


def test_a_pause_holds_fleet_wide_within_2s_and_resume_restarts_within_2s(db_url: str) -> None:
    # A polite crawl of 30 hosts: each host gets a request every 0.5 s, so at any moment
    # many tasks are leased and waiting for their host's turn (the ones that used to slip
    # through after a pause).
    site = LoopbackSite(SiteSpec(hosts=30, pages_per_host=8, links_per_page=12)).start()
    try:
        proc = sitesync(
            "crawl", *site.root_urls, "--db", db_url, "--no-progress", "--delay", "0.5",
            "--concurrency", "16", "--no-sitemaps", "--timeout", "5",
        )  # fmt: skip
        wait_until("40 pages crawled", lambda: completed(db_url) >= 40, 60)

        paused_at = steer("pause", db_url)
        # in-flight pages finish, leased ones not yet started go back to pending
        wait_until(
            "nothing leased after the pause",
            lambda: read_run(db_url)[1].get(TaskState.ASSIGNED, 0) == 0,
            PROMISE + 3,
        )
        time.sleep(max(0.0, paused_at + PROMISE + 2 - time.monotonic()))
        run, counts, _ = read_run(db_url)
        assert run.status is RunStatus.PAUSED and proc.poll() is None  # waiting, not gone
        assert run.counters.assigned == counts.get(TaskState.ASSIGNED, 0) == 0
        assert run.counters.pending == counts[TaskState.PENDING] > 0
        late = [r for r in site.requests if r.started > paused_at + PROMISE]
        assert late == [], f"{len(late)} requests started more than {PROMISE}s after the pause"

        resumed_at = steer("resume", db_url)
        wait_until(
            "a request after resume",
            lambda: any(r.started > paused_at + PROMISE for r in site.requests),
            30,
        )
        restart = min(r.started for r in site.requests if r.started > paused_at + PROMISE)
        assert restart - resumed_at < PROMISE, f"restarted {restart - resumed_at:.2f}s after"

        _, err = proc.communicate(timeout=90)
        assert proc.returncode == 0, err
        # the pause cost no fetch: in-flight ones finished and were kept
        assert_completed_exactly(db_url, site, refetched_at_most=0)
    finally:
        site.stop()


LEASE_SECONDS = 60.0  # the defaults, said out loud: recovery must not wait for them
CLAIM_SECONDS = 120.0
IN_FLIGHT_LIMIT = 8


def test_kill_9_then_resume_on_the_same_machine_continues_within_seconds(db_url: str) -> None:
    site = LoopbackSite(SiteSpec(hosts=3, pages_per_host=60, delay=0.02)).start()
    try:
        args = [
            "--db", db_url, "--no-progress", "--delay", "0", "--per-host-concurrency", "0",
            "--no-robots", "--no-sitemaps", "--concurrency", "4",
            "--in-flight-limit", str(IN_FLIGHT_LIMIT),
            "--lease-seconds", str(LEASE_SECONDS), "--claim-seconds", str(CLAIM_SECONDS),
        ]  # fmt: skip
        proc = sitesync("crawl", *site.root_urls, *args)
        wait_until("40 pages crawled", lambda: completed(db_url) >= 40, 60)
        proc.send_signal(signal.SIGKILL)
        proc.communicate(timeout=30)
        killed_at = time.monotonic()
        run, counts, _ = read_run(db_url)
        assert run.status is RunStatus.RUNNING  # left for --resume
        assert counts.get(TaskState.ASSIGNED, 0) > 0  # the dead process's leases and claims

        resumed = sitesync("crawl", "--resume", "1", *args)
        try:
            _, err = resumed.communicate(timeout=LEASE_SECONDS - 15)
        except subprocess.TimeoutExpired:
            resumed.kill()
            resumed.communicate()
            raise AssertionError("the resumed crawl waited for the dead process's leases") from None
        assert resumed.returncode == 0, err
        assert "is gone" in err  # it said what it recognised
        restart = min(r.started for r in site.requests if r.started > killed_at)
        # a few seconds: the interpreter starting on a busy machine, then at once
        assert restart - killed_at < 15, f"first request {restart - killed_at:.1f}s after"
        # every page once, but those in flight when the process was killed
        assert_completed_exactly(db_url, site, refetched_at_most=IN_FLIGHT_LIMIT)
    finally:
        site.stop()
