"""Per-page cost of the plugin pipeline, on the benchmark site's 20 KB pages.

Fetches pages of a generated site (``sitesync.testing``) once, builds what a crawl hands the
pipeline (the artifact, with its decoded text and extracted links, and the tree the link
extraction parsed), then times ``PluginPipeline.process`` alone: CPU time per page, best of
several passes, for all plugins and for each one. ``--parse`` withholds the tree, so each
page is parsed again (what a pipeline costs without the crawl's parse to share).

Then the records each selection made are written as a crawl writes them: the pages' reports,
in batches of 64, into a new SQLite store (``record writes``: CPU per page of ``report`` with
the records, less the same reports without them, best of ``--write-passes``; every thread of
the process counted, the store's own included).

    python benchmarks/plugins.py [--pages 200] [--plugins page,links] [--no-writes]
"""

from __future__ import annotations

import argparse
import asyncio
import tempfile
import time
import urllib.request
from typing import Any

from sitesync.config import load_settings
from sitesync.fetch.base import FetchOutcome
from sitesync.fetch.html import extract_links
from sitesync.models import AssetRecord, CrawlArtifact, NewTask, RunConfig, RunStatus, TaskReport
from sitesync.plugins.loader import discover
from sitesync.plugins.pipeline import PluginPipeline, build_pipeline
from sitesync.store import open_store
from sitesync.testing import LoopbackSite, SiteSpec

Page = tuple[CrawlArtifact, Any]


def fetch_pages(count: int) -> list[Page]:
    pages: list[Page] = []
    with LoopbackSite(SiteSpec(hosts=1, pages_per_host=count), record_requests=False) as site:
        for n, url in enumerate(site.page_urls()):
            with urllib.request.urlopen(url) as response:  # loopback only
                body = response.read()
                headers = {k.lower(): v for k, v in response.headers.items()}
            text = body.decode()
            links = extract_links(text, url)
            artifact = CrawlArtifact(
                run_id=1,
                task_id=n,
                requested_url=url,
                final_url=url,
                depth=min(n, 1),
                status=200,
                outcome=FetchOutcome.SUCCESS,
                headers=headers,
                body=body,
                text=text,
                redirects=(),
                elapsed=0.0,
                links=tuple(links),
            )
            pages.append((artifact, links.tree))
    return pages


async def per_page(pipeline: PluginPipeline, pages: list[Page], passes: int, parse: bool) -> float:
    for artifact, tree in pages:  # warm up
        await pipeline.process(artifact, tree=None if parse else tree)
    best = float("inf")
    for _ in range(passes):
        started = time.process_time()
        for artifact, tree in pages:
            await pipeline.process(artifact, tree=None if parse else tree)
        best = min(best, (time.process_time() - started) / len(pages))
    return best


#: Reports per store transaction, as the crawl's reporter batches them.
REPORT_BATCH = 64
#: A report of a page fetched and answered, as the crawl makes it.
ANSWERED: dict[str, Any] = {
    "ok": True,
    "http_status": 200,
    "bytes_fetched": 20_000,
    "outcome": FetchOutcome.SUCCESS,
}


async def records_of(pipeline: PluginPipeline, pages: list[Page]) -> list[tuple[AssetRecord, ...]]:
    return [(await pipeline.process(a, tree=tree)).records for a, tree in pages]


async def write_cost(pages: list[Page], records: list[tuple[AssetRecord, ...]]) -> float:
    """CPU seconds per page of reporting the pages with ``records``, in a new SQLite store."""
    with tempfile.TemporaryDirectory() as tmp:
        store = await open_store(f"{tmp}/plugins.db")
        try:
            urls = tuple(artifact.final_url for artifact, _ in pages)
            run = await store.create_run(RunConfig(seeds=urls[:1]))
            await store.transition_run(run.id, RunStatus.RUNNING)
            tasks = [NewTask(url=u, host=u.split("/")[2], depth=1) for u in urls]
            await store.add_tasks(run.id, tasks)
            by_url = dict(zip(urls, records, strict=True))
            started = time.process_time()
            while leases := await store.acquire(
                run.id, worker_id="bench", limit=REPORT_BATCH, lease_seconds=60
            ):
                reports = [
                    TaskReport(lease=lease, records=by_url[lease.url], **ANSWERED)
                    for lease in leases
                ]
                await store.report(run.id, reports)
            return (time.process_time() - started) / len(pages)
        finally:
            await store.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pages", type=int, default=200)
    parser.add_argument("--passes", type=int, default=7)
    parser.add_argument("--plugins", default=None, help="comma-separated; default: all found")
    parser.add_argument("--write-passes", type=int, default=3, help="best of, for the writes")
    parser.add_argument("--parse", action="store_true", help="parse each page again")
    parser.add_argument("--no-writes", action="store_true", help="skip the record writes")
    args = parser.parse_args()
    pages = fetch_pages(args.pages)
    size = sum(len(a.body) for a, _ in pages) // len(pages)
    names = [p.info.name for p in discover(load_settings(plugins=args.plugins).plugins).loaded]
    how = "parsed again" if args.parse else "the crawl's parse shared"
    print(f"{len(pages)} pages of ~{size} B ({how}); CPU time per page, best of {args.passes}")
    for label, selection in [("all: " + ",".join(names), ",".join(names))] + [
        (name, name) for name in names
    ]:
        pipeline = build_pipeline(load_settings(plugins=selection))
        seconds = asyncio.run(per_page(pipeline, pages, args.passes, args.parse))
        line = f"{seconds * 1e6:8.1f} us  {label}"
        if not args.no_writes:
            made = asyncio.run(records_of(pipeline, pages))
            writes = min(
                asyncio.run(write_cost(pages, made))
                - asyncio.run(write_cost(pages, [() for _ in pages]))
                for _ in range(args.write_passes)
            )
            count = sum(map(len, made)) / len(pages)
            line += f"   record writes {writes * 1e6:8.1f} us ({count:.1f} records/page)"
        print(line)


if __name__ == "__main__":
    main()
