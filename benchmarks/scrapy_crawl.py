"""The Scrapy baseline: crawl the generated site from its roots with a stock Scrapy setup.

A plain Spider with Scrapy's LinkExtractor follows every link; scope is Scrapy's own offsite
middleware with ``allowed_domains`` set to the site's host IPs. That works on IP hosts: its
host regex is anchored (``^(.*\\.)?(127\\.0\\.0\\.2|...)$``), so 127.0.0.2 does not admit
127.0.0.20 or 127.0.0.250, and it ignores ports, which is fine here because out-of-scope hosts
differ by IP. The one thing stock Scrapy would get wrong is the ``?utm_...`` link variants: its
dupefilter keeps query strings, so the spider strips ``utm_*`` parameters itself, as any
production spider would, otherwise it would fetch those pages twice.

Run by ``benchmarks/run.py`` in its own process::

    python benchmarks/scrapy_crawl.py --roots-json '[...]' --concurrency 64 --out F
"""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import scrapy
from scrapy.crawler import CrawlerProcess
from scrapy.http import Response, TextResponse
from scrapy.linkextractors import LinkExtractor
from w3lib.url import url_query_cleaner

_UTM_PARAMS = ("utm_source", "utm_medium", "utm_campaign", "utm_term", "utm_content")


class SiteSpider(scrapy.Spider):
    name = "site"

    def __init__(self, root_urls: list[str], **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.start_urls = root_urls
        # Hostnames only: the offsite middleware matches hostnames, never ports.
        self.allowed_domains = sorted({url.split("/")[2].split(":")[0] for url in root_urls})
        self.link_extractor = LinkExtractor()
        self.pages = 0
        self.non_200 = 0

    async def start(self) -> AsyncIterator[scrapy.Request]:
        # The default start() marks start URLs dont_filter=True, so each root would be fetched
        # a second time when a page links back to it; these go through the dupefilter.
        for url in self.start_urls:
            yield scrapy.Request(url, callback=self.parse)

    def parse(self, response: Response, **kwargs: Any) -> Iterator[scrapy.Request]:
        if response.status != 200 or not isinstance(response, TextResponse):
            self.non_200 += 1
            return
        self.pages += 1
        for link in self.link_extractor.extract_links(response):
            url = url_query_cleaner(link.url, _UTM_PARAMS, remove=True)
            yield scrapy.Request(url, callback=self.parse)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--roots-json", required=True, help="the site's root URLs as JSON")
    parser.add_argument("--concurrency", type=int, default=64)
    parser.add_argument("--out", type=Path, required=True, help="write the result JSON here")
    args = parser.parse_args()
    roots: list[str] = json.loads(args.roots_json)

    settings = {
        "CONCURRENT_REQUESTS": args.concurrency,
        "CONCURRENT_REQUESTS_PER_DOMAIN": args.concurrency,
        "CONCURRENT_REQUESTS_PER_IP": 0,
        "DOWNLOAD_DELAY": 0,
        "ROBOTSTXT_OBEY": False,
        "AUTOTHROTTLE_ENABLED": False,
        "HTTPCACHE_ENABLED": False,
        "TELNETCONSOLE_ENABLED": False,
        "LOG_LEVEL": "WARNING",
        # Let non-200 responses reach parse() so they are counted rather than silently dropped.
        "HTTPERROR_ALLOW_ALL": True,
    }
    process = CrawlerProcess(settings)
    crawler = process.create_crawler(SiteSpider)
    process.crawl(crawler, root_urls=roots)
    started = time.monotonic()
    process.start()
    elapsed = time.monotonic() - started

    spider = crawler.spider
    assert isinstance(spider, SiteSpider)
    stats = crawler.stats.get_stats() if crawler.stats else {}
    result = {
        "pages": spider.pages,
        "non_200": spider.non_200,
        "crawl_seconds": elapsed,
        "offsite_filtered": stats.get("offsite/filtered", 0),
        "dupefilter_filtered": stats.get("dupefilter/filtered", 0),
        "requests": stats.get("downloader/request_count", 0),
        "download_errors": stats.get("downloader/exception_count", 0),
        "finish_reason": stats.get("finish_reason"),
    }
    args.out.write_text(json.dumps(result, default=str))


if __name__ == "__main__":
    main()
