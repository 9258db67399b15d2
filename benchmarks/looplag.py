"""How long one page holds the crawler's event loop (issue 29): a loop-lag probe.

A healthy loopback host (``--healthy-pages`` pages, ``--delay`` between its requests) is
crawled beside a host whose pages are expensive to process, all under the default caps:

- ``big``: 4 MB of ordinary HTML with 60,000 links (the parse, the links, the plugins);
- ``tail``: 10 MB, its last 5 MB past ``max_parse_bytes`` (only counted);
- ``nested``: deeply nested ``<div>``\\ s (lexbor's parse grows with the square of the depth);
- ``attrs``: one tag with tens of thousands of distinct attributes (the same);
- ``sitemap``: a 10 MB sitemap listed in robots.txt.

A probe task on the crawl's loop sleeps 5 ms at a time and records how late it wakes: the
longest wake-up delay is the longest the loop was held. Also printed: the longest gap
between two requests of the healthy host (its pace), and each bad page's outcome.

    .venv/bin/python benchmarks/looplag.py                 # the default sizes
    .venv/bin/python benchmarks/looplag.py --nested-kb 100  # smaller pathologies (a run
                                                            # without a budget ends sooner)
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import tempfile
import time
from pathlib import Path

from aiohttp import web

from sitesync.config import load_settings
from sitesync.runs.crawl import crawl
from sitesync.runs.request import CrawlRequest, prepare_run
from sitesync.store import open_store
from sitesync.testing import LoopbackSite, SiteSpec

MB = 1024 * 1024


def bad_pages(nested_kb: int, attrs_kb: int) -> dict[str, bytes]:
    links = "".join(
        f'<p><a href="http://127.0.0.250/x/{i}.html">link {i}</a></p>' for i in range(60_000)
    )
    big = f"<html><body>{links}</body></html>".encode()
    big = big + b" " * max(0, 4 * MB - len(big))
    tail = big + b'<a href="http://127.0.0.250/">t</a>' * ((5 * MB) // 35)
    nested = b"<html><body>" + b"<div>" * (nested_kb * 1024 // 5)
    attrs = b"<html><body><a " + b" ".join(b"x%d=1" % i for i in range(attrs_kb * 1024 // 8)) + b">"
    burn = b"<html><body><p>burn</p></body></html>"  # for tests/plugin_packages/burning
    return {
        "/big.html": big, "/tail.html": tail, "/nested.html": nested, "/attrs.html": attrs,
        "/burn.html": burn,
    }  # fmt: skip


def sitemap_body() -> bytes:
    entries = b"".join(
        b"<url><loc>http://127.0.0.250/s/%d.html</loc></url>" % i for i in range(50_000)
    )
    body = b"<urlset>" + entries
    return body + b" " * (10 * MB - 20 - len(body)) + b"</urlset>"


class Probe:
    """How late a 5 ms sleep on the loop wakes, at worst (and when)."""

    def __init__(self) -> None:
        self.worst = 0.0
        self.stalls: list[float] = []  # every lateness over 100 ms

    async def run(self) -> None:
        while True:
            before = time.perf_counter()
            await asyncio.sleep(0.005)
            late = time.perf_counter() - before - 0.005
            self.worst = max(self.worst, late)
            if late > 0.1:
                self.stalls.append(late)


def serve_bad(site: LoopbackSite, pages: dict[str, bytes], sitemap: bytes) -> None:
    def handler(body: bytes, content_type: str = "text/html") -> object:
        async def respond(request: web.Request) -> web.Response:
            return web.Response(body=body, content_type=content_type)

        return respond

    root = "".join(f'<a href="{path}">{path}</a>' for path in pages).encode()
    site.set_handler("/", handler(b"<html><body>" + root + b"</body></html>"))  # type: ignore[arg-type]

    async def robots(request: web.Request) -> web.Response:
        where = f"http://{request.host}/sitemap-big.xml"
        return web.Response(text=f"User-agent: *\nAllow: /\nSitemap: {where}\n")

    site.set_handler("/robots.txt", robots)
    site.set_handler("/sitemap-big.xml", handler(sitemap, "application/xml"))  # type: ignore[arg-type]
    for path, body in pages.items():
        site.set_handler(path, handler(body))  # type: ignore[arg-type]


async def measure(args: argparse.Namespace, healthy: LoopbackSite, bad: LoopbackSite) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        settings = load_settings(
            db=args.db or str(Path(tmp) / "lag.db"), concurrency=8, per_host_concurrency=1,
            delay=args.delay, adaptive_politeness=False, respect_robots=True, sitemaps=True,
            allowed_networks=["127.0.0.0/8"],
        )  # fmt: skip
        store = await open_store(settings.db)
        probe = Probe()
        probing = asyncio.ensure_future(probe.run())
        started = time.monotonic()
        try:
            seeds = (healthy.root_urls[0], bad.root_urls[0])
            run, settings = await prepare_run(store, CrawlRequest(seeds=seeds), settings)
            final = await crawl(store, run, settings)
            tasks = await store.list_tasks(run.id, limit=100_000)
        finally:
            probing.cancel()
            await store.close()
    seconds = time.monotonic() - started
    times = sorted(r.started for r in healthy.requests)
    gap = max((b - a for a, b in itertools.pairwise(times)), default=0.0)
    print(f"run {final.status.value} in {seconds:.1f} s; healthy host: {len(times)} requests")
    print(f"longest loop stall: {probe.worst * 1000:.0f} ms; stalls over 100 ms: "
          f"{len(probe.stalls)} (total {sum(probe.stalls):.1f} s)")  # fmt: skip
    print(f"longest gap between two healthy requests: {gap * 1000:.0f} ms "
          f"(delay {args.delay * 1000:.0f} ms)")  # fmt: skip
    for task in tasks:
        if task.host == bad.hosts[0]:
            outcome = task.outcome.value if task.outcome else "-"
            print(f"  {task.url.rsplit('/', 1)[-1]:14s} {outcome:14s} {task.last_error or ''}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--healthy-pages", type=int, default=300)
    parser.add_argument("--delay", type=float, default=0.05)
    parser.add_argument("--db", help="a PostgreSQL URL (an empty database); default: SQLite")
    parser.add_argument("--nested-kb", type=int, default=4000)
    parser.add_argument("--attrs-kb", type=int, default=4000)
    args = parser.parse_args()
    healthy_spec = SiteSpec(hosts=1, pages_per_host=args.healthy_pages, first_ip=2,
                            cross_host_links=False, links_per_page=10)  # fmt: skip
    with LoopbackSite(healthy_spec) as healthy, LoopbackSite(SiteSpec(hosts=1, first_ip=3)) as bad:
        serve_bad(bad, bad_pages(args.nested_kb, args.attrs_kb), sitemap_body())
        asyncio.run(measure(args, healthy, bad))


if __name__ == "__main__":
    main()
