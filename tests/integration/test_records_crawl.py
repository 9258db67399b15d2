"""Plugins and versioned records in whole crawls (SPEC P1-P3), on loopback and a SQLite file.

One site is crawled twice; between the crawls some pages change a little, one is rewritten,
one disappears and one appears. The crawls run once per module; the tests read the result
through the store, the CLI and the exports.
"""

from __future__ import annotations

import asyncio
import csv
import gc
import gzip
import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from aiohttp import web
from typer.testing import CliRunner
from warcio.archiveiterator import ArchiveIterator

from sitesync.cli import app
from sitesync.config import Settings, load_settings
from sitesync.models import Run, RunStatus
from sitesync.runs.crawl import crawl
from sitesync.runs.request import CrawlRequest, prepare_run
from sitesync.store.sqlite.store import SqliteStore
from sitesync.testing import Handler, LoopbackSite, SiteSpec

TEXT = " ".join(f"word{n}" for n in range(300))


def html(title: str, text: str, links: tuple[str, ...] = (), extra: str = "") -> str:
    anchors = "".join(f'<a href="{link}">{link}</a>' for link in links)
    return (
        f"<html><head><title>{title}</title></head><body><nav>{anchors}</nav>"
        f"<h1>{title}</h1><p>{text}</p>{extra}</body></html>"
    )


FIRST = {
    "/": html("Home", "welcome", ("/a", "/b", "/c", "/gone")),
    "/a": html("A", TEXT, extra='<div data-href="/hidden.html">more</div>'),
    "/hidden.html": html("Hidden", "found by the example plugin"),
    "/b": html("B", TEXT),
    "/c": html("C", TEXT),
    "/gone": html("Gone", "soon gone"),
}
SECOND = {
    **FIRST,
    "/": html("Home", "welcome", ("/a", "/b", "/c", "/new")),
    "/b": html("B", TEXT.replace("word150", "edited")),  # a light edit
    "/c": html("Defaced", " ".join(f"pwned{n}" for n in range(300))),  # rewritten
    "/new": html("New", "brand new"),
}
del SECOND["/gone"]


class Pages:
    """The site's pages, swappable between crawls; a path it lacks answers 404."""

    def __init__(self, site: LoopbackSite) -> None:
        self.site = site
        self.pages: dict[str, str] = {}

    def serve(self, pages: dict[str, str]) -> None:
        for path in {*self.pages, *pages}:
            self.site.set_handler(path, self._handler(path))
        self.pages = dict(pages)

    def _handler(self, path: str) -> Handler:
        async def handle(request: web.Request) -> web.Response:
            if path not in self.pages:
                return web.Response(status=404, text="not here")
            return web.Response(text=self.pages[path], content_type="text/html")

        return handle


def settings_for(db: Path, **overrides: object) -> Settings:
    values: dict[str, object] = {
        "db": str(db),
        "concurrency": 4,
        "per_host_concurrency": 0,
        "delay": 0,
        "retry_backoff": 0.01,
        "retry_backoff_max": 0.05,
        "respect_robots": False,
        "sitemaps": False,
    }
    values.update(overrides)
    return load_settings(**values)


async def crawl_once(settings: Settings, seeds: list[str]) -> Run:
    store = await SqliteStore.open(settings.db)
    try:
        run, settings = await prepare_run(store, CrawlRequest(seeds=tuple(seeds)), settings)
        return await crawl(store, run, settings)
    finally:
        await store.close()


@dataclass(frozen=True)
class TwoCrawls:
    db: Path
    origin: str  # http://127.0.0.2:PORT
    first: Run
    second: Run

    def key(self, kind: str, path: str) -> str:
        return f"{kind}:{self.origin}{path}"


@pytest.fixture(scope="module")
def two_crawls(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TwoCrawls]:
    db = tmp_path_factory.mktemp("records") / "crawl.db"
    with LoopbackSite(SiteSpec(hosts=1, pages_per_host=1)) as site:
        pages = Pages(site)
        settings = settings_for(db)
        pages.serve(FIRST)
        first = asyncio.run(crawl_once(settings, site.root_urls))
        pages.serve(SECOND)
        second = asyncio.run(crawl_once(settings, site.root_urls))
        yield TwoCrawls(db, site.root_urls[0].rstrip("/"), first, second)


async def open_store(crawls: TwoCrawls) -> SqliteStore:
    return await SqliteStore.open(crawls.db)


async def test_versions_are_written_only_for_changed_content(two_crawls: TwoCrawls) -> None:
    assert two_crawls.first.status is two_crawls.second.status is RunStatus.COMPLETED
    store = await open_store(two_crawls)
    try:
        [a] = await store.record_history(two_crawls.key("page", "/a"))
        assert (a.version, a.run_id) == (1, two_crawls.first.id)
        light = await store.record_history(two_crawls.key("page", "/b"))
        heavy = await store.record_history(two_crawls.key("page", "/c"))
        assert [v.run_id for v in light] == [two_crawls.first.id, two_crawls.second.id]
        assert len(heavy) == 2
        assert light[1].similarity is not None and heavy[1].similarity is not None
        assert light[1].similarity > 0.9 > 0.1 > heavy[1].similarity
        assert light[0].body_hash is not None  # the page body, kept
        assert await store.get_body(light[0].body_hash) == FIRST["/b"].encode()
    finally:
        await store.close()


