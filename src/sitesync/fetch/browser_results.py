"""How a browser fetch becomes a :class:`FetchResult`: statuses, Chromium's errors, the guard
proxy's refusals and our own redirect stops mapped to outcomes as
:class:`~sitesync.fetch.http.HttpFetcher` maps its own, and the redirect hops recorded."""

from __future__ import annotations

import itertools
import time
from typing import TYPE_CHECKING

from sitesync.fetch.base import FetchOutcome, FetchResult, RedirectHop
from sitesync.fetch.browser_navigation import Navigation, normalized
from sitesync.fetch.text import header_text

if TYPE_CHECKING:
    from playwright.async_api import Request, Response

__all__ = [
    "classify",
    "failed",
    "first_line",
    "hops_to",
    "ms_until",
    "navigation_failed",
    "refused",
    "response_headers",
]

# Chromium errors that no retry can fix: the URL or the response itself is the problem.
_INVALID_ERRORS = {
    "ERR_TOO_MANY_REDIRECTS": "too many redirects",
    "ERR_REDIRECT_CYCLE": "redirect loop",
    "ERR_UNSAFE_REDIRECT": "redirect to a URL Chromium refuses",
    "ERR_INVALID_REDIRECT": "invalid redirect",
    "ERR_INVALID_URL": "invalid URL",
    "ERR_UNKNOWN_URL_SCHEME": "not an http(s) URL",
    "ERR_DISALLOWED_URL_SCHEME": "not an http(s) URL",
    "ERR_UNSAFE_PORT": "a port Chromium refuses to connect to",
    "ERR_CONTENT_LENGTH_MISMATCH": "truncated or corrupt body",
    "ERR_INCOMPLETE_CHUNKED_ENCODING": "truncated or corrupt body",
    "ERR_CONTENT_DECODING_FAILED": "truncated or corrupt body",
    "ERR_INVALID_RESPONSE": "invalid response",
    "ERR_RESPONSE_HEADERS_TOO_BIG": "invalid response",
}
# Not ERR_CONNECTION_TIMED_OUT: no connection at all is unreachable, a host-level failure,
# as the HTTP fetcher reports it (see sitesync.engine.deadhosts).
_TIMEOUT_ERRORS = frozenset({"ERR_TIMED_OUT"})


async def hops_to(request: Request, original_url: str) -> tuple[RedirectHop, ...]:
    """The redirect hops that led to ``request``, oldest first, from its ``redirected_from``."""
    chain = [request]
    while (previous := chain[-1].redirected_from) is not None:
        chain.append(previous)
    chain.reverse()
    hops: list[RedirectHop] = []
    for earlier, later in itertools.pairwise(chain):
        response = await earlier.response()
        from_url = original_url if not hops else hops[-1].to_url
        status = response.status if response is not None else 0
        hops.append(RedirectHop(from_url, normalized(later.url), status))
    return tuple(hops)


def ms_until(deadline: float) -> float:
    """Playwright timeouts are milliseconds, and 0 would mean "no timeout at all"."""
    return max(1.0, (deadline - time.monotonic()) * 1000)


def refused(url: str, nav: Navigation, why: str, started: float) -> FetchResult:
    """The document (or a redirect hop of it) is on an address the network policy refuses."""
    return FetchResult(
        url=url,
        outcome=FetchOutcome.FORBIDDEN_ADDRESS,
        error=why,
        elapsed=time.monotonic() - started,
        redirects=tuple(nav.hops),
    )


def navigation_failed(url: str, nav: Navigation, message: str, started: float) -> FetchResult:
    """The result of a ``page.goto`` that raised: our own abort, or Chromium's error."""
    elapsed = time.monotonic() - started
    stop = nav.stop
    if stop is not None:
        return FetchResult(
            url=url,
            outcome=stop.outcome,
            status=stop.status,
            final_url=stop.url,
            headers=stop.headers,
            error=stop.error,
            elapsed=elapsed,
            redirects=stop.hops,
        )
    code = _net_error(message)
    if code in _TIMEOUT_ERRORS:
        return FetchResult(url=url, outcome=FetchOutcome.TIMEOUT, error=message, elapsed=elapsed)
    if code in _INVALID_ERRORS:
        error = f"{_INVALID_ERRORS[code]} ({message})"
        return FetchResult(url=url, outcome=FetchOutcome.INVALID, error=error, elapsed=elapsed)
    if message.startswith("Download is starting"):
        error = "Chromium downloads this response instead of showing it: not a page"
        return FetchResult(url=url, outcome=FetchOutcome.INVALID, error=error, elapsed=elapsed)
    # Refused, reset, DNS failures and whatever else the network did: worth another try.
    return FetchResult(url=url, outcome=FetchOutcome.UNREACHABLE, error=message, elapsed=elapsed)


def _net_error(message: str) -> str | None:
    """``ERR_CONNECTION_REFUSED`` from ``net::ERR_CONNECTION_REFUSED at http://...``."""
    _, found, rest = message.partition("net::")
    return rest.split(None, 1)[0] if found and rest else None


def first_line(exc: BaseException) -> str:
    """Playwright's message without its call log, and without the ``Page.goto:`` prefix."""
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    api_call, sep, rest = text.partition(": ")
    return rest if sep and "." in api_call and " " not in api_call else text


async def response_headers(response: Response) -> dict[str, str]:
    headers = await response.all_headers()
    return {header_text(k).lower(): header_text(v) for k, v in headers.items()}


def classify(status: int) -> tuple[FetchOutcome, str | None]:
    if status in (401, 403, 451):
        return FetchOutcome.BLOCKED, f"HTTP {status}"
    if status >= 400:
        return FetchOutcome.HTTP_ERROR, f"HTTP {status}"
    return FetchOutcome.SUCCESS, None


def failed(url: str, outcome: FetchOutcome, error: str, started: float) -> FetchResult:
    return FetchResult(url=url, outcome=outcome, error=error, elapsed=time.monotonic() - started)
