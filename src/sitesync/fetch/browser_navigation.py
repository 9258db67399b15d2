"""One browser fetch's view of its page: the redirect rules, checked through DevTools.

Playwright's ``page.route`` never sees the later requests of a redirect chain (Chromium follows
redirects internally), so each fetch pauses main-frame document requests at their response
(the DevTools ``Fetch`` domain) and checks a 3xx there, before Chromium requests its target.
See :mod:`sitesync.fetch.browser` for the rules as a whole.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from sitesync.errors import InvalidURL
from sitesync.fetch.base import FetchOutcome, FollowPolicy, RedirectHop
from sitesync.fetch.text import header_text
from sitesync.urls import normalize_url, resolve_link

if TYPE_CHECKING:
    from playwright.async_api import CDPSession, Request

__all__ = ["Navigation", "Stop", "normalized"]

_REDIRECT_STATUSES = frozenset({301, 302, 303, 307, 308})
_QUIET = 0.1  # seconds without a request in flight that count as "settled"


@dataclass(slots=True)
class Stop:
    """Why a redirect was not followed, recorded for the result."""

    outcome: FetchOutcome
    error: str
    hops: tuple[RedirectHop, ...]
    status: int = 0
    url: str | None = None
    headers: Mapping[str, str] = field(default_factory=dict)


@dataclass  # no slots: Playwright tags the bound methods it is given as event handlers
class Navigation:
    """One fetch's view of its page: the redirect rules and the traffic still in flight.

    Redirects are checked through the DevTools ``Fetch`` domain, paused at the response
    stage of each main-frame document request: Playwright's ``page.route`` only ever sees
    the first request of a redirect chain (Chromium follows the rest internally), so it
    cannot stop a hop before its target is requested.
    """

    url: str
    may_follow: FollowPolicy | None
    max_redirects: int
    cdp: CDPSession
    main_frame_id: str = ""
    started_document: bool = False
    hops: list[RedirectHop] = field(default_factory=list)
    stop: Stop | None = None
    in_flight: int = 0
    last_change: float = field(default_factory=time.monotonic)

    def request_started(self, request: Request) -> None:
        self.in_flight += 1
        self.last_change = time.monotonic()

    def request_ended(self, request: Request) -> None:
        self.in_flight = max(0, self.in_flight - 1)
        self.last_change = time.monotonic()

    async def start(self) -> None:
        tree = await self.cdp.send("Page.getFrameTree")
        self.main_frame_id = str(tree["frameTree"]["frame"]["id"])
        self.cdp.on("Fetch.requestPaused", self.on_paused)
        stages = ("Request", "Response")
        patterns = [
            {"urlPattern": "*", "resourceType": "Document", "requestStage": s} for s in stages
        ]
        patterns.append({"urlPattern": "*/favicon.ico", "resourceType": "Other"})
        await self.cdp.send("Fetch.enable", {"patterns": patterns})

    async def on_paused(self, event: dict[str, Any]) -> None:
        try:
            refusal = self._refusal(event)
        except Exception as exc:
            # Fail closed (a may_follow that raised must not let a hop through), and answer
            # anyway: a paused request never continued or failed stalls until the timeout.
            error = f"cannot check {event.get('request', {}).get('url')}: {exc!r}"
            self.stop = Stop(FetchOutcome.INVALID, error, tuple(self.hops))
            refusal = "BlockedByClient"
        request_id = {"requestId": event.get("requestId")}
        # The page may close under a late request, which makes continue/fail raise.
        with contextlib.suppress(Exception):
            if refusal is None:
                await self.cdp.send("Fetch.continueRequest", request_id)
            else:
                await self.cdp.send("Fetch.failRequest", {**request_id, "errorReason": refusal})

    def _refusal(self, event: dict[str, Any]) -> str | None:
        """The DevTools error reason to fail this paused request with, or None to let it go."""
        if event.get("frameId") != self.main_frame_id:
            return None  # frames: the page as a browser would load it
        if event.get("resourceType") != "Document":
            # Chromium's own favicon request, made for every page of every fresh context:
            # no page needs it, and it would double what a crawl asks of each host.
            return "BlockedByClient"
        if "responseStatusCode" in event or "responseErrorReason" in event:
            self.stop = self._check_redirect(event)
            return None if self.stop is None else "BlockedByClient"
        if event.get("redirectedRequestId") is not None:
            return None  # a hop already checked at its 3xx response
        if not self.started_document:
            self.started_document = True
            return None  # the navigation asked for
        # The page navigating itself (script, meta refresh): the fetch is of one document.
        # "Aborted" keeps the current document; other reasons would show an error page.
        return "Aborted"

    def _check_redirect(self, event: dict[str, Any]) -> Stop | None:
        status = int(event.get("responseStatusCode") or 0)
        headers = {
            header_text(h["name"]).lower(): header_text(h["value"])
            for h in event.get("responseHeaders") or ()
        }
        location = headers.get("location")
        if status not in _REDIRECT_STATUSES or not location:
            return None
        current = self.hops[-1].to_url if self.hops else self.url
        target = resolve_link(str(event["request"]["url"]), location)
        self.hops.append(RedirectHop(current, target or location, status))
        hops = tuple(self.hops)
        if target is None or (self.may_follow is not None and not self.may_follow(target)):
            why = "not an http(s) URL" if target is None else "out of scope"
            return Stop(
                FetchOutcome.REDIRECT_NOT_FOLLOWED,
                f"redirect to {location} ({why})",
                hops,
                status=status,
                url=current,
                headers=headers,
            )
        if target in {normalized(self.url), *(hop.to_url for hop in hops[:-1])}:
            return Stop(FetchOutcome.INVALID, f"redirect loop back to {target}", hops)
        if len(hops) > self.max_redirects:
            return Stop(FetchOutcome.INVALID, f"more than {self.max_redirects} redirects", hops)
        return None

    async def settle(self, budget: float) -> None:
        """Wait until no request has been in flight for ``_QUIET`` seconds, or ``budget``."""
        deadline = time.monotonic() + budget
        while time.monotonic() < deadline:
            if self.in_flight == 0 and time.monotonic() - self.last_change >= _QUIET:
                return
            await asyncio.sleep(0.02)


def normalized(url: str) -> str:
    """``url`` normalized as the HTTP fetcher records it, or as it is when it cannot be."""
    try:
        return normalize_url(url)
    except InvalidURL:
        return url  # not http(s), or not crawlable: the raw URL is still worth recording
