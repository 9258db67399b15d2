"""The default fetcher: aiohttp with timeouts and a streamed body cap."""

from __future__ import annotations

import time

import aiohttp

from sitesync.fetch.base import FetchLimits, FetchOutcome, FetchResult

DEFAULT_USER_AGENT = "sitesync/0.1 (+https://github.com/sitesync/sitesync)"


class HttpFetcher:
    """One aiohttp session shared by every fetch of a worker."""

    def __init__(
        self,
        *,
        limits: FetchLimits | None = None,
        user_agent: str = DEFAULT_USER_AGENT,
        max_connections: int = 100,
    ) -> None:
        self.limits = limits or FetchLimits()
        self.user_agent = user_agent
        self._max_connections = max_connections
        self._session: aiohttp.ClientSession | None = None

    async def __aenter__(self) -> HttpFetcher:
        connector = aiohttp.TCPConnector(
            limit=self._max_connections,
            limit_per_host=0,  # per-host politeness is the worker's job, not the pool's
            ttl_dns_cache=300,
        )
        timeout = aiohttp.ClientTimeout(
            total=self.limits.total_timeout,
            sock_connect=self.limits.connect_timeout,
            sock_read=self.limits.read_timeout,
        )
        self._session = aiohttp.ClientSession(
            connector=connector,
            timeout=timeout,
            headers={"User-Agent": self.user_agent},
            # Cookies would make a crawl depend on the order pages were fetched in.
            cookie_jar=aiohttp.DummyCookieJar(),
        )
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        if self._session is not None:
            await self._session.close()
            self._session = None

    async def fetch(self, url: str) -> FetchResult:
        if self._session is None:
            raise RuntimeError("HttpFetcher used outside 'async with'")
        started = time.monotonic()
        try:
            async with self._session.get(
                url, allow_redirects=True, max_redirects=self.limits.max_redirects
            ) as response:
                headers = {k.lower(): v for k, v in response.headers.items()}
                status = response.status
                final_url = str(response.url)
                body, too_large = await self._read_capped(response)
        except aiohttp.TooManyRedirects:
            return _failed(url, FetchOutcome.INVALID, "too many redirects", started)
        except aiohttp.ClientPayloadError as exc:
            return _failed(url, FetchOutcome.INVALID, f"truncated or corrupt body: {exc}", started)
        except aiohttp.InvalidURL as exc:
            return _failed(url, FetchOutcome.INVALID, f"invalid URL: {exc}", started)
        except (TimeoutError, aiohttp.ServerTimeoutError):
            return _failed(url, FetchOutcome.TIMEOUT, "timed out", started)
        except aiohttp.ClientConnectorError as exc:
            return _failed(url, FetchOutcome.UNREACHABLE, f"cannot connect: {exc}", started)
        except (aiohttp.ClientError, OSError) as exc:
            reason = str(exc) or type(exc).__name__
            return _failed(url, FetchOutcome.UNREACHABLE, f"connection failed: {reason}", started)
        elapsed = time.monotonic() - started
        if too_large:
            return FetchResult(
                url=url,
                outcome=FetchOutcome.TOO_LARGE,
                status=status,
                final_url=final_url,
                headers=headers,
                error=f"body larger than {self.limits.max_body_bytes} bytes",
                elapsed=elapsed,
            )
        return FetchResult(
            url=url,
            outcome=_outcome_of(status),
            status=status,
            final_url=final_url,
            headers=headers,
            body=body,
            error=None if status < 400 else f"HTTP {status}",
            elapsed=elapsed,
        )

    async def _read_capped(self, response: aiohttp.ClientResponse) -> tuple[bytes, bool]:
        """Read the (decompressed) body, stopping as soon as it passes the cap."""
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


def _outcome_of(status: int) -> FetchOutcome:
    if status in (401, 403, 451):
        return FetchOutcome.BLOCKED
    if status >= 400:
        return FetchOutcome.HTTP_ERROR
    return FetchOutcome.SUCCESS


def _failed(url: str, outcome: FetchOutcome, error: str, started: float) -> FetchResult:
    return FetchResult(url=url, outcome=outcome, error=error, elapsed=time.monotonic() - started)


__all__ = ["DEFAULT_USER_AGENT", "HttpFetcher"]
