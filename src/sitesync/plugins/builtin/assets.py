"""Built-in plugin ``assets``: the images and documents each HTML page refers to.

One record per asset, of kind ``image`` or ``document``, keyed by the asset's URL (an image
on a hundred pages is one record, seen a hundred times). Images come from ``<img>`` (``src``,
``data-src``, ``srcset``), ``<source srcset>``, icons and ``og:image``; documents (PDF, office
files, CSV, EPUB) and linked images from the page's links.

With ``download_assets`` each new asset is fetched once per run up to ``max_asset_bytes``,
through the crawl worker's polite client (the context's ``client``): the same robots.txt,
per-host limiter and host claim as the pages, so only assets on hosts the worker holds (the
run's own hosts) are downloaded. Its body is kept by the store; the record's content hash is
then the body's sha256, so a changed file is a new version. Without it (or when the client
refuses) the record is a reference, and its hash depends on its URL only.
"""

from __future__ import annotations

import asyncio
import hashlib
from collections import OrderedDict
from collections.abc import Awaitable
from dataclasses import replace
from typing import Any

from sitesync.fetch.base import FetchOutcome, FetchResult
from sitesync.fetch.polite import LateClient
from sitesync.models import AssetRecord, CrawlArtifact
from sitesync.plugins.base import ParsedPage, PluginContext, PoliteFetch, record_key
from sitesync.plugins.builtin._common import asset_kind, data_hash, extension, is_answered_html

#: Assets remembered per run once downloaded, so each is fetched once (oldest forgotten first).
_REMEMBERED = 50_000

Records = tuple[AssetRecord, ...]


class AssetPlugin:
    def __init__(self, context: PluginContext) -> None:
        settings = context.settings
        self._downloader = (
            AssetDownloader(context.client or LateClient(), max_bytes=settings.max_asset_bytes)
            if settings.download_assets
            else None
        )

    def process(self, artifact: CrawlArtifact, page: ParsedPage) -> Records | Awaitable[Records]:
        if not is_answered_html(artifact, page):
            return ()
        found = discover_assets(page)
        if not found:
            return ()
        if self._downloader is None:
            # No download: nothing to wait for, so no coroutine either (this is the hot path).
            return tuple(reference(url, kind) for url, kind in found.items())
        return self._downloader.records(found)

    async def close(self) -> None:
        if self._downloader is not None:
            await self._downloader.close()


def discover_assets(page: ParsedPage) -> dict[str, str]:
    """{normalized asset URL: "image" | "document"} of a page, in document order."""
    found: dict[str, str] = {}
    # Elements by tag name, not CSS: see ParsedPage.tags on why.
    for tag in ("img", "source", "link", "meta"):
        for node in page.tags(tag):
            for ref in _references(tag, node.attributes):
                url = page.resolve(ref)
                if url is not None:
                    found.setdefault(url, "image")
    for url in page.artifact.links:
        kind = asset_kind(url)
        if kind is not None:
            found.setdefault(url, kind)
    return found


def _references(tag: str, attributes: dict[str, str | None]) -> list[str]:
    """The image URLs an element names (``<link>`` and ``<meta>`` only when they are images)."""
    if tag == "link":
        rel = (attributes.get("rel") or "").lower().split()
        return [attributes.get("href") or ""] if "icon" in rel or "apple-touch-icon" in rel else []
    if tag == "meta":
        is_image = (attributes.get("property") or "").lower() == "og:image"
        return [attributes.get("content") or ""] if is_image else []
    refs = [attributes.get("src") or "", attributes.get("data-src") or ""] if tag == "img" else []
    # srcset: "a.png 1x, b.png 2x": every candidate is an asset of its own.
    for candidate in (attributes.get("srcset") or "").split(","):
        refs.append(candidate.strip().split(" ", 1)[0])
    return [ref for ref in refs if ref]


def reference(url: str, kind: str, **extra: Any) -> AssetRecord:
    """A record that points at an asset without its bytes: its hash depends on the URL only."""
    base = {"url": url, "kind": kind, "extension": extension(url)}
    return AssetRecord(
        key=record_key(kind, url),
        kind=kind,
        url=url,
        content_hash=data_hash(base),
        data={**base, "downloaded": False, **extra},
    )


class AssetDownloader:
    """Fetches each asset of a run once, through the worker's gate, within ``max_bytes``."""

    def __init__(self, client: PoliteFetch, *, max_bytes: int) -> None:
        self.max_bytes = max_bytes
        self._client = client
        self._in_flight: dict[str, asyncio.Task[AssetRecord]] = {}
        self._known: OrderedDict[str, AssetRecord] = OrderedDict()

    async def records(self, found: dict[str, str]) -> Records:
        return tuple(await asyncio.gather(*(self._record(u, k) for u, k in found.items())))

    async def close(self) -> None:
        for task in self._in_flight.values():
            task.cancel()

    async def _record(self, url: str, kind: str) -> AssetRecord:
        known = self._known.get(url)
        if known is not None:
            # Seen again this run: same content hash, and the body went with the first sighting.
            return known
        task = self._in_flight.get(url)
        if task is None:
            task = asyncio.ensure_future(self._download(url, kind))
            self._in_flight[url] = task
            task.add_done_callback(lambda done: self._remember(url, done))
        return await asyncio.shield(task)

    def _remember(self, url: str, task: asyncio.Task[AssetRecord]) -> None:
        self._in_flight.pop(url, None)
        if task.cancelled() or task.exception() is not None:
            return
        self._known[url] = replace(task.result(), body=None)
        if len(self._known) > _REMEMBERED:
            self._known.popitem(last=False)

    async def _download(self, url: str, kind: str) -> AssetRecord:
        return self._record_of(url, kind, await self._client.fetch(url))

    def _record_of(self, url: str, kind: str, result: FetchResult) -> AssetRecord:
        if result.outcome is FetchOutcome.BLOCKED and result.status == 0:
            return reference(url, kind, download_error=result.error or "not fetched")
        if result.outcome is FetchOutcome.TOO_LARGE or len(result.body) > self.max_bytes:
            return reference(url, kind, download_error=f"larger than {self.max_bytes} bytes")
        if result.outcome is not FetchOutcome.SUCCESS or not 200 <= result.status < 300:
            error = result.error or f"HTTP {result.status}"
            return reference(url, kind, download_error=f"{result.outcome.value}: {error}")
        digest = hashlib.sha256(result.body).hexdigest()
        data = {
            "url": url,
            "kind": kind,
            "extension": extension(url),
            "downloaded": True,
            "content_type": result.content_type,
            "size": len(result.body),
        }
        key = record_key(kind, url)
        return AssetRecord(
            key=key,
            kind=kind,
            url=url,
            content_hash=digest,
            data=data,
            body=result.body,
            body_hash=digest,
        )
