"""One machine is a small fleet (issue 13, item 8): ``sitesync crawl --processes 2`` crawls
in the foreground process and a helper process on the same store. The real CLI, real
signals, a real loopback site whose request log names the worker of every request, on
each backend. Nothing is killed with SIGKILL but where a test says so."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import time
from collections import Counter
from collections.abc import Iterator

import pytest

from sitesync.models import RunStatus, TaskState
from sitesync.testing import LoopbackSite, SiteSpec
from tests.acceptance._cli import communicate, read_run, sitesync
from tests.acceptance.test_crash_and_stop import assert_exact
from tests.faults.test_process_faults import (
    assert_each_page_fetched_once,
    assert_host_counters_match_a_recount,
    settings,
    wait_for,
)

pytestmark = pytest.mark.slow


def start_crawl(db: str, site: LoopbackSite, *extra: str) -> subprocess.Popen[str]:
    """The crawl in a process group of its own, as a shell runs a foreground command."""
    args = ("crawl", *site.root_urls, "--no-progress", "--processes", "2", *extra)
    return sitesync(*args, settings=settings(db), start_new_session=True)


def pids_of_workers(site: LoopbackSite) -> set[int]:
    """The processes that sent requests (a worker id is HOST-PID-RANDOM)."""
    return {int(r.worker.split("-")[-2]) for r in site.requests if r.worker}


def alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] != "Z"  # a zombie is dead
    except FileNotFoundError:
        return False


@contextlib.contextmanager
def crawling(
    db: str, pages_per_host: int, *extra: str
) -> Iterator[tuple[LoopbackSite, subprocess.Popen[str]]]:
    """4 hosts at 50 ms a page, one at a time per host, crawled by --processes 2."""
    site = LoopbackSite(SiteSpec(hosts=4, pages_per_host=pages_per_host, delay=0.05)).start()
    crawl = start_crawl(db, site, *extra)
    try:
        yield site, crawl
    finally:
        if crawl.poll() is None:
            crawl.kill()
            crawl.communicate()
        site.stop()


def both_crawling(site: LoopbackSite) -> None:
    wait_for(lambda: len(pids_of_workers(site)) == 2, "both processes to crawl", 90)


def test_two_processes_fetch_every_page_once(db_url: str) -> None:
    with crawling(db_url, pages_per_host=100) as (site, crawl):  # 5 s or more of work
        _, err = communicate(crawl, timeout=120)
        assert crawl.returncode == 0, err
        assert "Traceback" not in err
        # Told the run is over, the helper leaves without a word to the terminal.
        assert "received" not in err and "a helper of run" not in err, err
        assert_exact(db_url, site)  # completed; counters equal a recount
        assert_host_counters_match_a_recount(db_url)
        assert_each_page_fetched_once(site)
        workers = pids_of_workers(site)
        assert len(workers) == 2 and crawl.pid in workers, workers  # it and one helper
        assert not any(alive(pid) for pid in workers - {crawl.pid})


def test_two_processes_stop_at_max_pages_exactly(db_url: str) -> None:
    """Both processes admit the links they find into one capped run (on PostgreSQL side by
    side, within slots of its budget): the run ends with exactly max_pages tasks, each
    fetched once, and not one request more."""
    cap = 150
    with crawling(db_url, 100, "--max-pages", str(cap)) as (site, crawl):  # 400 pages
        _, err = communicate(crawl, timeout=120)
        assert crawl.returncode == 0, err
        run, counts, tasks = read_run(db_url)
    assert run.status is RunStatus.COMPLETED
    assert run.counters.tasks_total == run.counters.completed == len(tasks) == cap
    assert counts[TaskState.COMPLETED] == cap
    assert_host_counters_match_a_recount(db_url)
    fetched = site.fetch_counts()
    assert {t.url: fetched[t.url] for t in tasks} == {t.url: 1 for t in tasks}
    assert sum(fetched.values()) == cap  # nothing beyond the cap was requested


def test_ctrl_c_stops_the_run_for_every_process(db_url: str) -> None:
    with crawling(db_url, pages_per_host=200) as (site, crawl):
        both_crawling(site)
        os.killpg(crawl.pid, signal.SIGINT)  # Ctrl-C: the terminal signals the foreground group
        _, err = communicate(crawl, timeout=90)
        assert crawl.returncode == 130, err
        assert "Traceback" not in err
        run, counts, _ = read_run(db_url)
        assert run.status is RunStatus.STOPPED
        assert run.counters.assigned == 0 and run.counters.pending > 0
        assert run.counters.completed == counts[TaskState.COMPLETED]  # exact
        assert not any(alive(pid) for pid in pids_of_workers(site))  # no orphan
        quiet_from = len(site.requests)
        time.sleep(1)  # a real wait, to show nothing happens: no orphan fetches any more
        assert len(site.requests) == quiet_from


def test_sigterm_makes_every_process_leave_and_the_run_goes_on(db_url: str) -> None:
    with crawling(db_url, pages_per_host=150) as (site, crawl):
        both_crawling(site)
        crawl.send_signal(signal.SIGTERM)
        _, err = communicate(crawl, timeout=90)
        assert crawl.returncode == 143, err
        assert "Traceback" not in err
        assert not any(alive(pid) for pid in pids_of_workers(site))  # its helper left too
        run = read_run(db_url)[0]
        assert run.status is RunStatus.RUNNING and run.counters.assigned == 0

        worker = sitesync("worker", "--run", "1", settings=settings(db_url))
        _, err = communicate(worker, timeout=120)
        assert worker.returncode == 0, err
        assert_exact(db_url, site)
        assert_each_page_fetched_once(site)  # what both had under way finished, none twice


def test_kill_9_of_the_foreground_takes_its_helpers(db_url: str) -> None:
    with crawling(db_url, pages_per_host=200) as (site, crawl):
        both_crawling(site)
        crawl.kill()
        communicate(crawl, timeout=30)
        helpers = pids_of_workers(site) - {crawl.pid}
        wait_for(lambda: not any(alive(pid) for pid in helpers), "the helper to die", 10)


def test_two_processes_share_the_hosts_and_pages_evenly(db_url: str) -> None:
    """Issue 33: the default crawl's spread came from work shared unevenly. The foreground
    claimed every host before its helper had joined, fetched the first page of each (all 8
    roots here), and handed half of the hosts over only once it saw the helper; at the end,
    hosts ran dry at different times and the process whose hosts were done sat idle until
    the other's next claim refresh. Now each process claims only its share from the start,
    and shares are looked at again while both work."""
    site = LoopbackSite(SiteSpec(hosts=8, pages_per_host=60, delay=0.05)).start()
    try:
        crawl = start_crawl(db_url, site, "--concurrency", "8")
        _, err = communicate(crawl, timeout=180)
        assert crawl.returncode == 0, err
        assert_each_page_fetched_once(site)
        requests = [r for r in site.requests if r.worker]
    finally:
        site.stop()
    roots = Counter(r.worker for r in requests if r.path == "/")
    pages = Counter(r.worker for r in requests)
    assert sorted(roots.values()) == [4, 4], roots  # each process its 4 hosts from the start
    # Equal hosts at an equal pace (one request at a time, 50 ms each): each process about
    # half of the pages; a host handed over late, or one process idle, shows here.
    assert len(pages) == 2 and min(pages.values()) >= 0.4 * len(requests), pages
