"""The "bare" ceiling: fetch a known list of pages with plain asyncio + aiohttp.

No frontier, no dedup, no scoping, no storage: just one ClientSession, ``concurrency`` worker
coroutines and the same parsing work a crawler does per page (selectolax ``a[href]`` + urljoin).
Whatever a real crawler adds on top shows up as the gap between it and this loop.

Run by ``benchmarks/run.py`` in its own process so its CPU time and peak RSS are its own::

    python benchmarks/bare.py --spec-json '{"hosts": 20, ...}' --port N --concurrency 64 --out F
"""

from __future__ import annotations

import argparse
import asyncio
import json
import time
from pathlib import Path
from typing import Any
from urllib.parse import urljoin

import aiohttp
from selectolax.lexbor import LexborHTMLParser

from sitesync.testing import SiteSpec, page_urls


async def crawl(urls: list[str], concurrency: int) -> dict[str, Any]:
    pages = 0
    links = 0
    errors = 0
    non_200 = 0
    # limit_per_host=0: the per-host cap would otherwise be the bottleneck, not the client.
    connector = aiohttp.TCPConnector(limit=concurrency, limit_per_host=0)
    timeout = aiohttp.ClientTimeout(total=60)
    started = time.monotonic()
    async with aiohttp.ClientSession(connector=connector, timeout=timeout) as session:
        todo = iter(urls)

        async def worker() -> None:
            nonlocal pages, links, errors, non_200
            # One shared iterator: each URL is handed to exactly one worker, no queue needed.
            for url in todo:
                try:
                    async with session.get(url) as resp:
                        body = await resp.read()
                        status = resp.status
                except (aiohttp.ClientError, TimeoutError):
                    errors += 1
                    continue
                if status != 200:
                    non_200 += 1
                    continue
                pages += 1
                for node in LexborHTMLParser(body).css("a[href]"):
                    href = node.attributes.get("href")
                    if href:
                        urljoin(url, href)
                        links += 1

        await asyncio.gather(*(worker() for _ in range(concurrency)))
    elapsed = time.monotonic() - started
    return {
        "pages": pages,
        "links": links,
        "errors": errors,
        "non_200": non_200,
        "crawl_seconds": elapsed,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--spec-json", required=True, help="SiteSpec fields as JSON")
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--concurrency", type=int, default=64)
    parser.add_argument("--out", type=Path, required=True, help="write the result JSON here")
    args = parser.parse_args()
    spec = SiteSpec(**json.loads(args.spec_json))
    result = asyncio.run(crawl(page_urls(spec, args.port), args.concurrency))
    args.out.write_text(json.dumps(result))


if __name__ == "__main__":
    main()
