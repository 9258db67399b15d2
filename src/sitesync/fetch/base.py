"""What every fetcher returns, and the limits every fetcher enforces.

A fetch never raises for anything a server or the network does: timeouts, refusals, huge
bodies and 404s are all :class:`FetchOutcome` values on a :class:`FetchResult`.
"""

from __future__ import annotations

import email.utils
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Protocol

# Defined with the models, so that a task's outcome keeps its type from the fetcher to the
# store and back; every fetcher names it from here.
from sitesync.config import setting_default
from sitesync.models import FetchOutcome, Validators

__all__ = [
    "FetchLimits",
    "FetchOutcome",
    "FetchResult",
    "Fetcher",
    "FollowPolicy",
    "RedirectHop",
    "parse_retry_after",
]


@dataclass(frozen=True, slots=True)
class FetchLimits:
    """Hard limits: a misbehaving server ends in an outcome within these, never a hang."""

    connect_timeout: float = setting_default("connect_timeout")
    read_timeout: float = setting_default("read_timeout")  # longest silence between reads
    total_timeout: float = setting_default("total_timeout")  # the whole request, body too
    max_body_bytes: int = setting_default("max_body_bytes")
    max_redirects: int = setting_default("max_redirects")


@dataclass(frozen=True, slots=True)
class RedirectHop:
    """One step of a redirect chain, in the order the server sent them."""

    from_url: str
    to_url: str
    status: int


@dataclass(frozen=True, slots=True)
class FetchResult:
    url: str
    outcome: FetchOutcome
    status: int = 0  # 0 = no HTTP response
    final_url: str | None = None
    headers: Mapping[str, str] = field(default_factory=dict)
    body: bytes = b""
    error: str | None = None
    elapsed: float = 0.0
    redirects: tuple[RedirectHop, ...] = ()
    retry_after: float | None = None  # seconds the server asked us to wait (429/503)
    # The site's time to answer, for adaptive politeness: seconds from the request's
    # headers sent to the response's headers in (None: not measured, no response) ...
    first_byte: float | None = None
    # ... and how much of it the crawler's own event loop spent busy with other work
    # (sitesync.fetch.loopload): that part may have been the crawler's, not the site's.
    first_byte_busy: float = 0.0

    @property
    def content_type(self) -> str:
        return self.headers.get("content-type", "").split(";", 1)[0].strip().lower()

    @property
    def is_html(self) -> bool:
        return self.content_type in ("text/html", "application/xhtml+xml")

    @property
    def retryable(self) -> bool:
        """Whether a later attempt may do better (transient network trouble, 5xx, 429)."""
        if self.outcome in (FetchOutcome.UNREACHABLE, FetchOutcome.TIMEOUT):
            return True
        return self.status == 429 or 500 <= self.status <= 599


def parse_retry_after(status: int, headers: Mapping[str, str]) -> float | None:
    """Seconds a 429 or 503 asks us to wait: Retry-After as delta-seconds or an HTTP-date."""
    if status not in (429, 503):
        return None
    value = headers.get("retry-after", "").strip()
    if value.isdigit():
        return float(value)
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - time.time())


#: Decides whether a redirect target may be followed (the browser's navigation asks it
#: inside Chromium; sitesync's own requests stop at every redirect: see fetch/redirects.py).
FollowPolicy = Callable[[str], bool]


class Fetcher(Protocol):
    """Turns a URL into a :class:`FetchResult`. Used as an async context manager.

    A fetcher with a class attribute ``revalidates = False`` (the browser, the dry run)
    gets no validators, and its pages leave no last fetch for a later scan."""

    async def fetch(
        self,
        url: str,
        *,
        validators: Validators | None = None,
        read_at_most: int | None = None,
    ) -> FetchResult:
        """One request for ``url``; never raises for server or network behaviour.

        ``validators``: those of the store's last fetch of ``url``, sent as a conditional
        request (``If-None-Match``, ``If-Modified-Since``); a 304 then ends ``NOT_MODIFIED``
        with no body. A fetcher may ignore them (the browser does) and fetch in full.

        ``read_at_most``: read only the first that many bytes of the body and stop reading
        (robots.txt, RFC 9309 §2.5): a longer body is cut there, not ``TOO_LARGE``.

        A redirect is not followed: the result is that 3xx response, with outcome
        ``REDIRECT_NOT_FOLLOWED`` and the hop in ``redirects``. The one redirect walker
        (:func:`sitesync.fetch.redirects.walk`) decides whether to send the next one.
        """
        ...

    async def __aenter__(self) -> Fetcher: ...

    async def __aexit__(self, *exc_info: object) -> None: ...
