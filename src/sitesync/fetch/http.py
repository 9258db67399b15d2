"""The default fetcher: aiohttp, redirects followed hop by hop, every limit enforced.

Redirects are followed by hand (``allow_redirects=False``) so that every hop is recorded,
loops are caught, and a hop out of scope or to a non-HTTP scheme is recorded instead of
followed. The body is streamed and counted after decompression, so neither a huge body
nor a gzip bomb is ever held in memory past ``max_body_bytes``.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterable, Mapping
from types import SimpleNamespace
from typing import Any

import aiohttp
import yarl

from sitesync.fetch.base import (
    FetchLimits,
    FetchOutcome,
    FetchResult,
    RedirectHop,
    parse_retry_after,
)
from sitesync.fetch.failures import request_failure
from sitesync.fetch.lookups import NameLookups
from sitesync.fetch.loopload import LoopLoad
from sitesync.fetch.netpolicy import ForbiddenAddress, NetworkPolicy, parse_address
from sitesync.fetch.resolver import GuardedResolver
from sitesync.fetch.text import header_text, safe_text
from sitesync.models import Validators
from sitesync.profiles import ProfileOf
from sitesync.urls import resolve_link
from sitesync.useragent import DEFAULT_USER_AGENT, PRODUCT, default_user_agent

_REDIRECT_STATUSES = frozenset({301, 302, 303, 307, 308})
_TEXT_TYPES = ("text/html", "application/xhtml+xml", "text/plain", "text/xml", "application/xml")


class HttpFetcher:
    """One aiohttp session shared by every fetch of a worker."""

    def __init__(
        self,
        *,
        limits: FetchLimits | None = None,
        user_agent: str = DEFAULT_USER_AGENT,
        max_connections: int = 100,
        extra_headers: dict[str, str] | None = None,
        network: NetworkPolicy | None = None,
        lookups: NameLookups | None = None,
        profiles: ProfileOf | None = None,
    ) -> None:
        self.limits = limits or FetchLimits()
        # What each host's requests carry (sitesync/profiles.py): headers, cookies, auth, proxy.
        self._profiles = profiles
        # Name lookups on threads of their own, bounded by connect_timeout (fetch/lookups.py):
        # the ones given, or this fetcher's own from __aenter__ to __aexit__.
        self._lookups_given = lookups
        self.lookups: NameLookups | None = None
        # Unless opened, non-public addresses are refused (fetch/netpolicy.py).
        self.network = network or NetworkPolicy()
        self._headers = {"User-Agent": user_agent, **(extra_headers or {})}
        self.user_agent = user_agent
        self._max_connections = max_connections
        self._session: aiohttp.ClientSession | None = None
        self._resolver: GuardedResolver | None = None
        self._load: LoopLoad | None = None

    async def __aenter__(self) -> HttpFetcher:
        self.lookups = self._lookups_given or NameLookups(self.limits.connect_timeout)
        self._resolver = GuardedResolver(self.network, self.lookups)
        self._load = LoopLoad.of_running_loop()
        # Told when each request's headers are sent: the site's time to answer is timed
        # from there, not from before the connection pool, the name lookup or the connect.
        tracing = aiohttp.TraceConfig()
        tracing.on_request_headers_sent.append(_headers_sent)
        connector = aiohttp.TCPConnector(
            limit=self._max_connections,
            limit_per_host=0,  # per-host politeness is the worker's job, not the pool's
            ttl_dns_cache=300,
            # Every connection, to a resolved name or an IP literal, is checked on the
            # address it is about to connect to: DNS rebinding cannot slip past it.
            resolver=self._resolver,
            socket_factory=self.network.socket_factory,
        )
        self._session = aiohttp.ClientSession(
            connector=connector,
            timeout=aiohttp.ClientTimeout(
                sock_connect=self.limits.connect_timeout, sock_read=self.limits.read_timeout
            ),
            headers=self._headers,
            # Cookies would make a crawl depend on the order pages were fetched in.
            cookie_jar=aiohttp.DummyCookieJar(),
            trace_configs=[tracing],
        )
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        if self._session is not None:
            await self._session.close()
            self._session = None
        if self._resolver is not None:  # the connector closes only resolvers it made
            await self._resolver.close()
            self._resolver = None
        if self.lookups is not None and self._lookups_given is None:  # its threads go
            self.lookups.close()
        self.lookups = None

    async def fetch(
        self,
        url: str,
        *,
        validators: Validators | None = None,
        read_at_most: int | None = None,
    ) -> FetchResult:
        started = time.monotonic()
        try:
            # The total timeout covers the request, body included: a server that drips one
            # byte a second cannot hold a worker past it.
            async with asyncio.timeout(self.limits.total_timeout):
                result = await self._request(url, started, validators, read_at_most)
        except TimeoutError:
            return _failed(url, FetchOutcome.TIMEOUT, "timed out", started)
        location = result.headers.get("location")
        if result.status not in _REDIRECT_STATUSES or not location:
            return result
        # One request per fetch: the redirect is the answer, and fetch/redirects.py walks on.
        hop = RedirectHop(url, resolve_link(url, location) or location, result.status)
        return _redirect_result(url, result, (hop,), f"redirect to {location} (not followed)")

    async def _request(
        self,
        url: str,
        started: float,
        validators: Validators | None = None,
        read_at_most: int | None = None,
    ) -> FetchResult:
        if self._session is None or self._load is None:
            raise RuntimeError("HttpFetcher used outside 'async with'")
        target = yarl.URL(url, encoded=True)
        options = await self._options(target, validators)
        if isinstance(options, str):
            return _failed(url, FetchOutcome.FORBIDDEN_ADDRESS, options, started)
        stamp = _FirstByte(self._load)
        try:
            async with self._session.get(
                target, allow_redirects=False, trace_request_ctx=stamp, **options
            ) as response:
                first_byte, busy = stamp.answered()
                headers = _text_headers(response.headers.items())
                status = response.status
                if status in _REDIRECT_STATUSES:
                    return FetchResult(url=url, outcome=FetchOutcome.SUCCESS, status=status,
                                       final_url=url, headers=headers, first_byte=first_byte,
                                       first_byte_busy=busy)  # fmt: skip
                if read_at_most is None:
                    body, too_large = await self._read_capped(response)
                else:
                    body, too_large = await _read_prefix(response, read_at_most), False
        except (aiohttp.ClientError, OSError) as exc:
            outcome, error = request_failure(exc, self.limits.connect_timeout)
            return _failed(url, outcome, error, started)
        elapsed = time.monotonic() - started
        if too_large:
            return FetchResult(
                url=url, outcome=FetchOutcome.TOO_LARGE, status=status, final_url=url,
                headers=headers, elapsed=elapsed, first_byte=first_byte, first_byte_busy=busy,
                error=f"body larger than {self.limits.max_body_bytes} bytes",
            )  # fmt: skip
        outcome, problem = _classify(status, headers, body)
        return FetchResult(
            url=url, outcome=outcome, status=status, final_url=url, headers=headers,
            body=body if outcome is not FetchOutcome.INVALID else b"", error=problem,
            elapsed=elapsed, retry_after=parse_retry_after(status, headers),
            first_byte=first_byte, first_byte_busy=busy,
        )  # fmt: skip

    async def _options(
        self, target: yarl.URL, validators: Validators | None
    ) -> dict[str, Any] | str:
        """The request's own headers and proxy (its conditional headers, the host's request
        profile), or why the proxy's target is refused."""
        options: dict[str, Any] = {}
        profile = self._profiles(_host_of(target)) if self._profiles is not None else None
        if validators:
            options["headers"] = conditional_headers(validators)
        if profile is not None:
            options["headers"] = {**profile.request_headers(), **options.get("headers", {})}
            if profile.proxy:
                # The proxy connects to the target, not us: its address is checked here.
                refused = await self._target_refusal(target)
                if refused is not None:
                    return refused
                options["proxy"] = profile.proxy
        return options

    async def _target_refusal(self, target: yarl.URL) -> str | None:
        """Why the network policy refuses a request's target (sent through a proxy, which
        would otherwise reach any address for us), or None. A name that does not resolve
        here cannot be checked, and is refused too."""
        assert self._resolver is not None
        host = target.raw_host or ""
        literal = parse_address(host)
        if literal is not None:
            refused = self.network.refusal(literal)
            return None if refused is None else str(refused.strerror)
        try:
            await self._resolver.resolve(host, target.port or 0)
        except ForbiddenAddress as exc:
            return str(exc.strerror)
        except OSError as exc:
            return f"{host} did not resolve here, so its address cannot be checked: {exc}"
        return None

    async def _read_capped(self, response: aiohttp.ClientResponse) -> tuple[bytes, bool]:
        """Read the decompressed body, stopping as soon as it passes the cap."""
        cap = self.limits.max_body_bytes
        declared = response.content_length
        if declared is not None and declared > cap and "content-encoding" not in response.headers:
            return b"", True
        chunks: list[bytes] = []
        size = 0
        async for chunk in response.content.iter_any():
            size += len(chunk)
            if size > cap:
                # Counting decompressed bytes is what stops a gzip bomb.
                return b"", True
            chunks.append(chunk)
        return b"".join(chunks), False


