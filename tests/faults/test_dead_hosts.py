"""A dead host costs seconds, not the run's tail (issue 10, item 6).

The real CLI crawls one healthy loopback site plus three dead seeds: a port that refuses
connections, one that never answers a connection, and a server whose robots.txt answers
503 (RFC 9309: disallow everything). The dead-host settings are the default count (3
checks) with re-checks shortened from the defaults' 5 s and 15 s to 0.5 s and 1.5 s, so the
drill takes seconds instead of half a minute; what it asserts does not depend on the waits.
The defaults themselves are pinned by ``test_the_dead_host_defaults_are_as_documented``.
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from aiohttp import web

from sitesync.config import Settings, load_settings
from sitesync.engine.wiring import worker_options
from sitesync.errors import ConfigError
from sitesync.models import HostStatus, Run, RunHost, RunStatus, Task, TaskState
from sitesync.runs.crawl import crawl
from sitesync.runs.request import CrawlRequest, prepare_run
from sitesync.store import open_store
from sitesync.store.sqlite.store import SqliteStore
from sitesync.testing import LoopbackSite, SiteSpec
from tests.acceptance._cli import communicate, read_run, run_in_process, sitesync
from tests.integration.test_crawl import fast_settings

#: Well under two minutes; the dead hosts end about 2 s after their first failure (the
#: shortened re-checks below; about 20 s with the defaults).
BOUND_SECONDS = 60.0
DEFAULT_ATTEMPTS = 3
#: The defaults' 5 s and 15 s re-checks, shortened tenfold: the same three checks.
SHORT_RECHECKS = "0.5,1.5"


def refused_origin() -> str:
    """An address nothing listens on: bind a port, note it, close it."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.40", 0))
        port = sock.getsockname()[1]
    return f"http://127.0.0.40:{port}"


