"""The browser's other requests through the crawl's gate: robots.txt and the host's pace.

A page's document is fetched in its host's slot, which the worker holds for the whole fetch.
What the page then asks for itself (scripts, styles, images, XHR, frames) reaches the guard
proxy, which asks the crawl's gate (:meth:`sitesync.fetch.polite.PoliteClient.admit`) before
connecting: the request waits for its host's turn (concurrency, spacing, Crawl-delay) and
holds that host's slot while it is relayed, and a plain-HTTP one that robots.txt disallows is
refused (it fails to load, as a blocked request does in any browser).

Two exceptions, each for a reason:

- A request to a host whose page this browser is loading at that moment is let through: the
  page already holds that host's slot (waiting for it would wait for itself), and a page and
  its own files load together in any browser.
- HTTPS goes through a tunnel (``CONNECT host:port``): the proxy sees the host, never the
  path. The tunnel waits for the host's turn and holds its slot while open; robots.txt, which
  rules on paths, cannot be applied to the requests inside it.
"""

from __future__ import annotations

import contextlib
from collections import Counter
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import AbstractAsyncContextManager
from typing import TYPE_CHECKING

from sitesync.fetch.guard_proxy import GuardProxy
from sitesync.urls import resolve_link, url_host

if TYPE_CHECKING:
    from playwright.async_api import ProxySettings

#: The crawl's gate: (URL, check robots.txt?) -> a block yielding None while the request
#: may go, or why it may not (``PoliteClient.admit``).
SubresourceGate = Callable[..., AbstractAsyncContextManager[str | None]]


#: No UDP around the guard proxy (WebRTC).
NETWORK_ARGS = ("--force-webrtc-ip-handling-policy=disable_non_proxied_udp",)


def proxy_settings(proxy: GuardProxy, proxy_url: str) -> ProxySettings:
    """Every request through the guard proxy, loopback included (Chromium bypasses proxies
    for loopback unless told ``<-loopback>``), with the proxy's own credential: Playwright
    answers the proxy's 407 challenge with it, and no other process knows it."""
    username, password = proxy.credentials
    return {"server": proxy_url, "bypass": "<-loopback>", "username": username,
            "password": password}  # fmt: skip


@contextlib.contextmanager
def loading(documents: Counter[str], url: str) -> Iterator[None]:
    """``url``'s host is loading a page in this browser while the block runs."""
    host = _host_of(url)
    documents[host] += 1
    try:
        yield
    finally:
        documents[host] -= 1
        if documents[host] <= 0:
            del documents[host]


@contextlib.asynccontextmanager
async def admit_through(
    gate: SubresourceGate | None, documents: Counter[str], url: str, path_known: bool
) -> AsyncIterator[str | None]:
    """What the guard proxy asks before it connects for ``url`` (see the module)."""
    if gate is None or _host_of(url) in documents:
        yield None
        return
    async with gate(url, check_robots=path_known) as refusal:
        yield refusal


def _host_of(url: str) -> str:
    """The politeness key of ``url`` (``host[:port]``, the scheme's default port left out)."""
    normalized = resolve_link(url, url)
    return url_host(normalized) if normalized is not None else ""
