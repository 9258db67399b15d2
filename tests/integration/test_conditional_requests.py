"""Rescans revalidate what the store fetched before (issue 30): whole crawls in process
against a real loopback site that sends validators and honours them (or gets them wrong,
one switch per misbehaviour), on both backends."""

from __future__ import annotations

import contextlib
import sqlite3
from collections.abc import Callable
from pathlib import Path

import psycopg
import pytest
from aiohttp import web

from sitesync.config import load_settings
from sitesync.models import FetchOutcome, Run, RunStatus, Task
from sitesync.runs.crawl import crawl
from sitesync.runs.request import CrawlRequest, prepare_run
from sitesync.store.base import Store
from sitesync.store.sqlite.store import SqliteStore
from sitesync.testing import LoopbackSite, SiteSpec
from sitesync.testing.spec import RequestRecord
from sitesync.testing.validators import LAST_MODIFIED
from tests import _postgres

MakeSite = Callable[[SiteSpec], LoopbackSite]


def tree(**validators: bool) -> SiteSpec:
    """One host of 12 pages, each linking to the root, the next page and one more: pages
    several levels deep, only reached through the links of the pages above them."""
    return SiteSpec(hosts=1, pages_per_host=12, links_per_page=3, page_bytes=4_000,
                    variant_links=False, cross_host_links=False, out_of_scope_links=False,
                    **validators)  # type: ignore[arg-type]  # fmt: skip


async def scan(
    store: Store,
    site: LoopbackSite,
    tmp_path: Path,
    extra_seeds: tuple[str, ...] = (),
    **settings: object,
) -> Run:
    values: dict[str, object] = {
        "db": str(tmp_path / "unused.db"), "concurrency": 4, "per_host_concurrency": 0,
        "delay": 0, "retry_backoff": 0.01, "retry_backoff_max": 0.05,
        "respect_robots": False, "sitemaps": False, **settings,
    }  # fmt: skip
    request = CrawlRequest(seeds=(*site.root_urls, *extra_seeds))
    run, ready = await prepare_run(store, request, load_settings(**values))
    final = await crawl(store, run, ready)
    assert final.status is RunStatus.COMPLETED
    return final


async def tasks_of(store: Store, run: Run) -> dict[str, Task]:
    return {task.url: task for task in await store.list_tasks(run.id, limit=10_000)}


def page_requests(site: LoopbackSite) -> list[RequestRecord]:
    return [r for r in site.requests if r.path != "/robots.txt"]


async def test_a_rescan_of_an_unchanged_site_reaches_every_page_and_downloads_no_body(
    store: Store, site_factory: MakeSite, tmp_path: Path
) -> None:
    site = site_factory(tree(etag=True, last_modified=True))
    first = await scan(store, site, tmp_path)
    served = {f"http://{r.host}{r.path}": r for r in page_requests(site)}
    assert set(served) == set(site.page_urls())
    assert max(t.depth for t in (await tasks_of(store, first)).values()) >= 2  # 3+ levels
    site.clear_requests()

    second = await scan(store, site, tmp_path)
    asked = page_requests(site)
    assert {f"http://{r.host}{r.path}" for r in asked} == set(site.page_urls())
    assert len(asked) == len(site.page_urls())  # one request a page, none again in full
    assert {(r.status, r.body_bytes, r.if_modified_since) for r in asked} == {
        (304, 0, LAST_MODIFIED)
    }
    for record in asked:  # the ETag each page was served with the first time
        assert (
            record.if_none_match
            and record.if_none_match
            == (await store.last_fetch(f"http://{record.host}{record.path}")).validators.etag
        )  # type: ignore[union-attr]
    tasks = await tasks_of(store, second)
    assert set(tasks) == set(site.page_urls())
    assert {t.outcome for t in tasks.values()} == {FetchOutcome.NOT_MODIFIED}
    assert {t.http_status for t in tasks.values()} == {304}
    assert second.counters.bytes_fetched == 0
    # Every record the first scan wrote is seen again, and none has a second version.
    before = {(r.key, r.version) for r in await store.records_of_run(first.id)}
    assert before and before == {(r.key, r.version) for r in await store.records_of_run(second.id)}
    diff = await store.diff_runs(first.id, second.id)
    assert not (diff.added or diff.removed or diff.changed)


async def test_turned_off_every_page_is_fetched_in_full(
    store: Store, site_factory: MakeSite, tmp_path: Path
) -> None:
    site = site_factory(tree(etag=True, last_modified=True))
    await scan(store, site, tmp_path, conditional_requests=False)
    assert await store.last_fetch(site.root_urls[0]) is None  # nothing kept either
    await scan(store, site, tmp_path)
    site.clear_requests()
    second = await scan(store, site, tmp_path, conditional_requests=False)
    assert second.settings is not None and second.settings["conditional_requests"] is False
    asked = page_requests(site)
    assert {(r.status, r.if_none_match, r.if_modified_since) for r in asked} == {(200, "", "")}
    assert len(asked) == len(site.page_urls())


async def test_a_weak_etag_is_sent_as_it_came_and_a_weak_match_is_a_304(
    store: Store, site_factory: MakeSite, tmp_path: Path
) -> None:
    site = site_factory(tree(weak_etag=True))
    await scan(store, site, tmp_path)
    site.clear_requests()
    second = await scan(store, site, tmp_path)
    asked = page_requests(site)
    assert all(r.if_none_match.startswith('W/"') and r.status == 304 for r in asked)
    assert len(asked) == len(site.page_urls())
    tasks = await tasks_of(store, second)
    assert {t.outcome for t in tasks.values()} == {FetchOutcome.NOT_MODIFIED}