@contextlib.contextmanager
def dropping_origin() -> Iterator[str]:
    """A host that never accepts a connection, as a firewall that drops packets does: a
    listener with a backlog of 0 whose one place is taken (Linux then drops every further
    SYN, so a connect hangs until the client gives up)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as listener:
        listener.bind(("127.0.0.41", 0))
        listener.listen(0)
        port = listener.getsockname()[1]
        with socket.create_connection(("127.0.0.41", port), timeout=5):
            yield f"http://127.0.0.41:{port}"


def run_hosts(db: str) -> dict[str, RunHost]:
    async def go() -> dict[str, RunHost]:
        store = await open_store(db)
        try:
            return {h.host: h for h in await store.list_run_hosts(1)}
        finally:
            await store.close()

    return asyncio.run(go())


def serve_late_links(site: LoopbackSite, dead: threading.Event, targets: list[str]) -> None:
    """``/late.html`` links to the dead hosts, but only once both are dead: links found
    later must not revive them. Until then it answers 503 with Retry-After, and is retried."""

    async def late(request: web.Request) -> web.Response:
        if not dead.is_set():
            return web.Response(status=503, headers={"Retry-After": "1"})
        links = "".join(f'<a href="{url}">x</a>' for url in targets)
        return web.Response(text=f"<html><body>{links}</body></html>", content_type="text/html")

    site.set_handler("/late.html", late)


#: /late.html is retried about every second until the dead hosts are dead.
LATE_RETRIES = {"max_retries": "100", "retry_backoff": "0.2", "retry_backoff_max": "1"}


@pytest.mark.slow
def test_one_healthy_and_three_dead_seeds_complete_in_seconds(db_url: str) -> None:
    with dropping_origin() as dropping:
        one_healthy_and_three_dead_seeds(db_url, dropping)


def one_healthy_and_three_dead_seeds(db_url: str, dropping: str) -> None:
    healthy = LoopbackSite(SiteSpec(hosts=1, pages_per_host=12, links_per_page=6)).start()
    unavailable = LoopbackSite(SiteSpec(hosts=1, pages_per_host=3, first_ip=30)).start()

    async def robots_503(request: web.Request) -> web.Response:
        return web.Response(status=503, text="down for maintenance")

    unavailable.set_handler("/robots.txt", robots_503)
    refused = refused_origin()
    unavailable_host = unavailable.hosts[0] if unavailable.hosts else ""
    dead = threading.Event()
    late_targets = [f"{refused}/later.html", f"{dropping}/later.html"]
    serve_late_links(healthy, dead, [*late_targets, f"{unavailable.root_urls[0]}later.html"])
    try:
        started = time.monotonic()
        crawl = sitesync(
            "crawl", *healthy.root_urls, f"{healthy.root_urls[0]}late.html",
            f"{refused}/", f"{dropping}/", *unavailable.root_urls,
            "--db", db_url, "--no-progress", "--delay", "0",
            # Each check of the host that never answers costs connect_timeout.
            settings={
                **LATE_RETRIES, "connect_timeout": "1",
                "dead_host_recheck_seconds": SHORT_RECHECKS,
            },
        )  # fmt: skip
        while crawl.poll() is None and not dead.is_set():
            if time.monotonic() - started > BOUND_SECONDS:
                break
            ended = [h for h in run_hosts(db_url).values() if h.ended_as is not None]
            if len(ended) == 3:
                dead.set()
            time.sleep(0.3)
        out, err = communicate(crawl, timeout=BOUND_SECONDS)
        elapsed = time.monotonic() - started
    finally:
        healthy.stop()
        unavailable.stop()

    assert crawl.returncode == 0, err
    assert elapsed < BOUND_SECONDS, f"took {elapsed:.1f}s"
    run, counts, tasks = read_run(db_url)
    assert run.status is RunStatus.COMPLETED
    # Counters equal a recount.
    assert (run.counters.pending, run.counters.assigned) == (0, 0)
    assert run.counters.completed == counts[TaskState.COMPLETED]
    assert run.counters.failed == counts[TaskState.FAILED]
    assert run.counters.tasks_total == len(tasks)

    # Every healthy page fetched once.
    fetched = healthy.fetch_counts()
    assert all(fetched[url] == 1 for url in healthy.page_urls()), fetched
    assert fetched[f"{healthy.root_urls[0]}late.html"] >= 1

    # The refused host's tasks ended unreachable, the late link too: it was not revived.
    # So did those of the host that never answers (its robots.txt got no connection
    # either: no connection, not "robots.txt unavailable").
    by_host = {host: [t for t in tasks if t.host == host] for host in {t.host for t in tasks}}
    for origin in (refused, dropping):
        gone = by_host[origin.removeprefix("http://")]
        assert {t.url for t in gone} == {f"{origin}/", f"{origin}/later.html"}
        assert {(t.state, t.outcome) for t in gone} == {(TaskState.FAILED, "unreachable")}
        assert all("no connection to the host at 3 checks" in (t.last_error or "") for t in gone)
    refused_host = refused.removeprefix("http://")
    gone = by_host[refused_host]

    # The robots-503 host's tasks ended blocked; only robots.txt (and the sitemap probe of
    # seeding) reached it: one request per check, no page.
    unavailable_host = unavailable.root_urls[0].removeprefix("http://").rstrip("/")
    down = by_host[unavailable_host]
    assert f"{unavailable.root_urls[0]}later.html" in {t.url for t in down}
    assert {(t.state, t.outcome) for t in down} == {(TaskState.FAILED, "blocked")}
    paths = [r.path for r in unavailable.requests]
    assert paths.count("/robots.txt") == DEFAULT_ATTEMPTS, paths
    assert set(paths) <= {"/robots.txt", "/sitemap.xml"}, paths

    # Terminal statuses, with every ended task counted once in the host's errors.
    hosts = run_hosts(db_url)
    assert hosts[refused_host].status is HostStatus.UNREACHABLE
    assert hosts[dropping.removeprefix("http://")].status is HostStatus.UNREACHABLE
    assert hosts[unavailable_host].status is HostStatus.BLOCKED
    assert hosts[refused_host].errors == len(gone)
    assert hosts[unavailable_host].errors == len(down)
    assert hosts[healthy.root_urls[0].removeprefix("http://").rstrip("/")].status is (
        HostStatus.EXHAUSTED
    )

    shown = run_in_process("show", "1", "--db", db_url)
    out = shown.stdout
    assert shown.returncode == 0, shown.stderr
    rows = {line.split()[1]: line for line in out.splitlines() if "127.0.0." in line[:30]}
    assert "unreachable" in rows[refused_host] and "blocked" in rows[unavailable_host], out


async def crawl_one_host(
    settings: Settings, seeds: tuple[str, ...], host: str, *, stored_failures: int = 0
) -> tuple[Run, float, list[Task], RunHost | None]:
    """Crawl ``seeds`` (all on ``host``) to the end: the run, the seconds it took, its
    tasks and the host's state. ``stored_failures``: as an earlier holder left them."""
    store = await SqliteStore.open(settings.db)
    try:
        run, settings = await prepare_run(store, CrawlRequest(seeds=seeds), settings)
        if stored_failures:
            await store.save_host_failures(run.id, host, failures=stored_failures)
        started = time.monotonic()
        final = await crawl(store, run, settings)
        elapsed = time.monotonic() - started
        tasks = await store.list_tasks(run.id)
        return final, elapsed, tasks, await store.get_run_host(run.id, host)
    finally:
        await store.close()