async def _read_prefix(response: aiohttp.ClientResponse, size: int) -> bytes:
    """The first ``size`` bytes of the (decompressed) body; the rest is never read (the
    connection is closed rather than drained)."""
    chunks: list[bytes] = []
    read = 0
    async for chunk in response.content.iter_any():
        chunks.append(chunk)
        read += len(chunk)
        if read >= size:
            break
    return b"".join(chunks)[:size]


class _FirstByte:
    """One request's time to the first byte of its answer: from its headers sent (told by
    aiohttp's tracing) to its response's headers in, with the loop's busy time meanwhile."""

    __slots__ = ("_busy_at", "_load", "_sent_at")

    def __init__(self, load: LoopLoad) -> None:
        self._load = load
        self._sent_at: float | None = None
        self._busy_at = 0.0

    def sent(self) -> None:
        self._sent_at = time.monotonic()
        self._busy_at = self._load.busy()

    def answered(self) -> tuple[float | None, float]:
        """(seconds since the headers were sent, of which the loop was busy); (None, 0)
        if they were never reported sent."""
        if self._sent_at is None:
            return None, 0.0
        return time.monotonic() - self._sent_at, self._load.busy() - self._busy_at


async def _headers_sent(
    session: aiohttp.ClientSession,
    context: SimpleNamespace,
    params: aiohttp.TraceRequestHeadersSentParams,
) -> None:
    stamp = context.trace_request_ctx
    if isinstance(stamp, _FirstByte):
        stamp.sent()


