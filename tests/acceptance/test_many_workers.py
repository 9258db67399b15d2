"""Several worker processes on one run, on each backend (SPEC R1-R3).

Every request carries its worker's id (``--worker-id-header``), so the site's own log
shows who fetched what, and when.
"""

from __future__ import annotations

import asyncio
import dataclasses
import itertools
import random
import signal
import subprocess
import time
from collections import Counter, defaultdict

import pytest

from sitesync.models import RunStatus, TaskState
from sitesync.store import Store, open_store
from sitesync.testing import LoopbackSite, RequestRecord, SiteSpec
from tests.acceptance._cli import communicate, read_run, sitesync
from tests.acceptance.test_crash_and_stop import assert_exact, wait_for_progress

pytestmark = pytest.mark.slow


def settings(db: str) -> dict[str, str]:
    """Worker settings as SITESYNC_* variables: short leases and claims, so a killed
    worker's tasks and hosts pass on within seconds; per-host concurrency 2, so one
    worker alone may overlap with itself on a host (but never with another worker).
    robots.txt and sitemaps on: their requests go through the host's claim too."""
    return {
        "db": db, "concurrency": "4", "per_host_concurrency": "2", "delay": "0",
        "lease_seconds": "1", "claim_seconds": "4", "heartbeat_seconds": "0.3",
        "total_timeout": "2", "retry_backoff": "0.05", "respect_robots": "true",
        "sitemaps": "true", "worker_id_header": "true",
    }  # fmt: skip


def new_worker(db: str) -> subprocess.Popen[str]:
    return sitesync("worker", "--run", "1", settings=settings(db))


def start_workers(
    db: str, site: LoopbackSite, count: int, *extra: str
) -> list[subprocess.Popen[str]]:
    first = sitesync("crawl", *site.root_urls, "--no-progress", *extra, settings=settings(db))
    wait_for_progress(db, 1)
    return [first, *(new_worker(db) for _ in range(count - 1))]


def overlaps_between_workers(records: list[RequestRecord]) -> list[str]:
    """Requests to one host that were in flight at the same time from two workers."""
    found = []
    by_host: dict[str, list[RequestRecord]] = defaultdict(list)
    for record in records:
        by_host[record.host].append(record)
    for host, requests in by_host.items():
        latest_end: dict[str, float] = {}
        for record in sorted(requests, key=lambda r: r.started):
            for worker, end in latest_end.items():
                if worker != record.worker and end > record.started:
                    found.append(
                        f"{host}: {worker} until {end}, {record.worker} from {record.started}"
                    )
            latest_end[record.worker] = max(latest_end.get(record.worker, 0.0), record.finished)
    return found


def concurrent_fetches_of_one_url(records: list[RequestRecord]) -> list[str]:
    by_url: dict[str, list[RequestRecord]] = defaultdict(list)
    for record in records:
        by_url[record.host + record.path].append(record)
    found = []
    for url, requests in by_url.items():
        ordered = sorted(requests, key=lambda r: r.started)
        for before, after in itertools.pairwise(ordered):
            if before.finished > after.started:
                found.append(
                    f"{url}: {before.worker} {before.started:.3f}-{before.finished:.3f}, "
                    f"{after.worker} {after.started:.3f}-{after.finished:.3f}"
                )
    return found


def cut_at_kills(records: list[RequestRecord], killed_at: dict[int, float]) -> list[RequestRecord]:
    """A SIGKILLed worker's requests end when it died: the site goes on serving a request
    whose client is gone (its 50 ms delay), and the worker that takes the page over may
    fetch it again meanwhile. A live worker's request is never cut."""

    def died(record: RequestRecord) -> float:
        return killed_at.get(int(record.worker.split("-")[-2]), record.finished)

    return [
        dataclasses.replace(record, finished=min(record.finished, died(record)))
        if record.worker
        else record
        for record in records
    ]


def assert_host_counters_exact(db: str) -> None:
    """The per-host counters and the outcome counts (both flushed by the workers, each task
    once) equal a recount of the tasks, before and after a last flush."""

    async def go() -> tuple[int, int]:
        store = await open_store(db)
        try:
            await _assert_outcomes_exact(store)  # as the workers left them
            await store.flush_host_stats(1)  # whatever a killed worker left uncounted
            await _assert_outcomes_exact(store)
            hosts = await store.list_run_hosts(1)
            claims = await store.list_claims(1)
            assert all(c.expires_at <= time.time() for c in claims), claims
            return sum(h.pages_crawled for h in hosts), (await store.get_run(1)).counters.completed
        finally:
            await store.close()

    by_host, completed = asyncio.run(go())
    assert by_host == completed


async def _assert_outcomes_exact(store: Store) -> None:
    finished = [
        task
        for state in (TaskState.COMPLETED, TaskState.FAILED)
        for task in await store.list_tasks(1, state=state, limit=1_000_000)
    ]
    recount = Counter(
        (
            task.outcome.value if task.outcome else "unknown",
            f"{task.http_status // 100}xx" if task.http_status and task.http_status > 0 else "none",
        )
        for task in finished
    )
    counted = {(c.outcome, c.status_class): c.tasks for c in await store.count_outcomes(1)}
    assert counted == dict(recount)