async def test_diff_reports_exactly_the_added_removed_and_changed_keys(
    two_crawls: TwoCrawls,
) -> None:
    store = await open_store(two_crawls)
    try:
        diff = await store.diff_runs(two_crawls.first.id, two_crawls.second.id)
    finally:
        await store.close()
    key = two_crawls.key
    kinds = ("page", "links", "headings")
    assert {c.key for c in diff.added} == {key(kind, "/new") for kind in kinds}
    assert {c.key for c in diff.removed} == {key(kind, "/gone") for kind in kinds}
    assert {c.key for c in diff.changed} == {
        key("page", "/"),
        key("links", "/"),
        key("navigation", "/"),  # the root's links moved
        key("page", "/b"),
        key("page", "/c"),
        key("headings", "/c"),
    }


async def test_an_installed_third_party_plugin_runs_in_the_crawl(two_crawls: TwoCrawls) -> None:
    store = await open_store(two_crawls)
    try:
        headings = await store.records_of_run(two_crawls.first.id, kind="headings")
        hidden = await store.record_history(two_crawls.key("page", "/hidden.html"))
    finally:
        await store.close()
    by_key = {r.key: r.data for r in headings}
    assert by_key[two_crawls.key("headings", "/c")] == {"headings": ["C"]}
    assert len(by_key) == len(FIRST)
    # /hidden.html is linked only from a data-href attribute: the plugin contributed it.
    assert len(hidden) == 1


def test_history_and_diff_on_the_command_line(two_crawls: TwoCrawls) -> None:
    runner = CliRunner()
    db = ["--db", str(two_crawls.db)]
    page_c = f"{two_crawls.origin}/c"
    result = runner.invoke(app, ["history", page_c, *db])  # a bare URL names its page
    assert result.exit_code == 0, result.output
    assert f"history of page:{page_c}" in result.output
    assert result.output.count("│") > 0 and " 2 " in result.output

    first, second = str(two_crawls.first.id), str(two_crawls.second.id)
    result = runner.invoke(app, ["diff", first, second, "--json", *db])
    assert result.exit_code == 0, result.output
    diff = json.loads(result.output)["data"]
    assert sorted(c["url"] for c in diff["added"]) == [f"{two_crawls.origin}/new"] * 3
    assert len(diff["changed"]) == 6 and len(diff["removed"]) == 3
    table = runner.invoke(app, ["diff", first, second, *db])
    assert "3 added, 3 removed, 6 changed" in table.output
    records = runner.invoke(app, ["records", second, *db])
    assert records.exit_code == 0 and "navigation" in records.output
    missing = runner.invoke(app, ["history", "page:http://nowhere.test/", *db])
    assert missing.exit_code == 1


def test_export_jsonl_and_csv_round_trip(two_crawls: TwoCrawls, tmp_path: Path) -> None:
    runner = CliRunner()
    run_id = str(two_crawls.second.id)
    for fmt in ("jsonl", "csv"):
        out = tmp_path / f"run.{fmt}"
        args = ["export", run_id, "--format", fmt, "--output", str(out), "--db", str(two_crawls.db)]
        result = runner.invoke(app, args)
        assert result.exit_code == 0, result.output
    lines = [json.loads(line) for line in (tmp_path / "run.jsonl").read_text().splitlines()]
    with (tmp_path / "run.csv").open(newline="") as handle:
        rows = list(csv.DictReader(handle))
    assert [line["key"] for line in lines] == [row["key"] for row in rows]
    assert len(lines) == 3 * len(SECOND) + 1  # page, links, headings per page + navigation
    c = next(line for line in lines if line["key"] == two_crawls.key("page", "/c"))
    row = next(row for row in rows if row["key"] == c["key"])
    assert c["version"] == 2 and row["version"] == "2"
    assert c["data"]["title"] == "Defaced" and json.loads(row["data"]) == c["data"]
    assert float(row["similarity"]) == c["similarity"] < 0.1


@pytest.mark.parametrize("name", ["run.warc", "run.warc.gz"])
def test_export_warc_opens_in_warcio_with_urls_and_payloads(
    two_crawls: TwoCrawls, tmp_path: Path, name: str
) -> None:
    out = tmp_path / name
    args = ["export", str(two_crawls.second.id), "-f", "warc", "-o", str(out)]
    result = CliRunner().invoke(app, [*args, "--db", str(two_crawls.db)])
    assert result.exit_code == 0, result.output
    if name.endswith(".gz"):
        assert gzip.decompress(out.read_bytes()).startswith(b"WARC/1.")
    responses: dict[str, bytes] = {}
    metadata: dict[str, dict[str, object]] = {}
    with out.open("rb") as stream:
        for record in ArchiveIterator(stream):
            uri = record.rec_headers.get_header("WARC-Target-URI")
            if record.rec_type == "response":
                assert record.http_headers.get_statuscode() == "200"
                assert record.http_headers.get_header("Content-Type").startswith("text/html")
                responses[uri] = record.content_stream().read()
            elif record.rec_type == "metadata":
                entry = json.loads(record.content_stream().read())
                metadata[entry["key"]] = entry
    expected = {f"{two_crawls.origin}{path}": body.encode() for path, body in SECOND.items()}
    assert responses == expected
    assert len(metadata) == 3 * len(SECOND) + 1
    assert metadata[two_crawls.key("navigation", "/")]["kind"] == "navigation"


