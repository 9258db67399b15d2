"""``sitesync worker --serve`` (issue 13, item 7): a long-lived worker per machine that
serves every active run of the store, waits when there is none, and leaves on SIGTERM.
The real CLI in subprocesses, a real loopback site whose request log says what reached it,
on each backend. Nothing is killed with SIGKILL, so every page is fetched exactly once."""

from __future__ import annotations

import signal
import sqlite3
import time
from pathlib import Path

import pytest

from sitesync.models import RunStatus
from sitesync.testing import LoopbackSite, SiteSpec
from tests.acceptance._cli import read_run, run_in_process
from tests.acceptance.test_crash_and_stop import assert_exact, wait_for_progress
from tests.faults.test_process_faults import (
    Process,
    assert_each_page_fetched_once,
    cli,
    settings,
    wait_for,
    worker_state,
)

pytestmark = pytest.mark.slow


def test_a_service_waits_for_runs_then_crawls_two_at_once(db_url: str) -> None:
    # 2 hosts x 60 pages at 60 ms each, one at a time per host: 3.6 s or more per run, the
    # two queued a fraction of a second apart (100 pages only made each run longer)
    first = LoopbackSite(SiteSpec(hosts=2, pages_per_host=60, delay=0.06)).start()
    second = LoopbackSite(SiteSpec(hosts=2, pages_per_host=60, delay=0.06)).start()
    service = Process("worker", "--serve", db=db_url)
    try:
        service.wait_for_line("serving the runs of")
        time.sleep(1.5)  # several looks at an empty store: it waits, it does not exit
        assert service.proc.poll() is None, service.stderr

        for site in (first, second):
            assert cli(db_url, "crawl", *site.root_urls, "--queue").returncode == 0
        wait_for(lambda: all(read_run(db_url, n)[0].status.is_terminal for n in (1, 2)), "both")
        for run_id, site in ((1, first), (2, second)):
            assert read_run(db_url, run_id)[0].status is RunStatus.COMPLETED
            assert_each_page_fetched_once(site)
        # Served at once, not one after the other: each started before the other ended.
        spans = [(min(r.started for r in s.requests), max(r.started for r in s.requests))
                 for s in (first, second)]  # fmt: skip
        assert spans[0][0] < spans[1][1] and spans[1][0] < spans[0][1], spans
        assert service.proc.poll() is None  # and it waits for the next run

        service.signal(signal.SIGTERM)
        assert service.finish(timeout=60) == 0, service.stderr
        assert "Traceback" not in service.stderr
    finally:
        service.kill()
        first.stop()
        second.stop()


def test_sigterm_makes_a_service_leave_and_its_run_goes_on(db_url: str) -> None:
    # 4 hosts x 80 pages at 50 ms each, one at a time per host: 4 s or more of work, most
    # of it left when the service leaves after 20 pages (150 only made the rest longer)
    site = LoopbackSite(SiteSpec(hosts=4, pages_per_host=80, delay=0.05)).start()
    procs: list[Process] = []
    try:
        assert cli(db_url, "crawl", *site.root_urls, "--queue").returncode == 0
        service = Process("worker", "--serve", db=db_url)
        procs.append(service)
        wait_for_progress(db_url, 20, timeout=60)
        # kill -USR1 prints what each task waits on, and the service carries on.
        service.signal(signal.SIGUSR1)
        service.wait_for_line("--- threads ---", timeout=20)
        assert "task 'serve run 1':" in service.stderr and "crawl.py" in service.stderr

        service.signal(signal.SIGTERM)
        assert service.finish(timeout=60) == 0, service.stderr
        assert "Traceback" not in service.stderr
        left_at = time.monotonic()
        run = read_run(db_url)[0]
        assert run.status is RunStatus.RUNNING  # it left; the run goes on
        assert run.counters.pending > 0 and run.counters.assigned == 0
        stopped_at, still_claimed = worker_state(db_url, service.proc.pid)
        assert stopped_at is not None and still_claimed == []

        worker = Process("worker", "--run", "1", db=db_url)
        procs.append(worker)
        assert worker.finish() == 0, worker.stderr
        assert_exact(db_url, site)
        assert_each_page_fetched_once(site)  # what it had under way finished, nothing twice
        tag = f"-{service.proc.pid}-"
        assert not any(tag in r.worker for r in site.requests if r.started > left_at)
    finally:
        for proc in procs:
            proc.kill()
        site.stop()


def test_a_store_outage_does_not_end_a_service(tmp_path: Path) -> None:
    db = str(tmp_path / "crawl.db")
    # 2 hosts x 80 pages at 50 ms each: 4 s or more of work, the outage after 20 pages
    site = LoopbackSite(SiteSpec(hosts=2, pages_per_host=80, delay=0.05)).start()
    # The store gives up on a locked database within a second, as it would on a lost server;
    # short leases and claims, so what the failed crawl held comes back within seconds.
    quick = {
        "store_retry_seconds": "1", "sqlite_busy_timeout": "0.2", "lease_seconds": "3",
        "claim_seconds": "4", "total_timeout": "2",
    }  # fmt: skip
    # The run's request timeout fits the service's short claims (a run's settings are its
    # own: a service whose claims are too short for them leaves the run to others).
    queued = run_in_process("crawl", *site.root_urls, "--queue",
                            settings={**settings(db), "total_timeout": "2"})  # fmt: skip
    assert queued.returncode == 0, queued.stderr
    service = Process("worker", "--serve", db=db, extra=quick)
    try:
        wait_for_progress(db, 20, timeout=60)
        locker = sqlite3.connect(db, isolation_level=None)
        locker.execute("BEGIN EXCLUSIVE")  # no worker writes until it ends
        service.wait_for_line("store unavailable", timeout=30)
        time.sleep(1)  # a real outage of a real process's store: it goes on being waited out
        locker.execute("ROLLBACK")
        locker.close()
        assert service.proc.poll() is None, service.stderr  # it logged, and goes on

        wait_for(lambda: read_run(db)[0].status is RunStatus.COMPLETED, "the run to complete", 90)
        assert_exact(db, site)  # counters exact; pages in flight at the outage may be refetched
        service.signal(signal.SIGTERM)
        assert service.finish(timeout=60) == 0, service.stderr
        assert "Traceback" not in service.stderr
    finally:
        service.kill()
        site.stop()
