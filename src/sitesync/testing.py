"""A generated multi-host website served on loopback, for tests and benchmarks.

Every host of the site is a loopback address (``127.0.0.2``, ``127.0.0.3``, ...) listening on one
shared port, so a crawler sees several distinct hosts without any DNS. Pages and links are a
pure function of :class:`SiteSpec`, so a test knows in advance every URL a correct crawler must
fetch, and the links include the traps a crawler must handle: URL variants that normalization
must collapse and links to hosts outside the site that scoping must reject.

In-process use (the server runs in a background thread with its own event loop, so a crawler
running in a subprocess, or in the test's own loop, can use it while the test waits)::

    with LoopbackSite(SiteSpec(hosts=2, pages_per_host=20)) as site:
        crawl(site.root_urls)
        assert set(site.fetch_counts()) >= set(site.page_urls())

Out-of-process use, e.g. by the benchmark, so the server has its own CPU::

    python -m sitesync.testing --hosts 20 --pages-per-host 1000 --port 0 --no-log

prints ``{"port": N, "root_urls": [...]}`` on one line once listening and serves until killed.
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import contextlib
import errno
import json
import random
import signal
import socket
import sys
import threading
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from html import escape
from types import TracebackType

from aiohttp import web

from sitesync.fetch.netpolicy import NetworkPolicy

__all__ = [
    "LOOPBACK_NETWORKS",
    "OPEN_LOOPBACK",
    "OUT_OF_SCOPE_IPS",
    "Handler",
    "LoopbackSite",
    "RequestRecord",
    "SiteSpec",
    "page_path",
    "page_urls",
    "serve_forever",
]

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]

#: Loopback, which crawls refuse by default: tests and benchmarks crawling a LoopbackSite open it
#: (``allowed_networks`` / ``SITESYNC_ALLOWED_NETWORKS``, or ``OPEN_LOOPBACK`` for a fetcher).
LOOPBACK_NETWORKS: tuple[str, ...] = ("127.0.0.0/8", "::1/128")
OPEN_LOOPBACK = NetworkPolicy.opening(*LOOPBACK_NETWORKS)

#: Loopback addresses the site links to but never listens on: a scoped crawler must not fetch them.
OUT_OF_SCOPE_IPS: tuple[str, ...] = tuple(f"127.0.0.{i}" for i in range(250, 255))

_UTM_QUERY = "utm_source=x&utm_medium=y"
_HTML_CONTENT_TYPE = "text/html; charset=utf-8"


@dataclass(frozen=True)
class SiteSpec:
    """The shape of a generated site. Equal specs (and ports) give byte-identical sites."""

    hosts: int = 3
    pages_per_host: int = 50
    links_per_page: int = 25  # total <a> elements per page, special links included
    page_bytes: int = 20_000  # approximate body size; filler text pads pages up to it
    first_ip: int = 2  # hosts are 127.0.0.{first_ip} .. 127.0.0.{first_ip + hosts - 1}
    cross_host_links: bool = True
    variant_links: bool = True
    out_of_scope_links: bool = True
    delay: float = 0.0  # seconds every response is held back
    seed: int = 0

    def __post_init__(self) -> None:
        if self.hosts < 1 or self.pages_per_host < 1:
            raise ValueError("a site needs at least one host with at least one page")
        # The site must stay clear of 127.0.0.250+, which are the out-of-scope addresses.
        if self.first_ip < 1 or self.first_ip + self.hosts - 1 >= 250:
            raise ValueError("hosts must fit in 127.0.0.1 .. 127.0.0.249")
        if self.links_per_page < 0 or self.page_bytes < 0 or self.delay < 0:
            raise ValueError("links_per_page, page_bytes and delay must not be negative")

    def ip(self, host_index: int) -> str:
        return f"127.0.0.{self.first_ip + host_index}"


@dataclass(frozen=True)
class RequestRecord:
    """One request the site received."""

    host: str  # the Host header, or the local socket's host:port when there was none
    path: str  # path and query exactly as received
    started: float  # time.monotonic() when the handler started
    finished: float  # time.monotonic() when the handler returned
    user_agent: str
    worker: str = ""  # the X-Sitesync-Worker header (sent with worker_id_header on)


def page_path(index: int) -> str:
    """The path of page ``index`` of any host: the root is page 0."""
    return "/" if index == 0 else f"/p/{index}.html"


def page_urls(spec: SiteSpec, port: int) -> list[str]:
    """Every in-scope page URL of the site, in normalized form (lowercase, explicit port)."""
    return [
        f"http://{spec.ip(h)}:{port}{page_path(i)}"
        for h in range(spec.hosts)
        for i in range(spec.pages_per_host)
    ]


def _remove_dot_segments(path: str) -> str:
    # RFC 3986 section 5.2.4, so that "/p/../p/5.html" counts as the page it names.
    out: list[str] = []
    segments = path.split("/")
    for seg in segments[1:]:
        if seg == "..":
            if out:
                out.pop()
        elif seg != ".":
            out.append(seg)
    result = "/" + "/".join(out)
    if segments[-1] in (".", "..") and not result.endswith("/"):
        result += "/"
    return result


def _page_index(path: str, pages_per_host: int) -> int | None:
    if path == "/":
        return 0
    if not (path.startswith("/p/") and path.endswith(".html")):
        return None
    digits = path[3:-5]
    # isdecimal rejects signs and spaces; the leading-zero check keeps one URL per page.
    if not digits.isdecimal() or (len(digits) > 1 and digits[0] == "0"):
        return None
    index = int(digits)
    return index if 0 < index < pages_per_host else None


_FILLER_SENTENCE = (
    "Lorem ipsum dolor sit amet, consectetur adipiscing elit, sed do eiusmod tempor incididunt "
    "ut labore et dolore magna aliqua. Ut enim ad minim veniam, quis nostrud exercitation. "
)


def _build_filler(size: int) -> bytes:
    """Paragraphs of prose at least ``size`` bytes long, built once and sliced per page."""
    paragraphs: list[str] = []
    total = 0
    n = 0
    while total < size:
        para = f"<p>{n}. {_FILLER_SENTENCE * 4}</p>\n"
        paragraphs.append(para)
        total += len(para)
        n += 1
    return "".join(paragraphs).encode()


class _Pages:
    """Renders pages of one site on one port. Cheap per call: a small join plus a filler slice."""

    def __init__(self, spec: SiteSpec, port: int) -> None:
        self.spec = spec
        self.port = port
        self._filler_view = memoryview(_build_filler(spec.page_bytes))

    def origin(self, host_index: int) -> str:
        return f"http://{self.spec.ip(host_index)}:{self.port}"

    def links(self, h: int, i: int) -> tuple[list[str], list[str], list[str]]:
        """The hrefs of page ``i`` of host ``h``, as (nav, main, footer)."""
        spec = self.spec
        n = spec.pages_per_host
        # An integer seed: string/tuple seeding would depend on PYTHONHASHSEED or cost more.
        rng = random.Random((spec.seed * 1_000_003 + h) * 1_000_003 + i)
        origin = self.origin(h)

        # The "next" link makes every page reachable from the root; the last page wraps around.
        nav = [page_path(0), page_path((i + 1) % n)]
        footer: list[str] = []
        main: list[str] = []
        if spec.variant_links:
            target = rng.randrange(1, n) if n > 1 else 0
            path = page_path(target)
            dotted = "/p/../" if target == 0 else "/p/.." + path
            main += [
                f"{path}#section-{rng.randrange(1, 9)}",
                f"{path}?{_UTM_QUERY}",
                f"HTTP://{spec.ip(h).upper()}:{self.port}{path}",
                dotted,
            ]
        if spec.cross_host_links and spec.hosts > 1:
            for _ in range(2):
                other = (h + rng.randrange(1, spec.hosts)) % spec.hosts
                main.append(self.origin(other) + page_path(rng.randrange(n)))
        if spec.out_of_scope_links:
            # Rotating through the five addresses puts each of them on every run of 5 pages.
            bad_ip = OUT_OF_SCOPE_IPS[(h + i) % len(OUT_OF_SCOPE_IPS)]
            footer += [
                f"http://{bad_ip}:{self.port}{page_path(i)}",
                f"http://example.invalid{page_path(i)}",
                "mailto:webmaster@example.invalid",
                "javascript:void(0)",
            ]
        remaining = spec.links_per_page - len(nav) - len(main) - len(footer)
        for k in range(max(0, remaining)):
            target = rng.randrange(n)
            # Alternate relative and absolute hrefs: crawlers must resolve both.
            main.append(origin + page_path(target) if k % 3 == 2 else page_path(target))
        return nav, main, footer

    def render(self, h: int, i: int) -> bytes:
        nav, main, footer = self.links(h, i)
        title = f"Host {h} page {i}"

        def anchors(hrefs: list[str], label: str) -> str:
            return "".join(
                f'<a href="{escape(href)}">{label} {k}</a>\n' for k, href in enumerate(hrefs)
            )

        head = (
            '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
            f"<title>{title}</title></head>\n<body>\n"
            f"<nav>\n{anchors(nav, 'nav')}</nav>\n"
            f"<main>\n<h1>{title}</h1>\n{anchors(main, 'link')}<article>\n"
        ).encode()
        tail = f"</article>\n</main>\n<footer>\n{anchors(footer, 'ext')}</footer>\n</body></html>\n"
        tail_bytes = tail.encode()
        pad = max(0, self.spec.page_bytes - len(head) - len(tail_bytes))
        # Filler is whole paragraphs only up to the cut; a cut mid-paragraph is still valid
        # HTML for any real parser, and keeps generation to one slice.
        return b"".join((head, self._filler_view[:pad], tail_bytes))


class LoopbackSite:
    """Serves a :class:`SiteSpec` on loopback from a background thread.

    ``port=0`` picks a free port. ``record_requests=False`` keeps no per-request log (for
    long-running servers). ``stats_path``, when set, serves a JSON request counter there.
    """

    def __init__(
        self,
        spec: SiteSpec | None = None,
        *,
        port: int = 0,
        record_requests: bool = True,
        stats_path: str | None = None,
    ) -> None:
        self.spec = spec if spec is not None else SiteSpec()
        self.port = port
        self.hosts: list[str] = []
        self.root_urls: list[str] = []
        self._requested_port = port
        self._record = record_requests
        self._stats_path = stats_path
        self._records: list[RequestRecord] = []
        self._lock = threading.Lock()
        self._handlers: dict[str, Handler] = {}
        self._pages: _Pages | None = None
        self._served = 0
        self._in_flight = 0  # requests received and not yet answered
        self._status_counts: collections.Counter[int] = collections.Counter()
        self._thread: threading.Thread | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stop_event: asyncio.Event | None = None
        self._runner: web.AppRunner | None = None

    # --- public API -------------------------------------------------------------------------

    @property
    def requests(self) -> list[RequestRecord]:
        """A snapshot of the requests received so far (a copy: safe to iterate)."""
        with self._lock:
            return list(self._records)

    @property
    def in_flight(self) -> int:
        """Requests being served right now (received, not yet answered)."""
        return self._in_flight

    def clear_requests(self) -> None:
        with self._lock:
            self._records.clear()

    def page_urls(self) -> list[str]:
        return page_urls(self.spec, self.port)

    def fetch_counts(self) -> collections.Counter[str]:
        """Requests per canonical URL ``http://HOST:PORT/path`` (query and dot segments dropped).

        Dropping the query means a crawler that fetched a ``?utm_...`` variant shows up as a
        count of 2 on the canonical page, which is exactly what dedup tests look for.
        """
        counts: collections.Counter[str] = collections.Counter()
        for rec in self.requests:
            path = _remove_dot_segments(rec.path.split("?", 1)[0])
            counts[f"http://{rec.host.lower()}{path}"] += 1
        return counts

    def set_handler(self, path: str, handler: Handler) -> None:
        """Serve ``path`` (exact match, query ignored) on every host with ``handler``."""
        self._handlers[path] = handler

    def remove_handler(self, path: str) -> None:
        self._handlers.pop(path, None)

    def start(self) -> LoopbackSite:
        if self._thread is not None:
            raise RuntimeError("LoopbackSite already started")
        ready = threading.Event()
        failure: list[BaseException] = []
        thread = threading.Thread(
            target=self._thread_main, args=(ready, failure), name="LoopbackSite", daemon=True
        )
        thread.start()
        ready.wait()
        if failure:
            thread.join()
            raise failure[0]
        self._thread = thread
        return self

    def stop(self) -> None:
        thread, loop, stop_event = self._thread, self._loop, self._stop_event
        if thread is None:
            return
        if loop is not None and stop_event is not None:
            with contextlib.suppress(RuntimeError):  # the loop already closed
                loop.call_soon_threadsafe(stop_event.set)
        thread.join(timeout=10)
        if thread.is_alive():
            raise RuntimeError("LoopbackSite server thread did not stop")
        self._thread = None

    def __enter__(self) -> LoopbackSite:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    # --- server side ------------------------------------------------------------------------

    def _thread_main(self, ready: threading.Event, failure: list[BaseException]) -> None:
        async def main() -> None:
            try:
                await self._start_server()
            except BaseException as exc:
                failure.append(exc)
                ready.set()
                return
            ready.set()
            try:
                await self._wait_for_stop()
            finally:
                await self._stop_server()

        try:
            asyncio.run(main())
        except BaseException as exc:  # pragma: no cover - only if asyncio.run itself fails
            if not ready.is_set():
                failure.append(exc)
                ready.set()

    async def _wait_for_stop(self) -> None:
        assert self._stop_event is not None
        await self._stop_event.wait()

    async def _start_server(self) -> None:
        self._loop = asyncio.get_running_loop()
        self._stop_event = asyncio.Event()
        sockets = self._bind_all()
        self.hosts = [f"{self.spec.ip(h)}:{self.port}" for h in range(self.spec.hosts)]
        self.root_urls = [f"http://{host}/" for host in self.hosts]
        self._pages = _Pages(self.spec, self.port)

        app = web.Application()
        app.router.add_route("*", "/{tail:.*}", self._handle)
        # A short shutdown_timeout keeps stop() prompt even with a crawler mid-request;
        # access_log=None because aiohttp's access logger costs time per request.
        runner = web.AppRunner(app, access_log=None, shutdown_timeout=0.5)
        await runner.setup()
        self._runner = runner
        try:
            for sock in sockets:
                await web.SockSite(runner, sock, backlog=1024).start()
        except BaseException:
            await runner.cleanup()
            raise

    async def _stop_server(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None

    def _bind_all(self) -> list[socket.socket]:
        """Listen on the same port on every host address, retrying when a later bind collides."""
        addresses = [self.spec.ip(h) for h in range(self.spec.hosts)]
        attempts = 1 if self._requested_port else 50
        for _ in range(attempts):
            sockets: list[socket.socket] = []
            try:
                port = self._requested_port
                for address in addresses:
                    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
                    sockets.append(sock)
                    # SO_REUSEADDR only lets us reuse ports in TIME_WAIT, never steal a live one.
                    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
                    sock.bind((address, port))
                    port = sock.getsockname()[1]
                    sock.listen(1024)
                    sock.setblocking(False)
            except OSError as exc:
                for sock in sockets:
                    sock.close()
                if exc.errno != errno.EADDRINUSE or self._requested_port:
                    raise
                continue
            self.port = port
            return sockets
        raise OSError(errno.EADDRINUSE, "no port free on every host address")

    async def _handle(self, request: web.Request) -> web.StreamResponse:
        started = time.monotonic()
        status = 500
        self._in_flight += 1
        try:
            response = await self._respond(request)
            status = response.status
            return response
        except web.HTTPException as exc:
            status = exc.status
            raise
        finally:
            # Counted in the server thread only, so plain integer updates need no lock.
            self._in_flight -= 1
            self._served += 1
            self._status_counts[status] += 1
            if self._record:
                record = RequestRecord(
                    # Not request.host: without a Host header it falls back to the FQDN.
                    host=request.headers.get("Host") or self._local_host(request),
                    path=request.raw_path,
                    started=started,
                    finished=time.monotonic(),
                    user_agent=request.headers.get("User-Agent", ""),
                    worker=request.headers.get("X-Sitesync-Worker", ""),
                )
                with self._lock:
                    self._records.append(record)

    def _local_host(self, request: web.Request) -> str:
        sockname = request.transport.get_extra_info("sockname") if request.transport else None
        return f"{sockname[0]}:{sockname[1]}" if sockname else ""

    async def _respond(self, request: web.Request) -> web.StreamResponse:
        if self.spec.delay:
            await asyncio.sleep(self.spec.delay)
        path = request.path
        custom = self._handlers.get(path)
        if custom is not None:
            return await custom(request)
        if self._stats_path is not None and path == self._stats_path:
            return web.json_response(
                {"served": self._served, "status": dict(self._status_counts)},
            )
        if request.method not in ("GET", "HEAD"):
            return web.Response(status=405, headers={"Allow": "GET, HEAD"})
        host_index = self._host_index(request)
        assert self._pages is not None
        index = _page_index(_remove_dot_segments(path), self.spec.pages_per_host)
        if host_index is None or index is None:
            return web.Response(status=404, text="not found", content_type="text/plain")
        return web.Response(
            body=self._pages.render(host_index, index),
            headers={"Content-Type": _HTML_CONTENT_TYPE},
        )

    def _host_index(self, request: web.Request) -> int | None:
        # The socket the request arrived on decides the host, not the Host header: a client
        # may send any Host, but a page belongs to the address that served it.
        sockname = request.transport.get_extra_info("sockname") if request.transport else None
        if not sockname:
            return None
        last = str(sockname[0]).rsplit(".", 1)[-1]
        index = int(last) - self.spec.first_ip if last.isdecimal() else -1
        return index if 0 <= index < self.spec.hosts else None


# --- separate-process mode ----------------------------------------------------------------------


def serve_forever(
    spec: SiteSpec, port: int = 0, *, record_requests: bool = False, stats_path: str | None = None
) -> None:
    """Serve ``spec`` until SIGTERM/SIGINT; print ``{"port", "root_urls"}`` once listening."""
    site = LoopbackSite(spec, port=port, record_requests=record_requests, stats_path=stats_path)
    done = threading.Event()

    def on_signal(signum: int, frame: object) -> None:
        done.set()

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    with site:
        print(json.dumps({"port": site.port, "root_urls": site.root_urls}), flush=True)
        # A timed wait lets the main thread run the Python-level signal handler promptly.
        while not done.wait(0.5):
            pass


def _parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m sitesync.testing", description="Serve a generated site on loopback."
    )
    defaults = SiteSpec()
    parser.add_argument("--hosts", type=int, default=defaults.hosts)
    parser.add_argument("--pages-per-host", type=int, default=defaults.pages_per_host)
    parser.add_argument("--links-per-page", type=int, default=defaults.links_per_page)
    parser.add_argument("--page-bytes", type=int, default=defaults.page_bytes)
    parser.add_argument("--first-ip", type=int, default=defaults.first_ip)
    parser.add_argument("--delay", type=float, default=defaults.delay)
    parser.add_argument("--seed", type=int, default=defaults.seed)
    parser.add_argument("--no-cross-host-links", action="store_true")
    parser.add_argument("--no-variant-links", action="store_true")
    parser.add_argument("--no-out-of-scope-links", action="store_true")
    parser.add_argument("--port", type=int, default=0, help="0 picks a free port")
    parser.add_argument(
        "--no-log", action="store_true", help="keep no per-request log (memory stays flat)"
    )
    parser.add_argument(
        "--stats-path", default=None, help="serve JSON request counters at this path"
    )
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> None:
    args = _parse_args(argv)
    spec = SiteSpec(
        hosts=args.hosts,
        pages_per_host=args.pages_per_host,
        links_per_page=args.links_per_page,
        page_bytes=args.page_bytes,
        first_ip=args.first_ip,
        cross_host_links=not args.no_cross_host_links,
        variant_links=not args.no_variant_links,
        out_of_scope_links=not args.no_out_of_scope_links,
        delay=args.delay,
        seed=args.seed,
    )
    serve_forever(spec, args.port, record_requests=not args.no_log, stats_path=args.stats_path)


if __name__ == "__main__":
    main(sys.argv[1:])