@pytest.mark.slow
async def test_an_unreachable_site_has_a_navigation_shortfall(tmp_path: Path) -> None:
    # the host's re-checks after 0.2 s, not the default 5 s and 15 s: the same three checks
    settings = settings_for(tmp_path / "down.db", max_retries=1, dead_host_recheck_seconds="0.2")
    run = await crawl_once(settings, ["http://127.0.0.250:9/"])  # nothing listens there
    store = await SqliteStore.open(settings.db)
    try:
        [navigation] = await store.records_of_run(run.id)
    finally:
        await store.close()
    assert navigation.key == "navigation:http://127.0.0.250:9/"
    assert navigation.data["shortfall"] == "site unreachable" and navigation.data["urls"] == []


async def test_a_site_whose_robots_txt_disallows_everything(tmp_path: Path) -> None:
    site = LoopbackSite(SiteSpec(hosts=1, pages_per_host=3))
    with site:

        async def robots(request: web.Request) -> web.Response:
            return web.Response(text="User-agent: *\nDisallow: /\n")

        site.set_handler("/robots.txt", robots)
        settings = settings_for(tmp_path / "robots.db", respect_robots=True)
        run = await crawl_once(settings, site.root_urls)
    store = await SqliteStore.open(settings.db)
    try:
        [navigation] = await store.records_of_run(run.id)
    finally:
        await store.close()
    assert navigation.data["shortfall"] == "robots.txt disallows"
    assert not [r for r in site.requests if r.path != "/robots.txt"]


async def test_a_plugin_failing_on_some_pages_never_stops_the_crawl(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.syspath_prepend(str(Path(__file__).parents[1] / "plugin_packages/misbehaving"))
    with LoopbackSite(SiteSpec(hosts=1, pages_per_host=1)) as site:
        pages = Pages(site)
        pages.serve(
            {
                "/": html("Home", "hi", ("/boom", "/fine")),
                "/boom": html("B", "x"),
                "/fine": html("F", "y"),
            }
        )
        settings = settings_for(tmp_path / "flaky.db", plugins="page,flaky")
        run = await crawl_once(settings, site.root_urls)
    store = await SqliteStore.open(settings.db)
    try:
        tasks = {t.url.rsplit("/", 1)[1]: t for t in await store.list_tasks(run.id)}
        kinds = sorted(r.kind for r in await store.records_of_run(run.id))
    finally:
        await store.close()
    assert run.status is RunStatus.COMPLETED and run.counters.completed == 3
    error = tasks["boom"].last_error
    assert error is not None and error.startswith("plugins: flaky: RuntimeError: cannot make sense")
    assert tasks["fine"].last_error is None
    assert kinds == ["flaky", "flaky", "page", "page", "page"]  # boom keeps its page record


async def test_assets_are_downloaded_within_the_cap_and_counted(tmp_path: Path) -> None:
    logo, manual = b"\x89PNG" + b"l" * 100, b"%PDF-" + b"m" * 5000
    with LoopbackSite(SiteSpec(hosts=1, pages_per_host=1)) as site:
        pages = Pages(site)
        pages.serve(
            {
                "/": html("Home", "hi", ("/about",), '<img src="/logo.png"><a href="/m.pdf">m</a>'),
                "/about": html("About", "us", (), '<img src="/logo.png">'),
            }
        )

        async def serve(request: web.Request) -> web.Response:
            body = logo if request.path == "/logo.png" else manual
            return web.Response(body=body, content_type="application/octet-stream")

        for path in ("/logo.png", "/m.pdf"):
            site.set_handler(path, serve)
        settings = settings_for(
            tmp_path / "assets.db", plugins="assets", download_assets=True, max_asset_bytes=1000
        )
        run = await crawl_once(settings, site.root_urls)
        fetched = site.fetch_counts()
    store = await SqliteStore.open(settings.db)
    try:
        [counts] = await store.run_assets(run.id)
        images = await store.records_of_run(run.id, kind="image")
        documents = await store.records_of_run(run.id, kind="document")
    finally:
        await store.close()
    origin = site.root_urls[0].rstrip("/")
    assert fetched[f"{origin}/logo.png"] == 1  # once per run, though on two pages
    assert (counts.assets_found, counts.assets_stored) == (2, 1)
    [image], [document] = images, documents
    assert image.body_hash is not None and image.data["downloaded"] is True
    assert document.body_hash is None and document.data["download_error"] == (
        "larger than 1000 bytes"
    )
    gc.collect()  # an HTTP session the crawl left open would fail this test, not a later one