async def test_a_worker_taking_a_host_over_continues_its_failure_count(tmp_path: Path) -> None:
    """Two failures were stored by an earlier holder: the next one ends the host at once,
    instead of after the 5 s and 15 s re-checks a fresh count would need."""
    refused = refused_origin()
    host = refused.removeprefix("http://")
    settings = fast_settings(tmp_path)  # dead-host settings at their defaults
    seeds = (f"{refused}/", f"{refused}/a", f"{refused}/b")
    final, elapsed, tasks, stored = await crawl_one_host(
        settings, seeds, host, stored_failures=DEFAULT_ATTEMPTS - 1
    )
    assert final.status is RunStatus.COMPLETED
    assert elapsed < 15.0, f"took {elapsed:.1f}s: the stored count was not continued"
    assert len(tasks) == 3
    assert {(t.state, t.outcome) for t in tasks} == {(TaskState.FAILED, "unreachable")}
    assert stored is not None and stored.status is HostStatus.UNREACHABLE
    assert (final.counters.failed, final.counters.pending) == (3, 0)


def test_the_dead_host_defaults_are_as_documented() -> None:
    """3 checks, re-checks after 5 s, 15 s and 30 s (docs/settings.md, docs/operating.md):
    the end-to-end drill above runs with shorter re-checks, so the defaults are pinned here."""
    settings = load_settings()
    assert settings.dead_host_attempts == DEFAULT_ATTEMPTS
    assert settings.dead_host_recheck_seconds == (5.0, 15.0, 30.0)
    options = worker_options(settings)
    assert (options.dead_host_attempts, options.dead_host_recheck) == (3, (5.0, 15.0, 30.0))


def test_dead_host_settings_are_read_and_checked() -> None:
    settings = load_settings(dead_host_attempts=4, dead_host_recheck_seconds="1, 2.5")
    options = worker_options(settings)
    assert (options.dead_host_attempts, options.dead_host_recheck) == (4, (1.0, 2.5))
    with pytest.raises(ConfigError, match="dead_host_recheck_seconds"):
        load_settings(dead_host_recheck_seconds="5,-1")


async def test_a_host_that_dies_mid_crawl_ends_its_remaining_pages_in_one_step(
    tmp_path: Path,
) -> None:
    """The site answers a few pages, then goes away (connection refused): everything left
    of it ends ``unreachable`` after the re-checks (shortened here), counters exact."""
    site = LoopbackSite(SiteSpec(hosts=1, pages_per_host=60, delay=0.05)).start()
    stopper = threading.Thread(target=stop_after, args=(site, 8), daemon=True)
    stopper.start()
    settings = fast_settings(
        tmp_path, per_host_concurrency=1, dead_host_recheck_seconds="0.2", max_retries=5
    )
    store = await SqliteStore.open(settings.db)
    try:
        run, settings = await prepare_run(
            store, CrawlRequest(seeds=tuple(site.root_urls)), settings
        )
        final = await crawl(store, run, settings)
        counts = await store.count_tasks(run.id)
        tasks = await store.list_tasks(run.id, limit=10_000)
        [host] = await store.list_run_hosts(run.id)
    finally:
        await store.close()
        site.stop()
    assert final.status is RunStatus.COMPLETED
    answered = [t for t in tasks if t.state is TaskState.COMPLETED]
    ended = [t for t in tasks if t.state is TaskState.FAILED]
    assert answered and ended and len(answered) + len(ended) == len(tasks)
    assert {t.outcome for t in ended} == {"unreachable"}
    assert all("at 3 checks" in (t.last_error or "") for t in ended)
    assert (final.counters.completed, final.counters.failed) == (
        counts[TaskState.COMPLETED], counts[TaskState.FAILED],
    )  # fmt: skip
    assert host.status is HostStatus.UNREACHABLE
    assert (host.pages_crawled, host.errors) == (len(answered), len(ended))


def stop_after(site: LoopbackSite, requests: int) -> None:
    """Stop ``site`` (its port then refuses connections) once it answered ``requests``."""
    deadline = time.monotonic() + 30
    while len(site.requests) < requests and time.monotonic() < deadline:
        time.sleep(0.01)
    site.stop()


async def test_a_host_that_never_accepts_a_connection_is_dead_in_seconds(tmp_path: Path) -> None:
    """A connection that is never answered says the host is not there, as a refused one
    does: three checks and every URL of the host ends ``unreachable``. (Each used to time
    out and be retried as if only the URL were slow.)"""
    settings = fast_settings(
        tmp_path, connect_timeout=0.3, dead_host_recheck_seconds="0.2", max_retries=5
    )
    with dropping_origin() as dropping:
        seeds = tuple(f"{dropping}/{n}" for n in range(6))
        host = dropping.removeprefix("http://")
        final, elapsed, tasks, stored = await crawl_one_host(settings, seeds, host)
    assert final.status is RunStatus.COMPLETED
    assert {(t.state, t.outcome) for t in tasks} == {(TaskState.FAILED, "unreachable")}
    assert all("at 3 checks" in (t.last_error or "") for t in tasks), tasks[0].last_error
    assert all("no answer to the connection within 0.3s" in (t.last_error or "") for t in tasks)
    assert stored is not None and stored.status is HostStatus.UNREACHABLE
    assert elapsed < 15.0, f"took {elapsed:.1f}s"