def _host_of(url: yarl.URL) -> str:
    """``host[:port]`` as profiles and scopes name hosts (the port only when not default)."""
    host = url.raw_host or ""
    return host if url.explicit_port is None else f"{host}:{url.explicit_port}"


def _text_headers(items: Iterable[tuple[str, str]]) -> dict[str, str]:
    """Header names lower-cased and values kept as text: a Latin-1 byte is a character, never
    a lone surrogate that the store would refuse (see :mod:`sitesync.fetch.text`)."""
    return {header_text(name).lower(): header_text(value) for name, value in items}


def conditional_headers(validators: Validators) -> dict[str, str]:
    """The headers of a conditional GET: each validator as the server sent it (a weak ETag
    keeps its ``W/``: weak comparison is what If-None-Match uses, RFC 9110 13.1.2)."""
    headers = {}
    if validators.etag:
        headers["If-None-Match"] = validators.etag
    if validators.last_modified:
        headers["If-Modified-Since"] = validators.last_modified
    return headers


def _classify(
    status: int, headers: Mapping[str, str], body: bytes
) -> tuple[FetchOutcome, str | None]:
    if status == 304:  # whether it answers a conditional request is the page's to judge
        return FetchOutcome.NOT_MODIFIED, None
    if status in (401, 403, 451):
        return FetchOutcome.BLOCKED, f"HTTP {status}"
    if status >= 400:
        return FetchOutcome.HTTP_ERROR, f"HTTP {status}"
    content_type = headers.get("content-type", "").split(";", 1)[0].strip().lower()
    if content_type in _TEXT_TYPES and b"\x00" in body[:4096]:
        # NUL bytes never occur in real text: a binary file labelled as text.
        return FetchOutcome.INVALID, f"binary content served as {content_type}"
    return FetchOutcome.SUCCESS, None


def _redirect_result(
    url: str, last: FetchResult, chain: tuple[RedirectHop, ...], error: str
) -> FetchResult:
    return FetchResult(
        url=url, outcome=FetchOutcome.REDIRECT_NOT_FOLLOWED, status=last.status,
        final_url=last.url, headers=last.headers, error=error, elapsed=last.elapsed,
        redirects=chain, first_byte=last.first_byte, first_byte_busy=last.first_byte_busy,
    )  # fmt: skip


def _failed(url: str, outcome: FetchOutcome, error: str, started: float) -> FetchResult:
    # aiohttp's messages may quote what the server sent, undecoded.
    elapsed = time.monotonic() - started
    return FetchResult(url=url, outcome=outcome, error=safe_text(error), elapsed=elapsed)


__all__ = ["DEFAULT_USER_AGENT", "PRODUCT", "HttpFetcher", "default_user_agent"]
