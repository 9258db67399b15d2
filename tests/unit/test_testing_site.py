"""The loopback test site: pages, links, request log, custom handlers, reachability, shutdown."""

from __future__ import annotations

import asyncio
import dataclasses
import json
import os
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urljoin, urlsplit, urlunsplit

import aiohttp
import pytest
from aiohttp import web
from selectolax.lexbor import LexborHTMLParser

import sitesync
from sitesync.testing import OUT_OF_SCOPE_IPS, LoopbackSite, SiteSpec
from sitesync.testing.serve import parse_args

SPEC = SiteSpec(hosts=2, pages_per_host=20)


@pytest.fixture
def site() -> Iterator[LoopbackSite]:
    with LoopbackSite(SPEC) as s:
        yield s


async def get(url: str, **headers: str) -> tuple[int, str, str]:
    async with aiohttp.ClientSession() as session, session.get(url, headers=headers) as resp:
        return resp.status, resp.headers.get("Content-Type", ""), await resp.text()


def hrefs(html: str, selector: str = "a[href]") -> list[str]:
    return [a.attributes["href"] or "" for a in LexborHTMLParser(html).css(selector)]


def same_host_links(page_url: str, html: str) -> set[str]:
    """In-site links of a page, resolved and normalized the way a crawler should."""
    host = urlsplit(page_url).netloc
    found: set[str] = set()
    for href in hrefs(html):
        parts = urlsplit(urljoin(page_url, href))  # urljoin lowercases the scheme, drops ".."
        if parts.scheme == "http" and parts.netloc.lower() == host:
            found.add(urlunsplit(("http", host, parts.path, "", "")))
    return found


async def test_root_page_is_html_with_structured_links(site: LoopbackSite) -> None:
    root = site.root_urls[0]
    status, content_type, html = await get(root)
    assert status == 200
    assert content_type == "text/html; charset=utf-8"
    assert abs(len(html.encode()) - SPEC.page_bytes) < 200
    assert hrefs(html, "nav a[href]")[:2] == ["/", "/p/1.html"]  # home, then the next page
    main, footer = hrefs(html, "main a[href]"), hrefs(html, "footer a[href]")
    assert len(hrefs(html)) == SPEC.links_per_page
    port = site.port
    assert any(".html#section-" in h for h in main)
    assert any("?utm_source=x&utm_medium=y" in h for h in main)
    assert any(h.startswith(f"HTTP://127.0.0.2:{port}/") for h in main)
    assert any(h.startswith("/p/../") for h in main)
    assert any(h.startswith(f"http://127.0.0.3:{port}/") for h in main)  # cross-host
    assert "mailto:webmaster@example.invalid" in footer
    assert "javascript:void(0)" in footer
    assert any(h.startswith("http://example.invalid/") for h in footer)
    assert any(h.startswith("http://127.0.0.25") for h in footer)


async def test_pages_are_deterministic_and_per_host(site: LoopbackSite) -> None:
    a = await get(site.root_urls[0] + "p/7.html")
    b = await get(site.root_urls[0] + "p/7.html")
    other_host = await get(site.root_urls[1] + "p/7.html")
    assert a == b
    assert a[2] != other_host[2]
    with LoopbackSite(SiteSpec(hosts=2, pages_per_host=20, seed=1), port=0) as reseeded:
        shifted = await get(reseeded.root_urls[0] + "p/7.html")
    assert shifted[2].replace(str(reseeded.port), "PORT") != a[2].replace(str(site.port), "PORT")


async def test_unknown_paths_are_404(site: LoopbackSite) -> None:
    base = site.root_urls[0]
    for path in ("nope", "p/0.html", "p/20.html", "p/01.html", "p/-1.html", "p/x.html", "p/"):
        status, _, _ = await get(base + path)
        assert status == 404, path


async def test_variant_urls_serve_the_canonical_page(site: LoopbackSite) -> None:
    canonical = await get(site.root_urls[0] + "p/5.html")
    variant = await get(site.root_urls[0] + "p/5.html?utm_source=x&utm_medium=y")
    assert variant == canonical
    assert site.fetch_counts()[f"http://127.0.0.2:{site.port}/p/5.html"] == 2


async def test_request_log_records_host_path_times_agent(site: LoopbackSite) -> None:
    before = time.monotonic()
    await get(site.root_urls[1] + "p/3.html?a=1", **{"User-Agent": "probe/1.0"})
    [record] = site.requests
    assert record.host == f"127.0.0.3:{site.port}"
    assert record.path == "/p/3.html?a=1"
    assert before <= record.started <= record.finished <= time.monotonic()
    assert record.user_agent == "probe/1.0"
    assert site.fetch_counts() == {f"http://127.0.0.3:{site.port}/p/3.html": 1}
    site.clear_requests()
    assert site.requests == []


async def test_delayed_requests_overlap_in_time() -> None:
    with LoopbackSite(SiteSpec(hosts=1, pages_per_host=5, delay=0.2)) as slow:
        await asyncio.gather(get(slow.root_urls[0] + "p/1.html"), get(slow.root_urls[0]))
        first, second = slow.requests
    assert first.finished - first.started >= 0.19
    assert max(first.started, second.started) < min(first.finished, second.finished)


