"""``sitesync why``: the real CLI (crawl, then why --json) against a real loopback site, on
both backends; the same answer from the API in process; the dry run (``--fetcher null``)."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from aiohttp import web

from sitesync.config import load_settings
from sitesync.store import open_store
from sitesync.testing import LoopbackSite, SiteSpec
from sitesync.web import create_app
from tests.acceptance._cli import communicate, read_run, run_in_process, sitesync

ROBOTS = "User-agent: *\nDisallow: /private\n"


def page(*links: str) -> Callable[[web.Request], Any]:
    body = "".join(f'<a href="{link}">{link}</a>' for link in links)

    async def handler(request: web.Request) -> web.StreamResponse:
        return web.Response(text=f"<html><body>{body}</body></html>", content_type="text/html")

    return handler


def fails_twice_then_answers() -> Callable[[web.Request], Any]:
    calls = 0

    async def handler(request: web.Request) -> web.StreamResponse:
        nonlocal calls
        calls += 1
        if calls <= 2:
            return web.Response(status=500, text="try again")
        return web.Response(text="<html><body>at last</body></html>", content_type="text/html")

    return handler


@pytest.fixture
def story_site(site_factory: Callable[[SiteSpec], LoopbackSite]) -> Iterator[LoopbackSite]:
    """Root links a flaky page, a robots-disallowed one, an excluded one, a page that links
    one level too deep, and three more pages (the last two over max_pages)."""
    site = site_factory(SiteSpec(hosts=1, pages_per_host=1, links_per_page=0))
    site.set_handler("/robots.txt", _text(ROBOTS))
    site.set_handler(
        "/",
        page("/flaky", "/private/secret", "/skip/me", "/a", "/more/1", "/more/2", "/more/3"),
    )
    site.set_handler("/flaky", fails_twice_then_answers())
    site.set_handler("/a", page("/deep"))
    for path in ("/private/secret", "/skip/me", "/deep", "/more/1", "/more/2", "/more/3"):
        site.set_handler(path, page())
    yield site


def _text(body: str) -> Callable[[web.Request], Any]:
    async def handler(request: web.Request) -> web.StreamResponse:
        return web.Response(text=body, content_type="text/plain")

    return handler


def run_cli(*args: str) -> str:
    done = run_in_process(*args)
    assert done.returncode == 0, done.stderr
    return done.stdout


def why(db: str, url: str) -> dict[str, Any]:
    document = json.loads(run_cli("why", url, "--db", db, "--json"))
    assert document["schema"] == "sitesync.why"
    return document["data"]  # type: ignore[no-any-return]


CRAWL_ARGS = (
    "--no-progress", "--delay", "0", "--per-host-concurrency", "0", "--retry-backoff", "0.05",
    "--no-sitemaps", "--max-retries", "5", "--max-depth", "1", "--max-pages", "5",
    "--exclude", "/skip/",
)  # fmt: skip


def crawl(db: str, root: str) -> None:
    run_cli("crawl", root, "--db", db, *CRAWL_ARGS)


@pytest.mark.slow
@pytest.mark.timeout(300)  # a crawl and nine CLI processes: slow on a busy machine
def test_why_tells_each_urls_story(story_site: LoopbackSite, db_url: str) -> None:
    root = story_site.root_urls[0]
    crawl(db_url, root)

    flaky = why(db_url, root + "flaky")
    assert flaky["admitted"] and flaky["scope"]["in_scope"]
    assert flaky["found"] == {"how": "linked", "linked_from": root, "depth": 1}
    attempts = flaky["attempts"]
    assert [a["http_status"] for a in attempts] == [500, 500, 200]
    assert [a["outcome"] for a in attempts] == ["http_error", "http_error", "success"]
    assert [a["attempt"] for a in attempts] == [1, 2, 3]
    assert all(a["worker_id"] and a["duration"] is not None for a in attempts)
    assert attempts[0]["error"] == "http_error: HTTP 500" and attempts[2]["error"] is None
    assert flaky["verdict"] == "completed: success (HTTP 200)"
    assert {r["kind"] for r in flaky["records"]} >= {"page"}
    assert flaky["robots"]["verdict"] == "allowed" and flaky["robots"]["fetched_at"] > 0

    private = why(db_url, root + "private/secret")
    assert private["robots"]["verdict"] == "disallowed"
    assert private["robots"]["group"] == "User-agent: *"
    assert private["robots"]["rule"] == "Disallow: /private"
    assert private["task"]["outcome"] == "blocked" and private["attempts"][0]["http_status"] is None
    assert not any(r.path == "/private/secret" for r in story_site.requests)

    excluded = why(db_url, root + "skip/me")
    assert not excluded["admitted"]
    assert excluded["verdict"].startswith("never admitted: excluded by pattern '/skip/'")
    assert excluded["found"]["linked_from"] == [root]

    deep = why(db_url, root + "deep")
    assert deep["verdict"].startswith("never admitted: too deep: depth 2 > max_depth 1")
    assert deep["found"] == {"linked_from": [root + "a"], "depth": 2}

    over = why(db_url, root + "more/3")
    assert "over max_pages" in over["verdict"] and over["found"]["linked_from"] == [root]

    never = why(db_url, "HTTP://" + root.removeprefix("http://").upper() + "never#frag")
    assert never["normalized"] == root + "never"
    assert never["verdict"].startswith("never admitted: never linked")

    text = run_cli("why", root + "flaky", "--db", db_url)  # the one-screen form
    assert "attempt 3" in text and "completed: success" in text and len(text.splitlines()) < 25


def test_why_of_a_bad_url_or_unknown_run_is_one_line(tmp_path: Path) -> None:
    db = str(tmp_path / "empty.db")
    done = run_in_process("why", "ftp://x", "--db", db)
    assert done.returncode == 1 and "error:" in done.stderr and "Traceback" not in done.stderr


async def test_the_api_answers_why_as_the_cli_does(
    story_site: LoopbackSite, tmp_path: Path
) -> None:
    db = str(tmp_path / "crawl.db")
    root = story_site.root_urls[0]
    # In a process of its own: this test's event loop is running, and a crawl runs its own.
    crawling = sitesync("crawl", root, "--db", db, *CRAWL_ARGS)
    _, err = await asyncio.to_thread(communicate, crawling, 90)
    assert crawling.returncode == 0, err
    store = await open_store(db)
    try:
        app = create_app(load_settings(db=db), store=store)
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1") as http:
            answer = await http.get("/api/runs/1/why", params={"url": root + "flaky"})
            missing = await http.get("/api/runs/99/why", params={"url": root})
            bad = await http.get("/api/runs/1/why", params={"url": "mailto:x@y"})
            script = (await http.get("/static/dashboard.js")).text
    finally:
        await store.close()
    assert answer.status_code == 200
    assert [a["http_status"] for a in answer.json()["attempts"]] == [500, 500, 200]
    assert missing.status_code == 404 and bad.status_code == 400
    assert "/why?url=" in script  # the error list links each failed URL to its story


def test_dry_run_requests_robots_and_sitemaps_only(
    site_factory: Callable[[SiteSpec], LoopbackSite], db_url: str
) -> None:
    site = site_factory(SiteSpec(hosts=1, pages_per_host=1, links_per_page=0))
    root = site.root_urls[0]
    site.set_handler("/robots.txt", _text(ROBOTS + f"Sitemap: {root}map.xml\n"))
    urls = "".join(f"<url><loc>{root}{p}</loc></url>" for p in ("a", "b", "private/c"))
    sitemap = f'<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">{urls}</urlset>'
    site.set_handler("/map.xml", _text(sitemap))
    out = run_cli("crawl", root, "--db", db_url, "--no-progress", "--fetcher", "null",
                  "--delay", "0")  # fmt: skip
    assert out is not None
    paths = {r.path for r in site.requests}
    assert paths <= {"/robots.txt", "/map.xml", "/sitemap.xml"}, paths
    assert "/robots.txt" in paths and "/map.xml" in paths
    run, _, tasks = read_run(db_url)
    outcomes = {t.url: t.outcome for t in tasks}
    assert outcomes == {
        root: "not_fetched",
        root + "a": "not_fetched",
        root + "b": "not_fetched",
        root + "private/c": "blocked",
    }
    assert run.counters.pages_fetched == 0
