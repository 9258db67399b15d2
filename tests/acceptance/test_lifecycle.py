"""Steering runs from other processes, the supervisor and its watchdog, the operator tools
(SPEC R4, R5, R7): the real CLI against a real store, on each backend."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import time

import pytest

from sitesync.models import NewTask, RunConfig, RunStatus, TaskState
from sitesync.store import open_store
from sitesync.testing import LoopbackSite, SiteSpec
from tests.acceptance._cli import communicate, read_run, run_in_process, sitesync
from tests.acceptance.test_crash_and_stop import assert_exact, wait_for_progress

pytestmark = pytest.mark.slow


#: How often the crawls read their run's status: a pause reaches them within it.
POLL = 0.5


def settings(db: str) -> dict[str, str]:
    return {
        "db": db, "concurrency": "2", "per_host_concurrency": "1", "delay": "0",
        "lease_seconds": "1", "claim_seconds": "4", "heartbeat_seconds": "0.3",
        "total_timeout": "2", "retry_backoff": "0.05", "respect_robots": "false",
        "sitemaps": "false",
        # supervisors: quick heartbeats and watchdog, crashes noticed after 2 s
        "supervisor_heartbeat_seconds": "0.3", "watchdog_seconds": "0.3",
        "stale_run_seconds": "2", "status_poll_seconds": str(POLL),
    }  # fmt: skip


def cli(db: str, *args: str) -> subprocess.CompletedProcess[str]:
    """A command that steers or queues, run in this process: another process than the
    crawls and supervisors it acts on, which are real subprocesses."""
    return run_in_process(*args, settings=settings(db))


def wait_for(predicate, what: str, timeout: float = 30.0) -> None:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.1)


def test_pause_resume_stop_and_cancel_from_another_process(db_url: str) -> None:
    # ~40 pages/s (2 hosts, one request each at a time, 50 ms): lasts well past the test
    site = LoopbackSite(SiteSpec(hosts=2, pages_per_host=400, delay=0.05)).start()
    try:
        crawl = sitesync("crawl", *site.root_urls, "--no-progress", settings=settings(db_url))
        wait_for_progress(db_url, 5)
        assert cli(db_url, "pause", "1").returncode == 0
        # The crawl learns of the pause at its next status poll (POLL): until then it may
        # lease more, so the in-flight count can touch 0 between two batches. A real wait:
        # the crawl is another process, with its own clock.
        time.sleep(2 * POLL)
        wait_for(lambda: read_run(db_url)[0].counters.assigned == 0, "in-flight pages to finish")
        quiet_from = len(site.requests)
        time.sleep(1.0)  # a real wait, to show nothing happens: a paused run fetches nothing
        assert len(site.requests) == quiet_from  # paused: nothing new is fetched
        assert read_run(db_url)[0].status is RunStatus.PAUSED

        assert cli(db_url, "resume", "1").returncode == 0
        wait_for(lambda: len(site.requests) > quiet_from + 5, "the crawl to carry on")
        assert cli(db_url, "stop", "1").returncode == 0
        _, err = communicate(crawl, timeout=30)
        assert crawl.returncode == 130, err
        run, counts, _ = read_run(db_url)
        assert run.status is RunStatus.STOPPED
        assert run.counters.assigned == counts[TaskState.ASSIGNED] == 0
        assert run.counters.completed == counts[TaskState.COMPLETED]

        cancelled = cli(db_url, "cancel", "1", "--yes")
        assert cancelled.returncode == 0
        illegal = cli(db_url, "resume", "1")
        assert illegal.returncode == 1
        assert "run 1 is cancelled; it cannot become queued" in illegal.stderr
        assert read_run(db_url)[0].status is RunStatus.CANCELLED
    finally:
        site.stop()


def test_a_killed_supervisors_runs_are_recovered_by_another(db_url: str) -> None:
    site = LoopbackSite(SiteSpec(hosts=3, pages_per_host=60, delay=0.03)).start()
    supervisors: list[subprocess.Popen[str]] = []
    try:
        queued = cli(db_url, "crawl", *site.root_urls, "--queue")
        assert queued.returncode == 0, queued.stderr
        first = sitesync("supervise", settings=settings(db_url))
        supervisors.append(first)
        wait_for_progress(db_url, 10)
        first.send_signal(signal.SIGKILL)  # its worker dies with it (parent-death signal)
        communicate(first, timeout=10)
        stalled_at = read_run(db_url)[0].counters.completed
        second = sitesync("supervise", settings=settings(db_url))
        supervisors.append(second)
        wait_for(lambda: read_run(db_url)[0].status is RunStatus.COMPLETED, "recovery", 60)
        run, _, _ = read_run(db_url)
        assert run.crash_retries == 1 and run.counters.completed > stalled_at
        assert_exact(db_url, site)
    finally:
        for proc in supervisors:
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
                communicate(proc, timeout=30)
        site.stop()


def test_a_run_that_keeps_crashing_fails_when_its_retries_are_spent(db_url: str) -> None:
    site = LoopbackSite(SiteSpec(hosts=2, pages_per_host=200, delay=0.05)).start()
    supervisor = None
    try:
        assert cli(db_url, "crawl", *site.root_urls, "--queue").returncode == 0
        env = {**settings(db_url), "max_crash_retries": "2"}
        supervisor = sitesync("supervise", settings=env)
        killed: set[int] = set()
        for _ in range(3):  # the first start, then two retries
            pid = wait_for_live_worker(db_url, exclude=killed)
            os.kill(pid, signal.SIGKILL)
            killed.add(pid)
        wait_for(lambda: read_run(db_url)[0].status is RunStatus.FAILED, "the run to fail", 60)
        run = read_run(db_url)[0]
        assert run.status_reason == "crashed and exceeded max retries"
        assert run.crash_retries == 2
    finally:
        if supervisor is not None:
            supervisor.send_signal(signal.SIGTERM)
            communicate(supervisor, timeout=30)
        site.stop()


def wait_for_live_worker(db: str, *, exclude: set[int]) -> int:
    async def live() -> list[int]:
        store = await open_store(db)
        try:
            workers = await store.list_workers(1)
            counters = (await store.get_run(1)).counters
        finally:
            await store.close()
        if counters.completed < 1:
            return []
        return [w.pid for w in workers if w.stopped_at is None and w.pid not in exclude]

    found: list[int] = []
    wait_for(lambda: bool(found.extend(asyncio.run(live())) or found), "a live worker", 60)
    return found[0]


def test_claims_release_and_cleanup_stale_from_the_cli(db_url: str) -> None:
    async def prepare() -> None:
        # Written as of two hours ago (the store's clock, not a sleep): the run has been
        # idle that long, the dead worker's 10-minute claim has expired, and the live
        # worker's 3-hour claim has not.
        store = await open_store(db_url, clock=lambda: time.time() - 2 * 3600)
        try:
            run = await store.create_run(RunConfig(seeds=("http://a.test/",)))
            await store.transition_run(run.id, RunStatus.RUNNING)
            tasks = [NewTask(url=f"http://{h}/", host=h, depth=0) for h in ("a.test", "b.test")]
            await store.add_tasks(run.id, tasks)
            for worker in ("dead", "live"):  # both live first: one host each
                await store.register_worker(run.id, worker_id=worker, host="m", pid=1)
            for worker, seconds in (("live", 3 * 3600), ("dead", 600)):
                await store.claim_hosts(
                    run.id, worker_id=worker, claim_seconds=seconds, worker_ttl=300
                )
        finally:
            await store.close()

    asyncio.run(prepare())
    preview = cli(db_url, "claims", "release", "--dry-run")
    assert "1 expired claims to release" in preview.stdout and "dead" in preview.stdout
    refused = cli(db_url, "claims", "release", "--all-active")
    assert refused.returncode == 1 and "needs --force" in refused.stderr
    assert cli(db_url, "claims", "release").returncode == 0
    forced = cli(db_url, "claims", "release", "--force", "--all-active", "--yes")
    assert forced.returncode == 0 and "released 1 claims" in forced.stdout

    fresh = cli(db_url, "runs", "cleanup-stale", "--older-than-minutes", "150", "--yes")
    assert "0 runs idle" in fresh.stdout  # idle for 2 hours, not 2.5
    idle = cli(db_url, "runs", "cleanup-stale", "--older-than-minutes", "90", "--dry-run")
    assert "1 runs idle" in idle.stdout
    assert read_run(db_url)[0].status is RunStatus.RUNNING  # a dry run changes nothing
    done = cli(db_url, "runs", "cleanup-stale", "--older-than-minutes", "90", "--yes")
    assert done.returncode == 0 and "marked 1 runs failed" in done.stdout
    run = read_run(db_url)[0]
    assert run.status is RunStatus.FAILED and "cleanup-stale" in (run.status_reason or "")


def test_ctrl_c_while_paused_stops_the_run_cleanly(db_url: str) -> None:
    site = LoopbackSite(SiteSpec(hosts=1, pages_per_host=400, delay=0.05)).start()
    try:
        crawl = sitesync("crawl", *site.root_urls, "--no-progress", settings=settings(db_url))
        wait_for_progress(db_url, 3)
        assert cli(db_url, "pause", "1").returncode == 0
        # Its leases given back: the worker acted on the pause (nothing else returns them
        # while it lives), and now waits for resume.
        wait_for(lambda: read_run(db_url)[0].counters.assigned == 0, "the pause to settle")
        crawl.send_signal(signal.SIGINT)
        _, err = communicate(crawl, timeout=30)
        assert crawl.returncode == 130, err
        assert "Traceback" not in err
        run, counts, _ = read_run(db_url)
        assert run.status is RunStatus.STOPPED and counts[TaskState.ASSIGNED] == 0
    finally:
        site.stop()