async def test_set_handler_overrides_paths(site: LoopbackSite) -> None:
    async def always_500(request: web.Request) -> web.StreamResponse:
        return web.Response(status=500, text="boom")

    async def custom_page(request: web.Request) -> web.StreamResponse:
        return web.Response(text="<p>custom</p>", content_type="text/html")

    site.set_handler("/flaky.html", always_500)
    site.set_handler("/p/3.html", custom_page)
    assert (await get(site.root_urls[0] + "flaky.html"))[0] == 500
    assert (await get(site.root_urls[1] + "flaky.html?x=1"))[0] == 500
    assert (await get(site.root_urls[0] + "p/3.html"))[2] == "<p>custom</p>"
    assert [r.path for r in site.requests] == ["/flaky.html", "/flaky.html?x=1", "/p/3.html"]
    site.remove_handler("/p/3.html")
    assert (await get(site.root_urls[0] + "p/3.html"))[0] == 200


async def test_every_page_is_reachable_and_out_of_scope_links_exist(site: LoopbackSite) -> None:
    seen: set[str] = set()
    out_of_scope_hosts: set[str] = set()
    async with aiohttp.ClientSession() as session:
        for root in site.root_urls:
            frontier = [root]
            seen.add(root)
            while frontier:
                url = frontier.pop()
                async with session.get(url) as resp:
                    assert resp.status == 200, url
                    html = await resp.text()
                for href in hrefs(html):
                    host = urlsplit(urljoin(url, href)).hostname
                    if host in OUT_OF_SCOPE_IPS:
                        out_of_scope_hosts.add(host)
                for link in same_host_links(url, html) - seen:
                    seen.add(link)
                    frontier.append(link)
    assert seen == set(site.page_urls())
    assert len(seen) == SPEC.hosts * SPEC.pages_per_host
    assert out_of_scope_hosts == set(OUT_OF_SCOPE_IPS)
    # Every request went to an in-site address: nothing listens on the out-of-scope ones.
    assert {r.host for r in site.requests} == set(site.hosts)


async def test_stop_is_prompt_with_open_connections() -> None:
    site = LoopbackSite(SiteSpec(hosts=1, pages_per_host=3)).start()
    async with aiohttp.ClientSession() as session:
        async with session.get(site.root_urls[0]) as resp:
            await resp.read()
        # The keep-alive connection is still open while the server stops.
        started = time.monotonic()
        await asyncio.to_thread(site.stop)
        assert time.monotonic() - started < 2
    assert not [t for t in threading.enumerate() if t.name == "LoopbackSite"]
    site.stop()  # idempotent


def test_spec_rejects_hosts_overlapping_out_of_scope_ips() -> None:
    with pytest.raises(ValueError):
        SiteSpec(hosts=10, first_ip=245)


def test_serve_forever_in_another_process() -> None:
    env = dict(os.environ)
    # The child imports sitesync from wherever this process did.
    src = str(Path(sitesync.__file__).resolve().parents[1])
    env["PYTHONPATH"] = src + os.pathsep + env.get("PYTHONPATH", "")
    cmd = [sys.executable, "-m", "sitesync.testing", "--hosts", "2", "--pages-per-host", "5"]
    cmd += ["--port", "0", "--no-log", "--stats-path", "/__stats__"]
    with subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True, env=env) as proc:
        try:
            assert proc.stdout is not None
            info = json.loads(proc.stdout.readline())
            port = info["port"]
            assert info["root_urls"] == [f"http://127.0.0.2:{port}/", f"http://127.0.0.3:{port}/"]
            status, _, html = asyncio.run(get(info["root_urls"][1] + "p/4.html"))
            assert status == 200 and "Host 1 page 4" in html
            stats = json.loads(asyncio.run(get(info["root_urls"][0] + "__stats__"))[2])
            assert stats == {"served": 1, "status": {"200": 1}}
        finally:
            proc.terminate()
        assert proc.wait(timeout=5) == 0


def test_every_spec_field_is_a_flag_of_the_separate_process_mode() -> None:
    args = parse_args(
        ["--hosts", "4", "--pages-per-host", "7", "--links-per-page", "5", "--page-bytes", "100",
         "--first-ip", "9", "--delay", "0.5", "--seed", "3", "--no-cross-host-links",
         "--no-variant-links", "--no-out-of-scope-links", "--etag", "--spurious-304"]
    )  # fmt: skip
    assert {f.name: getattr(args, f.name) for f in dataclasses.fields(SiteSpec)} == {
        "hosts": 4,
        "pages_per_host": 7,
        "links_per_page": 5,
        "page_bytes": 100,
        "first_ip": 9,
        "cross_host_links": False,
        "variant_links": False,
        "out_of_scope_links": False,
        "delay": 0.5,
        "seed": 3,
        "etag": True,
        "weak_etag": False,
        "last_modified": False,
        "future_last_modified": False,
        "ignore_validators": False,
        "spurious_304": True,
    }
    defaults = parse_args([])
    assert all(getattr(defaults, f.name) == f.default for f in dataclasses.fields(SiteSpec))
