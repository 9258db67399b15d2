"""The browser fetcher: pages rendered by the system Chromium, for JavaScript-built sites.

Optional: it needs the ``browser`` extra (``pip install 'sitesync[browser]'``) and Debian's
``chromium`` package (``scripts/ensure-system-deps.sh`` installs it). Playwright's own browser
download is never used: it cannot work on machines without general internet access.

What a fetch returns, and how:

- One Chromium per fetcher, launched headless on entry with a fresh temporary profile
  (Playwright's non-persistent launch deletes it at close). Each fetch gets its own browser
  context, so no cookie, cache or storage leaks from one page into the next; at most
  ``max_pages`` contexts are open at once. A browser that dies is relaunched on the next fetch.
- ``body`` is the DOM serialized after the ``load`` event plus a short settle (until no request
  has been in flight for a moment, at most ``settle_ms``), so JavaScript-inserted content is
  there; ``content-type`` then says ``text/html; charset=utf-8``, because that is what the
  serialized DOM is. A document Chromium shows but did not parse as HTML (text, JSON, an
  image) is returned as served, with its own ``content-type``. Responses Chromium downloads
  instead of showing (attachments, PDFs) end as ``INVALID``: they are not pages.
- ``status`` and ``headers`` are those of the main document's response; outcomes map as in
  :class:`~sitesync.fetch.http.HttpFetcher` (2xx/3xx success, 401/403/451 blocked, other
  4xx/5xx http_error, Chromium's ``net::ERR_*`` network errors unreachable with the error text).
  ``total_timeout`` bounds the navigation (``page.goto``) and, with a few seconds' grace for
  serializing and closing, the whole fetch: a page spinning in a JavaScript loop ends as
  ``TIMEOUT`` too.

Redirects: one navigation per fetch, as the HTTP fetcher makes one request: the first 3xx
ends it, and sitesync.fetch.redirects walks the chain, one navigation per hop. Playwright's
``page.route`` never sees the later requests of a redirect chain (Chromium follows
redirects internally; checked with Playwright 1.65), so it cannot stop a hop before the
target is requested. Instead each fetch opens a DevTools session on its page and pauses
main-frame document requests (``Fetch`` domain) at their response. A 3xx is stopped there,
*before* Chromium requests its target: the result is ``REDIRECT_NOT_FOLLOWED`` with the 3xx
status and headers, ``final_url`` the URL that answered 3xx, and ``redirects`` holding the
hop (so its target is on record although it was not requested). Hops are normalized
(:func:`sitesync.urls.resolve_link`), as in the HTTP fetcher; ``from_url`` is the URL asked
for.

Navigations the page starts itself (JavaScript ``location`` changes, meta refresh) are aborted:
a fetch returns the one document its URL led to, as the HTTP fetcher does, and the links in it
are what the crawl follows. Subresources (scripts, styles, images, XHR) and frames load from
wherever the page says, as in any browser, through the crawl's gate
(:mod:`sitesync.fetch.browser_gate`: robots.txt and each host's pace).

The network policy: Chromium sends every request (documents, redirect hops, subresources,
frames, workers, WebSockets) through a guard proxy of the fetcher's own
(:mod:`sitesync.fetch.guard_proxy`), which resolves each host itself, checks the addresses
and connects only to a checked one; Chromium never resolves a name. A document refused there
ends as ``FORBIDDEN_ADDRESS`` (its redirect hops recorded); a refused subresource simply fails
to load, as a blocked request does in any browser.

The sandbox: Chromium runs sandboxed unless this process is root, where Chromium cannot;
then it runs with ``--no-sandbox`` and a warning says why (:func:`use_sandbox`).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import time
from collections import Counter
from contextlib import AbstractAsyncContextManager
from typing import TYPE_CHECKING

import yarl

from sitesync.errors import ConfigError, FetchError
from sitesync.fetch import browser_gate as gates
from sitesync.fetch.base import (
    FetchLimits,
    FetchOutcome,
    FetchResult,
    FollowPolicy,
    parse_retry_after,
)
from sitesync.fetch.browser_launch import (
    CHROMIUM_ARGS,
    DEFAULT_CHROMIUM,
    check_browser,
    load_playwright,
    no_chromium,
    use_sandbox,
)
from sitesync.fetch.browser_navigation import Navigation, normalized
from sitesync.fetch.browser_results import (
    classify,
    failed,
    first_line,
    hops_to,
    ms_until,
    navigation_failed,
    refused,
    response_headers,
)
from sitesync.fetch.guard_proxy import GuardProxy
from sitesync.fetch.http import DEFAULT_USER_AGENT
from sitesync.fetch.netpolicy import NetworkPolicy
from sitesync.models import Validators

if TYPE_CHECKING:
    from playwright.async_api import Browser, BrowserContext, Page, Playwright, Response

__all__ = [
    "CHROMIUM_ARGS", "DEFAULT_CHROMIUM", "BrowserFetcher", "check_browser", "use_sandbox",
]  # fmt: skip

log = logging.getLogger(__name__)

_HTML_TYPES = frozenset({"text/html", "application/xhtml+xml"})
_SERIALIZED_TYPE = "text/html; charset=utf-8"
_VIEWER_TYPE = "application/pdf"
_CLOSE_GRACE = 5.0  # seconds past total_timeout for serializing the DOM and closing the page


class BrowserFetcher:
    """Fetches pages with a headless system Chromium driven by Playwright."""

    #: Pages load in full: no last fetch is read or kept for them (docs/operating.md).
    revalidates = False

    def __init__(
        self,
        *,
        limits: FetchLimits | None = None,
        user_agent: str = DEFAULT_USER_AGENT,
        executable_path: str = DEFAULT_CHROMIUM,
        max_pages: int = 4,
        settle_ms: int = 500,
        extra_args: tuple[str, ...] = (),
        network: NetworkPolicy | None = None,
    ) -> None:
        if max_pages < 1 or settle_ms < 0:
            raise ConfigError("BrowserFetcher needs max_pages >= 1 and settle_ms >= 0")
        self._api = load_playwright()
        self.limits = limits or FetchLimits()
        self.user_agent = user_agent
        self.executable_path = executable_path
        self.settle_ms = settle_ms
        self.network = network or NetworkPolicy()
        self._proxy: GuardProxy | None = None
        self._proxy_url = ""
        self._gate: gates.SubresourceGate | None = None
        self._documents: Counter[str] = Counter()  # hosts of the pages being fetched
        self._args = (*CHROMIUM_ARGS, *extra_args)
        self._pages = asyncio.Semaphore(max_pages)
        self._launching = asyncio.Lock()
        self._playwright: Playwright | None = None
        self._browser: Browser | None = None

    async def __aenter__(self) -> BrowserFetcher:
        self._api = load_playwright()
        if not os.access(self.executable_path, os.X_OK):
            raise FetchError(no_chromium(self.executable_path))
        self._playwright = await self._api.async_playwright().start()
        try:
            self._proxy = GuardProxy(
                self.network, connect_timeout=self.limits.connect_timeout, admit=self._admit
            )
            self._proxy_url = await self._proxy.start()
            await self._launch()
        except BaseException:
            await self.__aexit__()
            raise
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        browser, playwright, proxy = self._browser, self._playwright, self._proxy
        self._browser = self._playwright = self._proxy = None
        # Closing is best effort: a browser that already died must not hide the real error.
        if browser is not None:
            with contextlib.suppress(Exception):
                await browser.close()
        if playwright is not None:
            with contextlib.suppress(Exception):
                await playwright.stop()
        if proxy is not None:
            await proxy.close()

    async def _launch(self) -> Browser:
        assert self._playwright is not None
        try:
            assert self._proxy is not None
            self._browser = await self._playwright.chromium.launch(
                executable_path=self.executable_path,
                headless=True,
                args=[*self._args, *gates.NETWORK_ARGS],
                proxy=gates.proxy_settings(self._proxy, self._proxy_url),
                chromium_sandbox=use_sandbox(),
            )
        except self._api.Error as exc:
            raise FetchError(
                f"Chromium at {self.executable_path} did not start: {first_line(exc)}"
            ) from exc
        return self._browser

    async def _ready_browser(self) -> Browser:
        if self._playwright is None:
            raise RuntimeError("BrowserFetcher used outside 'async with'")
        async with self._launching:
            if self._browser is None or not self._browser.is_connected():
                # Chromium crashed or was killed: one page must not end the whole crawl.
                return await self._launch()
            return self._browser

    def bind_gate(self, gate: gates.SubresourceGate) -> None:
        """Send the pages' other requests through the crawl's gate (robots.txt, the host's
        pace): see :func:`sitesync.fetch.browser_gate.admit_through`."""
        self._gate = gate

    def _admit(self, url: str, path_known: bool) -> AbstractAsyncContextManager[str | None]:
        return gates.admit_through(self._gate, self._documents, url, path_known)

    async def fetch(
        self,
        url: str,
        *,
        validators: Validators | None = None,
        read_at_most: int | None = None,
    ) -> FetchResult:
        # ``validators`` are ignored: a page is rendered from a full load (its scripts,
        # frames and requests), which a 304 for the document alone cannot stand for.
        # read_at_most is not honoured: robots.txt (what asks for it) is always fetched over
        # plain HTTP, never through the browser.
        started = time.monotonic()
        if not url.lower().startswith(("http://", "https://")):
            return failed(url, FetchOutcome.INVALID, "not an http(s) URL", started)
        with gates.loading(self._documents, url):
            # One navigation per fetch: stopped at the first redirect (fetch/redirects.py).
            return await self._fetch_page(url, _stop_at_redirects, started)

    async def _fetch_page(
        self, url: str, may_follow: FollowPolicy | None, started: float
    ) -> FetchResult:
        async with self._pages:
            browser = await self._ready_browser()
            context: BrowserContext | None = None
            try:
                context = await browser.new_context(
                    user_agent=self.user_agent, service_workers="block", accept_downloads=False
                )
                async with asyncio.timeout(self.limits.total_timeout + _CLOSE_GRACE):
                    return await self._fetch_in(context, url, may_follow, started)
            except TimeoutError:
                return failed(url, FetchOutcome.TIMEOUT, "timed out", started)
            except self._api.Error as exc:
                # What Playwright reports outside navigation (a renderer crash, a browser
                # gone mid-fetch: relaunched next time) is this page's outcome, not a fault.
                return failed(url, FetchOutcome.UNREACHABLE, first_line(exc), started)
            finally:
                if context is not None:
                    with contextlib.suppress(Exception):
                        await context.close()

    async def _fetch_in(
        self,
        context: BrowserContext,
        url: str,
        may_follow: FollowPolicy | None,
        started: float,
    ) -> FetchResult:
        page = await context.new_page()
        nav = Navigation(
            url, may_follow, self.limits.max_redirects, await context.new_cdp_session(page)
        )
        await nav.start()
        page.on("request", nav.request_started)
        page.on("requestfinished", nav.request_ended)
        page.on("requestfailed", nav.request_ended)
        deadline = started + self.limits.total_timeout
        try:
            response = await page.goto(url, wait_until="commit", timeout=ms_until(deadline))
            # Not goto's own wait_until="load": when the page tries to navigate away while it
            # loads (and that navigation is aborted, see Navigation), Playwright never reports
            # "load" for the document that stays, although the document itself completes.
            await page.wait_for_function(
                "document.readyState === 'complete'", timeout=ms_until(deadline)
            )
        except self._api.TimeoutError:
            return failed(url, FetchOutcome.TIMEOUT, "timed out", started)
        except self._api.Error as exc:
            message = first_line(exc)
            problem = self._proxy_problem(nav.hops[-1].to_url if nav.hops else url, started)
            if problem is not None and problem[0]:
                return refused(url, nav, problem[1], started)
            return navigation_failed(url, nav, problem[1] if problem else message, started)
        if response is None:
            return failed(url, FetchOutcome.INVALID, "no document response", started)
        await nav.settle(min(self.settle_ms / 1000, max(0.0, deadline - time.monotonic())))
        return await self._result(url, page, response, started)

    def _proxy_problem(self, url: str, since: float) -> tuple[bool, str] | None:
        """What the guard proxy met connecting for ``url`` during this fetch: (refused by
        the network policy, why), or None when it connected (or was never asked)."""
        parts = yarl.URL(url)
        if self._proxy is None or parts.host is None or parts.port is None:
            return None
        return self._proxy.problem(parts.host, parts.port, since=since)

    async def _result(
        self, url: str, page: Page, response: Response, started: float
    ) -> FetchResult:
        headers = await response_headers(response)
        status = response.status
        body, error = await self._body(page, response, headers)
        if error is not None:
            outcome = FetchOutcome.TOO_LARGE if body is None else FetchOutcome.INVALID
        else:
            outcome, error = classify(status)
        return FetchResult(
            url=url,
            outcome=outcome,
            status=status,
            final_url=normalized(response.url),
            headers=headers,
            body=body or b"",
            error=error,
            elapsed=time.monotonic() - started,
            redirects=await hops_to(response.request, url),
            retry_after=parse_retry_after(status, headers),
        )

    async def _body(
        self, page: Page, response: Response, headers: dict[str, str]
    ) -> tuple[bytes | None, str | None]:
        """The body to hand on and, when there is none to hand on, why (None body: too large).

        ``headers`` gets the content type of what is handed on.
        """
        declared = headers.get("content-type", "").split(";", 1)[0].strip().lower()
        document_type = str(await page.evaluate("document.contentType")).lower()
        if _VIEWER_TYPE in (declared, document_type):
            # Chromium shows a PDF in its own viewer, and even response.body() then gives
            # the viewer's HTML: there is no page here, and no faithful body either.
            return b"", f"not a page: Chromium shows {_VIEWER_TYPE} in its viewer"
        too_large = f"body larger than {self.limits.max_body_bytes} bytes"
        # Both must say HTML (without a Content-Type, Chromium's sniffing decides): for an
        # image or plain text, the DOM is a wrapper Chromium built, not the site's page.
        if document_type in _HTML_TYPES and (not declared or declared in _HTML_TYPES):
            # Whatever the server sent, what we hand on is the serialized DOM.
            headers["content-type"] = _SERIALIZED_TYPE
            body = await self._serialized_dom(page)
            return body, None if body is not None else too_large
        raw = await response.body()
        return (raw, None) if len(raw) <= self.limits.max_body_bytes else (None, too_large)

    async def _serialized_dom(self, page: Page) -> bytes | None:
        cap = self.limits.max_body_bytes
        # A UTF-8 encoding is never shorter than its character count: a cheap check first
        # keeps a huge DOM from being copied out of the browser only to be dropped.
        length = await page.evaluate(
            "document.documentElement ? document.documentElement.outerHTML.length : 0"
        )
        if int(length) > cap:
            return None
        body = (await page.content()).encode("utf-8", errors="replace")
        return body if len(body) <= cap else None


def _stop_at_redirects(target: str) -> bool:
    """The navigation's follow policy: no hop is taken inside Chromium."""
    return False
