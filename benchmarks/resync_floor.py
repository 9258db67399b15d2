"""The floor under an unchanged rescan (issue 30): a bare aiohttp loop on the site of
``resync.py``, fetching every page in full and then again with its validators (every answer
a 304), with nothing else done per page. What it costs a page is the transport's share of a
crawl's; the rest of a crawl's CPU a page is sitesync's bookkeeping (a lease, a report, the
store's writes) and, in a first scan, the page's processing.

    python benchmarks/resync_floor.py [--hosts 10] [--pages 1000] [--rounds 2]
"""

from __future__ import annotations

import argparse
import asyncio
import resource
import tempfile
import time
from pathlib import Path

import aiohttp
from resync import free_port, page_name, start_nginx, write_site

Kept = dict[str, tuple[str, str]]


def cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


async def fetch_all(urls: list[str], kept: Kept | None, concurrency: int) -> tuple[Kept, int]:
    """Every URL once (conditionally when ``kept`` has its validators): (the validators
    answered, how many answers were 304)."""
    answered: Kept = {}
    not_modified = 0
    queue: asyncio.Queue[str] = asyncio.Queue()
    for url in urls:
        queue.put_nowait(url)
    connector = aiohttp.TCPConnector(limit=concurrency, limit_per_host=4)
    async with aiohttp.ClientSession(connector=connector) as session:

        async def fetcher() -> None:
            nonlocal not_modified
            while not queue.empty():
                url = queue.get_nowait()
                headers = {}
                if kept is not None and url in kept:
                    etag, modified = kept[url]
                    headers = {"If-None-Match": etag, "If-Modified-Since": modified}
                async with session.get(url, headers=headers) as response:
                    await response.read()
                    answered[url] = (response.headers["etag"], response.headers["last-modified"])
                    not_modified += response.status == 304

        await asyncio.gather(*(fetcher() for _ in range(concurrency)))
    return answered, not_modified


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--hosts", type=int, default=10)
    parser.add_argument("--pages", type=int, default=1000)
    parser.add_argument("--page-bytes", type=int, default=30_000)
    parser.add_argument("--concurrency", type=int, default=32)
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="sitesync-resync-floor-") as tmp:
        work = Path(tmp)
        work.chmod(0o755)
        write_site(work / "site", args.hosts, args.pages, args.page_bytes)
        (work / "nginx").mkdir()
        port = free_port()
        nginx = start_nginx(work / "nginx", work / "site", args.hosts, port)
        try:
            urls = [
                f"http://127.0.0.{host + 2}:{port}/{page_name(i) if i else ''}"
                for host in range(args.hosts)
                for i in range(args.pages)
            ]
            for _ in range(args.rounds):
                measure(urls, args.concurrency)
        finally:
            nginx.terminate()
            nginx.wait(10)


def measure(urls: list[str], concurrency: int) -> None:
    cpu, wall = cpu_seconds(), time.monotonic()
    kept, _ = asyncio.run(fetch_all(urls, None, concurrency))
    full_cpu, full_wall = cpu_seconds() - cpu, time.monotonic() - wall
    cpu, wall = cpu_seconds(), time.monotonic()
    _, not_modified = asyncio.run(fetch_all(urls, kept, concurrency))
    again_cpu, again_wall = cpu_seconds() - cpu, time.monotonic() - wall
    per_page = 1000 / len(urls)
    print(
        f"full: {full_wall:.2f} s, {full_cpu * per_page:.3f} ms CPU a page; "
        f"conditional: {again_wall:.2f} s, {again_cpu * per_page:.3f} ms CPU a page "
        f"({not_modified} of {len(urls)} answers 304)"
    )


if __name__ == "__main__":
    main()
