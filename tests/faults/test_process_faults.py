"""A process leaving is not the run ending, and operator intent is durable (issue 10,
items 2 and 4): the real CLI in subprocesses, real signals, a real loopback site whose
request log says what reached the server, on each backend.

Nothing here is killed with SIGKILL, so every page must reach the server exactly once:
a worker that leaves lets its fetches under way finish and hands the rest back unfetched.
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
import subprocess
import threading
import time

import pytest

from sitesync.models import RunConfig, RunStatus
from sitesync.store import open_store
from sitesync.testing import LoopbackSite, SiteSpec
from tests.acceptance._cli import read_run, run_in_process, sitesync
from tests.acceptance.test_crash_and_stop import assert_exact, wait_for_progress

pytestmark = pytest.mark.slow


def settings(db: str) -> dict[str, str]:
    """Long leases (nothing is killed, so nothing should ever be fetched twice), short
    claims and quick heartbeats (hosts pass on within seconds), a quick watchdog."""
    return {
        "db": db, "concurrency": "4", "per_host_concurrency": "1", "delay": "0",
        "lease_seconds": "30", "claim_seconds": "13", "heartbeat_seconds": "0.3",
        "total_timeout": "10", "retry_backoff": "0.05", "respect_robots": "false",
        "sitemaps": "false", "worker_id_header": "true",
        "supervisor_heartbeat_seconds": "0.3", "watchdog_seconds": "0.3",
        "stale_run_seconds": "3", "serve_poll_seconds": "0.3",
    }  # fmt: skip


class Process:
    """A CLI process whose stderr is read as it comes, so a test can wait for a line."""

    def __init__(self, *args: str, db: str, extra: dict[str, str] | None = None) -> None:
        self.proc = sitesync(*args, settings={**settings(db), **(extra or {})})
        self.lines: list[str] = []
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.proc.stderr is not None
        for line in self.proc.stderr:
            self.lines.append(line)

    @property
    def stderr(self) -> str:
        return "".join(self.lines)

    def wait_for_line(self, text: str, timeout: float = 60.0) -> None:
        wait_for(lambda: text in self.stderr, f"{text!r} on stderr", timeout)

    def signal(self, sig: signal.Signals) -> None:
        self.proc.send_signal(sig)

    def finish(self, timeout: float = 90.0) -> int:
        try:
            self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            # What it is stuck on: every task's await chain (sitesync.runs.taskdump).
            self.proc.send_signal(signal.SIGUSR1)
            with contextlib.suppress(AssertionError):  # the dump, if it comes at all
                wait_for(
                    lambda: "most recent call first" in self.stderr, "its task dump", timeout=5
                )
            raise AssertionError(
                f"{' '.join(self.proc.args[2:4])} still running after {timeout:g} s; "
                f"its stderr:\n{self.stderr[-20000:]}"
            ) from None
        self._close()
        return self.proc.returncode

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        self._close()

    def _close(self) -> None:
        self._reader.join(timeout=10)
        for pipe in (self.proc.stdout, self.proc.stderr):
            if pipe is not None and not pipe.closed:
                pipe.close()


def cli(db: str, *args: str) -> subprocess.CompletedProcess[str]:
    """A command that steers or queues, run in this process: another process than the
    crawls and supervisors it acts on, which are real subprocesses."""
    return run_in_process(*args, settings=settings(db))


def wait_for(predicate, what: str, timeout: float = 60.0) -> None:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.1)


def status(db: str) -> RunStatus:
    return read_run(db)[0].status


def assert_each_page_fetched_once(site: LoopbackSite) -> None:
    counts = site.fetch_counts()
    pages = site.page_urls()
    twice = sorted(
        f"{r.path}@{r.host.split(':')[0]} {r.worker.split('-')[-2]} {r.started:.2f}"
        for r in site.requests
        if counts[f"http://{r.host.lower()}{r.path}"] > 1
    )
    assert {url: counts[url] for url in pages} == dict.fromkeys(pages, 1), " ".join(twice)
    assert sum(counts.values()) == len(pages)  # nothing else, no variant, no refetch


def assert_host_counters_match_a_recount(db: str) -> None:
    async def go() -> tuple[int, int]:
        store = await open_store(db)
        try:
            hosts = await store.list_run_hosts(1)
            return sum(h.pages_crawled for h in hosts), (await store.get_run(1)).counters.completed
        finally:
            await store.close()

    by_host, completed = asyncio.run(go())
    assert by_host == completed


def worker_state(db: str, pid: int) -> tuple[float | None, list[str]]:
    """The stopped_at of the worker process ``pid``, and the hosts it still claims."""

    async def go() -> tuple[float | None, list[str]]:
        store = await open_store(db)
        try:
            [worker] = [w for w in await store.list_workers(1) if w.pid == pid]
            claims = await store.list_claims(1)
            return worker.stopped_at, [c.host for c in claims if c.worker_id == worker.worker_id]
        finally:
            await store.close()

    return asyncio.run(go())


def test_sigterm_to_one_of_three_workers_and_the_run_goes_on(db_url: str) -> None:
    # 6 hosts x 150 pages, one at a time per host. The site stays slow (0.3 s an answer:
    # 45 s of work) until the leaver has left, then goes fast: a fixed pace would race the
    # workers' start-up, and on a loaded machine the hosts could run dry before they are in
    site = LoopbackSite(SiteSpec(hosts=6, pages_per_host=150, delay=0.3)).start()
    procs: list[Process] = []
    try:
        procs.append(Process("crawl", *site.root_urls, "--no-progress", db=db_url))
        wait_for_progress(db_url, 1, timeout=60)
        procs += [Process("worker", "--run", "1", db=db_url) for _ in range(2)]
        leaver = procs[2]
        tag = f"-{leaver.proc.pid}-"
        wait_for(lambda: sum(tag in r.worker for r in site.requests) >= 5, "the third to crawl")

        leaver.signal(signal.SIGTERM)
        assert leaver.finish(timeout=60) == 0, leaver.stderr  # leaving is a clean exit
        assert "left run 1, which stays running" in leaver.stderr
        assert "Traceback" not in leaver.stderr
        left_at = time.monotonic()
        run = read_run(db_url)[0]
        assert run.status is RunStatus.RUNNING  # not stopped: the others carry on
        assert run.counters.pending > 0  # ... and there was work left to carry on with
        stopped_at, still_claimed = worker_state(db_url, leaver.proc.pid)
        assert stopped_at is not None and still_claimed == []  # its hosts passed on at once
        site.set_delay(0.01)

        for proc in procs[:2]:
            assert proc.finish() == 0, proc.stderr
        assert_exact(db_url, site)  # completed; counters equal a recount of the tasks
        assert_host_counters_match_a_recount(db_url)
        assert_each_page_fetched_once(site)  # its in-flight pages finished, none refetched
        after = [r for r in site.requests if r.started > left_at]
        assert after and not any(tag in r.worker for r in after)
    finally:
        for proc in procs:
            proc.kill()
        site.stop()


#: Pages a host for the pause drills: at 50 ms each, one at a time, a host lasts 4 s at the
#: very least, and the pause (after 5 pages) leaves most of them to fetch after the resume.
#: (200 made the crawl after the resume last 10 s, for nothing more asserted.)
PAUSED_PAGES = 80


def test_a_worker_joining_a_paused_run_waits_for_resume(db_url: str) -> None:
    site = LoopbackSite(SiteSpec(hosts=2, pages_per_host=PAUSED_PAGES, delay=0.05)).start()
    procs: list[Process] = []
    try:
        crawl = Process("crawl", *site.root_urls, "--no-progress", db=db_url)
        procs.append(crawl)
        wait_for_progress(db_url, 5, timeout=60)
        assert cli(db_url, "pause", "1").returncode == 0
        wait_for(lambda: read_run(db_url)[0].counters.assigned == 0, "the pause to settle")
        crawl.wait_for_line("waiting for 'sitesync resume 1'")
        crawl.signal(signal.SIGTERM)  # the foreground crawl leaves too: the pause holds
        assert crawl.finish(timeout=60) == 143, crawl.stderr
        assert "left run 1, which stays paused" in crawl.stderr
        assert status(db_url) is RunStatus.PAUSED

        quiet_from = len(site.requests)
        worker = Process("worker", "--run", "1", db=db_url)
        procs.append(worker)
        worker.wait_for_line("run 1 is paused: waiting for 'sitesync resume 1'")
        time.sleep(1.5)  # a real wait, to show nothing happens: it joined, and it waits
        assert len(site.requests) == quiet_from  # no request reached the server
        assert status(db_url) is RunStatus.PAUSED

        assert cli(db_url, "resume", "1").returncode == 0
        assert worker.finish() == 0, worker.stderr
        assert_exact(db_url, site)
        assert_host_counters_match_a_recount(db_url)
        assert_each_page_fetched_once(site)
    finally:
        for proc in procs:
            proc.kill()
        site.stop()


def test_a_supervisor_stopped_while_a_run_is_paused_leaves_it_paused(db_url: str) -> None:
    site = LoopbackSite(SiteSpec(hosts=2, pages_per_host=PAUSED_PAGES, delay=0.05)).start()
    procs: list[Process] = []
    try:
        assert cli(db_url, "crawl", *site.root_urls, "--queue").returncode == 0
        supervisor = Process("supervise", db=db_url)
        procs.append(supervisor)
        wait_for_progress(db_url, 5, timeout=60)
        assert cli(db_url, "pause", "1").returncode == 0
        wait_for(lambda: read_run(db_url)[0].counters.assigned == 0, "the pause to settle")
        supervisor.signal(signal.SIGTERM)
        assert supervisor.finish(timeout=60) == 0, supervisor.stderr
        assert "Traceback" not in supervisor.stderr
        run = read_run(db_url)[0]
        assert run.status is RunStatus.PAUSED, run.status_reason  # not queued, not stopped
        assert run.crash_retries == 0

        # Another supervisor neither starts nor recovers it while it is paused.
        quiet_from = len(site.requests)
        # Its watchdog would call the run stale after 1.5 s (its heartbeats stopped with the
        # first supervisor, long before).
        again = Process("supervise", db=db_url, extra={"stale_run_seconds": "1.5"})
        procs.append(again)
        again.wait_for_line("supervisor ")  # up, and about to run its first round
        # A real wait, to show nothing happens: longer than its stale_run_seconds, many
        # rounds of a real supervisor's watchdog (every 0.3 s).
        time.sleep(2.5)
        assert status(db_url) is RunStatus.PAUSED and len(site.requests) == quiet_from

        worker = Process("worker", "--run", "1", db=db_url)
        procs.append(worker)
        worker.wait_for_line("waiting for 'sitesync resume 1'")
        assert cli(db_url, "resume", "1").returncode == 0
        assert worker.finish() == 0, worker.stderr
        assert_exact(db_url, site)
        assert read_run(db_url)[0].crash_retries == 0
        assert_each_page_fetched_once(site)
    finally:
        for proc in procs:
            if proc.proc.poll() is None:
                proc.signal(signal.SIGTERM)
                proc.finish(timeout=60)
        site.stop()


def test_supervise_once_from_a_loop_completes_a_queued_run(db_url: str) -> None:
    # 60 pages a host: 3 s a host at the very least, most of it left after the first
    # round is cut short (120 only made the round that completes it longer)
    site = LoopbackSite(SiteSpec(hosts=3, pages_per_host=60, delay=0.05)).start()
    seen: list[RunStatus] = []
    try:
        assert cli(db_url, "crawl", *site.root_urls, "--queue").returncode == 0
        # The first round is cut short, as cron's timeout or a reboot would: its worker
        # leaves and the run goes back to the queue, no crash retry spent.
        first = Process("supervise", "--once", db=db_url)
        wait_for_progress(db_url, 10, timeout=60)
        first.signal(signal.SIGTERM)
        assert first.finish(timeout=60) == 0, first.stderr
        run = read_run(db_url)[0]
        assert run.status is RunStatus.QUEUED and run.crash_retries == 0, run.status_reason
        assert run.counters.assigned == 0 and run.counters.pending > 0

        for _ in range(6):  # cron, every few minutes
            rounds = Process("supervise", "--once", db=db_url)
            assert rounds.finish(timeout=90) == 0, rounds.stderr
            seen.append(status(db_url))
            if seen[-1] is RunStatus.COMPLETED:
                break
        assert seen[0] is RunStatus.COMPLETED  # one round started it and saw it through
        assert RunStatus.FAILED not in seen
        assert read_run(db_url)[0].crash_retries == 0
        assert_exact(db_url, site)
        assert_host_counters_match_a_recount(db_url)
        assert_each_page_fetched_once(site)
        # A round with nothing to do is quick and starts nothing.
        idle = Process("supervise", "--once", db=db_url)
        assert idle.finish(timeout=30) == 0 and status(db_url) is RunStatus.COMPLETED
    finally:
        site.stop()


def test_cleanup_stale_leaves_paused_and_queued_runs_unless_asked(db_url: str) -> None:
    async def prepare() -> None:
        # Written as of an hour ago (the store's clock, not a sleep): idle for 60 minutes
        # when the CLI looks, past --older-than-minutes 30.
        store = await open_store(db_url, clock=lambda: time.time() - 3600)
        try:
            for _ in range(3):
                await store.create_run(RunConfig(seeds=("http://a.test/",)))
            await store.transition_run(2, RunStatus.RUNNING)
            await store.transition_run(3, RunStatus.RUNNING)
            await store.transition_run(3, RunStatus.PAUSED)
        finally:
            await store.close()

    asyncio.run(prepare())  # 1 queued (never started), 2 running, 3 paused
    args = ("runs", "cleanup-stale", "--older-than-minutes", "30", "--yes")
    assert "0 runs idle" in cli(db_url, "runs", "cleanup-stale", "--older-than-minutes", "90",
                                "--yes", "--include-paused", "--include-queued").stdout  # fmt: skip
    default = cli(db_url, *args)
    assert default.returncode == 0 and "marked 1 runs failed" in default.stdout
    statuses = {n: status_of(db_url, n) for n in (1, 2, 3)}
    assert statuses == {1: RunStatus.QUEUED, 2: RunStatus.FAILED, 3: RunStatus.PAUSED}

    paused = cli(db_url, *args, "--include-paused")
    assert paused.returncode == 0 and "marked 1 runs failed" in paused.stdout
    assert status_of(db_url, 3) is RunStatus.FAILED and status_of(db_url, 1) is RunStatus.QUEUED
    queued = cli(db_url, *args, "--include-queued")
    assert queued.returncode == 0 and "marked 1 runs failed" in queued.stdout
    assert status_of(db_url, 1) is RunStatus.FAILED


def status_of(db: str, run_id: int) -> RunStatus:
    return read_run(db, run_id)[0].status