async def test_a_last_modified_in_the_future_is_not_sent(
    store: Store, site_factory: MakeSite, tmp_path: Path
) -> None:
    site = site_factory(tree(future_last_modified=True))
    first = await scan(store, site, tmp_path)
    site.clear_requests()
    second = await scan(store, site, tmp_path)
    asked = page_requests(site)
    assert {(r.status, r.if_none_match, r.if_modified_since) for r in asked} == {(200, "", "")}
    tasks = await tasks_of(store, second)
    assert set(tasks) == set(site.page_urls())
    assert all("in the future" in (t.last_error or "") for t in tasks.values())
    assert {t.outcome for t in tasks.values()} == {FetchOutcome.SUCCESS}
    await assert_sightings_only(store, first, second)


async def assert_sightings_only(store: Store, first: Run, second: Run) -> None:
    """The second scan saw every record of the first, each still at its first version."""
    before = {(r.key, r.version) for r in await store.records_of_run(first.id)}
    after = {(r.key, r.version) for r in await store.records_of_run(second.id)}
    assert before and before == after
    assert {version for _, version in after} == {1}


async def test_a_server_that_ignores_validators_costs_a_full_fetch_and_a_sighting(
    store: Store, site_factory: MakeSite, tmp_path: Path
) -> None:
    site = site_factory(tree(etag=True, ignore_validators=True))
    first = await scan(store, site, tmp_path)
    site.clear_requests()
    second = await scan(store, site, tmp_path)
    asked = page_requests(site)
    assert len(asked) == len(site.page_urls())  # no request twice
    assert all(r.if_none_match and r.status == 200 for r in asked)
    tasks = await tasks_of(store, second)
    assert {t.outcome for t in tasks.values()} == {FetchOutcome.SUCCESS}
    await assert_sightings_only(store, first, second)


async def test_a_304_to_a_request_without_validators_is_fetched_again_in_full(
    store: Store, site_factory: MakeSite, tmp_path: Path
) -> None:
    site = site_factory(tree(etag=True, spurious_304=True))
    first = await scan(store, site, tmp_path)
    statuses: dict[str, list[int]] = {}
    for record in page_requests(site):
        statuses.setdefault(record.path, []).append(record.status)
    assert len(statuses) == len(site.page_urls())
    assert set(map(tuple, statuses.values())) == {(304, 200)}
    tasks = await tasks_of(store, first)
    assert {t.outcome for t in tasks.values()} == {FetchOutcome.SUCCESS}
    assert all("without validators" in (t.last_error or "") for t in tasks.values())
    assert len(await store.records_of_run(first.id)) >= len(site.page_urls())


async def test_a_304_for_a_page_whose_records_are_gone_is_fetched_again_in_full(
    store: Store, site_factory: MakeSite, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    site = site_factory(tree(etag=True))
    first = await scan(store, site, tmp_path)
    root = site.root_urls[0]
    forget_records_of(store, root, request)
    site.clear_requests()
    second = await scan(store, site, tmp_path)
    root_requests = [r for r in page_requests(site) if r.path == "/"]
    assert [(r.status, bool(r.if_none_match)) for r in root_requests] == [(304, True), (200, False)]
    tasks = await tasks_of(store, second)
    assert set(tasks) == set(site.page_urls())  # the links came from the body, in full
    assert tasks[root].outcome is FetchOutcome.SUCCESS
    assert "no longer has" in (tasks[root].last_error or "")
    others = {t.outcome for url, t in tasks.items() if url != root}
    assert others == {FetchOutcome.NOT_MODIFIED}
    assert {r.url for r in await store.records_of_task(second.id, tasks[root].id)} == {root}
    assert first.id != second.id


_FORGET = (
    "DELETE FROM record_seen WHERE record_id IN (SELECT id FROM records WHERE url = {p})",
    "DELETE FROM record_versions WHERE record_id IN (SELECT id FROM records WHERE url = {p})",
    "DELETE FROM records WHERE url = {p}",
)


def forget_records_of(store: Store, url: str, request: pytest.FixtureRequest) -> None:
    """What no sitesync command does: a page's records deleted from the store by hand."""
    if isinstance(store, SqliteStore):
        with contextlib.closing(sqlite3.connect(store.path)) as conn, conn:
            for statement in _FORGET:
                conn.execute(statement.format(p="?"), (url,))
        return
    dsn = request.getfixturevalue("postgres_dsn")
    schema = request.getfixturevalue("postgres_schema")
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute(_postgres.search_path(schema))
        for statement in _FORGET:
            conn.execute(statement.format(p="%s"), (url,))  # type: ignore[arg-type]


async def test_each_hop_of_a_redirect_is_revalidated_with_its_own_url_s_validators(
    store: Store, site_factory: MakeSite, tmp_path: Path
) -> None:
    """A seed that redirects: the redirect is asked again (nothing kept for it), and its
    target with the validators of the body it answered last time."""
    site = site_factory(tree(etag=True))

    async def moved(request: web.Request) -> web.StreamResponse:
        return web.Response(status=301, headers={"Location": "/p/5.html"})

    site.set_handler("/moved", moved)
    seed = site.root_urls[0] + "moved"
    await scan(store, site, tmp_path, extra_seeds=(seed,))
    site.clear_requests()
    second = await scan(store, site, tmp_path, extra_seeds=(seed,))
    hops = [(r.path, r.status, bool(r.if_none_match)) for r in page_requests(site)
            if r.path in ("/moved", "/p/5.html")]  # fmt: skip
    assert sorted(hops) == [("/moved", 301, False), ("/p/5.html", 304, True),
                            ("/p/5.html", 304, True)]  # fmt: skip
    task = (await tasks_of(store, second))[seed]
    assert (task.outcome, task.http_status) == (FetchOutcome.NOT_MODIFIED, 304)
    assert task.final_url == site.root_urls[0] + "p/5.html"
