"""The worker's polite client: how anything besides the page fetch asks a host for a URL.

Plugins (the asset downloader) get it through their context. Every request goes through the
same gate as the worker's pages: no other worker may hold the host's claim, robots.txt must
allow the URL, and the request waits for the host's politeness slot (concurrency, spacing,
Crawl-delay, Retry-After). So a host of the run never sees a plugin's request beside a page
request, from this worker or any other. A host outside the run's work (a CDN) has no claim
anyone could hold: only this worker's limiter guards it.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator

from sitesync.fetch.base import Fetcher, FetchLimits, FetchOutcome, FetchResult
from sitesync.fetch.gate import HostNotHeld, RequestGate
from sitesync.fetch.redirects import Refusal, walk
from sitesync.urls import resolve_link, url_host


class PoliteClient:
    def __init__(self, fetcher: Fetcher, gate: RequestGate) -> None:
        self._fetcher = fetcher
        self._gate = gate  # the worker's one gate, the pages' too

    async def fetch(self, url: str) -> FetchResult:
        """Fetch ``url`` through its host's gate, or a ``BLOCKED`` result saying why not.

        Redirects are followed by the one walker (sitesync.fetch.redirects), only on the
        same host, each hop through the gate again: robots.txt, the slot and the pace.
        """
        target = resolve_link(url, url)
        if target is None:
            return _refused(url, "not an http(s) URL")
        host = url_host(target)
        refusal = await self._gate.refusal(target)
        if refusal is not None:
            return _refused(url, refusal)
        try:
            return await walk(
                target,
                lambda hop: self._request(host, hop),
                lambda hop, location, chain: self._hop_refusal(host, hop, location),
                max_redirects=getattr(self._fetcher, "limits", FetchLimits()).max_redirects,
            )
        except HostNotHeld:
            return _refused(url, "its host's claim passed to another worker")

    async def _request(self, host: str, url: str) -> FetchResult:
        async with self._gate.turn(host) as turn:
            result = await self._fetcher.fetch(url)
        # Its answers are the host's signals too: an asset that gets 503s slows the pages.
        await self._gate.learn(turn, result)
        return result

    async def _hop_refusal(self, host: str, target: str, location: str) -> Refusal | None:
        """A hop stays on the host whose gate the fetch passed, and robots.txt allows it."""
        if url_host(target) != host:
            return FetchOutcome.REDIRECT_NOT_FOLLOWED, f"redirect to {location} (out of scope)"
        refusal = await self._gate.refusal(target)
        return None if refusal is None else (FetchOutcome.BLOCKED, f"not fetched: {refusal}")

    @contextlib.asynccontextmanager
    async def admit(self, url: str, *, check_robots: bool = True) -> AsyncIterator[str | None]:
        """For a request another client sends (the browser's subresources, at its guard
        proxy): yields None once ``url`` may be sent, holding its host's slot until the block
        ends, or why it may not. ``check_robots=False`` where the path is not known (an
        HTTPS tunnel: only its host is)."""
        target = resolve_link(url, url)
        host = url_host(target) if target is not None else None
        if target is None or host is None:
            yield "not an http(s) URL"
            return
        refusal = await self._gate.refusal(target, check_robots=check_robots)
        if refusal is not None:
            yield refusal
            return
        slot = contextlib.AsyncExitStack()
        try:
            await slot.enter_async_context(self._gate.turn(host))
        except HostNotHeld:
            yield "its host's claim passed to another worker"
            return
        async with slot:
            yield None


class LateClient:
    """A :class:`PoliteClient` to be: plugins are built before the worker whose gate they use.

    Until :meth:`bind` is called every fetch is refused (nothing may bypass the gate).
    """

    def __init__(self) -> None:
        self._client: PoliteClient | None = None

    def bind(self, client: PoliteClient) -> None:
        self._client = client

    async def fetch(self, url: str) -> FetchResult:
        if self._client is None:
            return _refused(url, "no crawl worker is running")
        return await self._client.fetch(url)


def _refused(url: str, why: str) -> FetchResult:
    return FetchResult(url=url, outcome=FetchOutcome.BLOCKED, error=f"not fetched: {why}")