def test_four_workers_share_a_run_without_sharing_a_host(db_url: str) -> None:
    # 8 hosts: an even share is 2 each, so all four get hosts (with 6, shares of 2 would
    # leave the last joiner none, by design). The site stays slow (0.3 s an answer) until
    # all four have fetched, then goes fast: a fixed pace raced the joiners' start-up (with
    # 70 pages a host at 0.05 s, a fresh-clone CI run under load ended before the fourth
    # worker got a host)
    site = LoopbackSite(SiteSpec(hosts=8, pages_per_host=120, delay=0.3)).start()
    try:
        workers = start_workers(db_url, site, 4)
        wait_for_requests_from(site, 4, timeout=60)
        site.set_delay(0.01)
        for proc in workers:
            _, err = communicate(proc, timeout=90)
            assert proc.returncode == 0, err
        assert_exact(db_url, site)
        records = site.requests  # robots.txt and sitemap requests included
        assert len({r.worker for r in records}) == 4  # the work really was shared by all
        assert overlaps_between_workers(records) == []
        assert_host_counters_exact(db_url)
    finally:
        site.stop()


@pytest.mark.parametrize("cap", [None, 500], ids=["whole site", "max_pages"])
def test_chaos_sigkill_random_workers_until_done(
    db_url: str, cap: int | None, rng: random.Random
) -> None:
    """Workers killed at random and replaced: no URL lost, none fetched twice at once, no
    host shared, counters exact; with max_pages (admissions side by side within the run's
    budget on PostgreSQL, killed in the middle of some) the run holds exactly the cap."""
    # 800 pages (the cap 500 of them): several seconds of work after the fourth kill, on
    # a quiet machine too (1,200 and a cap of 700 only made the crawl longer)
    site = LoopbackSite(SiteSpec(hosts=8, pages_per_host=100, delay=0.05)).start()
    workers: list[subprocess.Popen[str]] = []
    try:
        extra = () if cap is None else ("--max-pages", str(cap))
        workers = start_workers(db_url, site, 3, *extra)
        kills, killed_at = 0, dict[int, float]()
        while kills < 4:
            time.sleep(rng.uniform(0.5, 1.5))  # random points of real processes' work
            run, _, _ = read_run(db_url)
            if run.status is not RunStatus.RUNNING:
                break
            alive = [w for w in workers if w.poll() is None]
            if not alive:
                break  # every worker has finished: nothing is left to kill
            victim = rng.choice(alive)
            victim.send_signal(signal.SIGKILL)
            killed_at[victim.pid] = time.monotonic()  # the site's clock too
            communicate(victim, timeout=10)
            if victim.returncode != -signal.SIGKILL:
                continue  # it had left on its own just before the signal: not a kill
            kills += 1
            workers.append(new_worker(db_url))
        assert kills >= 2, "the run finished before the chaos started"
        for proc in workers:
            if proc.returncode is None:
                _, err = communicate(proc, timeout=120)
                assert proc.returncode in (0, -signal.SIGKILL), err
        run, counts, tasks = read_run(db_url)
        assert run.status is RunStatus.COMPLETED
        if cap is None:
            assert {t.url for t in tasks} == set(site.page_urls())  # no URL lost
        else:
            assert {t.url for t in tasks} <= set(site.page_urls())
        expected = len(site.page_urls()) if cap is None else cap
        assert counts[TaskState.COMPLETED] == run.counters.completed == len(tasks) == expected
        assert run.counters.tasks_total == expected
        records = cut_at_kills(site.requests, killed_at)
        pages = [r for r in records if r.path not in ("/robots.txt", "/sitemap.xml")]
        assert concurrent_fetches_of_one_url(pages) == []
        assert overlaps_between_workers(records) == []
        assert_host_counters_exact(db_url)
    finally:
        for proc in workers:
            if proc.poll() is None:
                proc.kill()
                proc.communicate()
        site.stop()


def wait_for_requests_from(site: LoopbackSite, workers: int, timeout: float = 20.0) -> None:
    deadline = time.monotonic() + timeout
    while len({r.worker for r in site.requests}) < workers:
        assert time.monotonic() < deadline, f"fewer than {workers} workers ever fetched"
        time.sleep(0.05)


def wait_for_shares(db: str, shares: list[int], timeout: float = 30.0) -> None:
    """Wait until the live claims of run 1 are held in exactly these numbers of hosts."""

    async def held() -> list[int]:
        store = await open_store(db)
        try:
            claims = await store.list_claims(1)
            now = store.now()
        finally:
            await store.close()
        return sorted(Counter(c.worker_id for c in claims if c.expires_at > now).values())

    deadline = time.monotonic() + timeout
    while (seen := asyncio.run(held())) != sorted(shares):
        assert time.monotonic() < deadline, f"claims held {seen}, not {shares}"
        time.sleep(0.05)


def test_workers_joining_one_by_one_each_get_their_share(db_url: str) -> None:
    """The first worker holds every host; two more join, the second once the first joiner
    has its share (three hosts each). The last one must get hosts too: whoever holds more
    than the new share lets the extra ones go."""
    # The site stays slow (0.3 s an answer, 240 pages a host: about a minute of work for two
    # workers) until the last joiner has fetched, then goes fast. A fixed pace raced the
    # joiner's start-up: on a loaded CI machine the hosts ran dry before it was in. Slow
    # from the first answer, so the hosts' learned latency never rises (no back-off).
    site = LoopbackSite(SiteSpec(hosts=6, pages_per_host=240, delay=0.3)).start()
    workers: list[subprocess.Popen[str]] = []
    try:
        workers = start_workers(db_url, site, 2)
        wait_for_requests_from(site, 2)
        wait_for_shares(db_url, [3, 3])  # the first two settle at three hosts each
        workers.append(new_worker(db_url))
        wait_for_requests_from(site, 3, timeout=60)  # the last joiner fetched too
        site.set_delay(0.01)
        for proc in workers:
            _, err = communicate(proc, timeout=90)
            assert proc.returncode == 0, err
        assert_exact(db_url, site)
        records = site.requests
        assert len({r.worker for r in records}) == 3
        assert overlaps_between_workers(records) == []
    finally:
        for proc in workers:
            if proc.poll() is None:
                proc.kill()
                proc.communicate()
        site.stop()
