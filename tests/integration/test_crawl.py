"""Whole crawls in process, against a real multi-host site on loopback and a real SQLite file."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from aiohttp import web

from sitesync.config import Settings, load_settings
from sitesync.models import Run, RunStatus, Task, TaskState
from sitesync.runs.crawl import crawl
from sitesync.runs.request import CrawlRequest, prepare_run
from sitesync.store.sqlite.store import SqliteStore
from sitesync.testing import OUT_OF_SCOPE_IPS, LoopbackSite, SiteSpec


def fast_settings(tmp_path: Path, **overrides: object) -> Settings:
    values: dict[str, object] = {
        "db": str(tmp_path / "crawl.db"),
        "concurrency": 8,
        "per_host_concurrency": 0,
        "delay": 0,
        "retry_backoff": 0.01,
        "retry_backoff_max": 0.05,
        "respect_robots": False,
        "sitemaps": False,
    }
    values.update(overrides)
    return load_settings(**values)


async def run_crawl(
    settings: Settings, request: CrawlRequest
) -> tuple[Run, dict[TaskState, int], list[Task]]:
    store = await SqliteStore.open(settings.db)
    try:
        run, settings = await prepare_run(store, request, settings)
        final = await crawl(store, run, settings)
        counts = await store.count_tasks(run.id)
        tasks = await store.list_tasks(run.id, limit=100_000)
        return final, counts, tasks
    finally:
        await store.close()


async def test_every_in_scope_page_is_fetched_exactly_once(
    site_factory: Callable[[SiteSpec], LoopbackSite], tmp_path: Path
) -> None:
    site: LoopbackSite = site_factory(SiteSpec(hosts=3, pages_per_host=40))
    settings = fast_settings(tmp_path)
    run, counts, tasks = await run_crawl(settings, CrawlRequest(seeds=tuple(site.root_urls)))

    fetched = site.fetch_counts()
    assert set(fetched) == set(site.page_urls())  # all pages, and nothing else
    assert max(fetched.values()) == 1
    requested_hosts = {record.host.rsplit(":", 1)[0] for record in site.requests}
    assert not requested_hosts & set(OUT_OF_SCOPE_IPS)

    assert run.status is RunStatus.COMPLETED
    assert run.counters.completed == counts[TaskState.COMPLETED] == len(site.page_urls())
    assert run.counters.pages_fetched == len(site.page_urls())
    assert run.counters.pending == run.counters.assigned == run.counters.failed == 0
    assert {t.url for t in tasks} == set(site.page_urls())
    assert sorted(t.depth for t in tasks if t.url in site.root_urls) == [0, 0, 0]


async def test_a_url_that_always_fails_ends_failed_after_max_retries(
    site_factory, tmp_path
) -> None:  # type: ignore[no-untyped-def]
    site: LoopbackSite = site_factory(SiteSpec(hosts=1, pages_per_host=10))

    async def always_500(request: web.Request) -> web.Response:
        return web.Response(status=500, text="boom")

    site.set_handler("/p/3.html", always_500)
    settings = fast_settings(tmp_path, max_retries=3)
    run, counts, tasks = await run_crawl(settings, CrawlRequest(seeds=tuple(site.root_urls)))

    assert run.status is RunStatus.COMPLETED  # the run drains and terminates
    failing = f"http://{site.hosts[0]}/p/3.html"
    assert site.fetch_counts()[failing] == 3
    [failed] = [t for t in tasks if t.state is TaskState.FAILED]
    assert failed.url == failing and failed.attempt_count == 3
    assert failed.last_error == "http_error: HTTP 500"
    assert run.counters.failed == 1 and run.counters.retries == 2
    assert counts[TaskState.COMPLETED] == run.counters.completed == run.counters.tasks_total - 1


async def test_unreachable_host_fails_with_a_readable_error(tmp_path: Path) -> None:
    # Nothing listens on this loopback address and port: connection refused. Dead-host
    # handling off: the URL's own retries (tests/faults/test_dead_hosts.py has the rest).
    settings = fast_settings(tmp_path, max_retries=2, dead_host_attempts=0)
    run, _, tasks = await run_crawl(
        settings, CrawlRequest(seeds=(f"http://{OUT_OF_SCOPE_IPS[0]}:9/",))
    )
    assert run.status is RunStatus.COMPLETED
    [task] = tasks
    assert task.state is TaskState.FAILED and task.attempt_count == 2
    assert task.last_error is not None and task.last_error.startswith("unreachable:")


async def test_scope_options_limit_the_crawl(
    site_factory: Callable[[SiteSpec], LoopbackSite], tmp_path: Path
) -> None:
    site: LoopbackSite = site_factory(SiteSpec(hosts=2, pages_per_host=30))
    request = CrawlRequest(
        seeds=(site.root_urls[0],),
        max_depth=2,
        exclude=(r"/p/1\d\.html$",),
    )
    run, _, tasks = await run_crawl(fast_settings(tmp_path), request)
    assert run.status is RunStatus.COMPLETED
    assert tasks and all(t.depth <= 2 for t in tasks)
    assert all(t.host == site.hosts[0] for t in tasks)  # the seed's host only
    assert not any(
        "/p/1" in t.url and t.url.endswith(tuple(f"1{d}.html" for d in range(10))) for t in tasks
    )
    assert {r.host for r in site.requests} == {site.hosts[0]}


async def test_max_pages_bounds_the_crawl(
    site_factory: Callable[[SiteSpec], LoopbackSite], tmp_path: Path
) -> None:
    site: LoopbackSite = site_factory(SiteSpec(hosts=2, pages_per_host=50))
    run, _, tasks = await run_crawl(
        fast_settings(tmp_path), CrawlRequest(seeds=tuple(site.root_urls), max_pages=25)
    )
    assert run.status is RunStatus.COMPLETED
    assert len(tasks) == run.counters.tasks_total == run.counters.completed == 25
    assert sum(site.fetch_counts().values()) == 25


async def test_body_over_the_cap_is_recorded_not_kept(
    site_factory: Callable[[SiteSpec], LoopbackSite], tmp_path: Path
) -> None:
    site: LoopbackSite = site_factory(SiteSpec(hosts=1, pages_per_host=3))

    async def huge(request: web.Request) -> web.StreamResponse:
        response = web.StreamResponse(headers={"Content-Type": "text/html"})
        await response.prepare(request)
        for _ in range(64):  # 4 MiB, streamed without a Content-Length
            await response.write(b"<p>" + b"x" * 65533)
        await response.write_eof()
        return response

    site.set_handler("/p/1.html", huge)
    run, _, tasks = await run_crawl(
        fast_settings(tmp_path, max_body_bytes=100_000), CrawlRequest(seeds=tuple(site.root_urls))
    )
    big = next(t for t in tasks if t.url.endswith("/p/1.html"))
    assert big.state is TaskState.COMPLETED and big.http_status == 200
    assert run.counters.bytes_fetched < 100_000 * 3
