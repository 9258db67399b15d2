"""The loopback server of a generated site, run in a background thread."""

from __future__ import annotations

import asyncio
import collections
import contextlib
import errno
import socket
import threading
import time
from collections.abc import Awaitable, Callable
from types import TracebackType

from aiohttp import web

from sitesync.testing.pages import Pages
from sitesync.testing.spec import (
    RequestRecord,
    SiteSpec,
    page_index,
    page_urls,
    remove_dot_segments,
)
from sitesync.testing.validators import Validating

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


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
        self._pages: Pages | None = None
        self._validating = Validating(self.spec)
        self._delay = self.spec.delay  # the spec's, until set_delay
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
            path = remove_dot_segments(rec.path.split("?", 1)[0])
            counts[f"http://{rec.host.lower()}{path}"] += 1
        return counts

    def set_delay(self, seconds: float) -> None:
        """Hold every response back ``seconds`` from now on (the spec's ``delay`` until then).

        A test that must not race a process's start-up keeps the site slow until that
        process is in, then lets the rest of the crawl go fast."""
        if seconds < 0:
            raise ValueError("delay must not be negative")
        self._delay = seconds

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
        self._pages = Pages(self.spec, self.port)

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
        status, sent = 500, 0
        self._in_flight += 1
        try:
            response = await self._respond(request)
            status = response.status
            body = response.body if isinstance(response, web.Response) else None
            sent = len(body) if isinstance(body, bytes) else 0
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
                    if_none_match=request.headers.get("If-None-Match", ""),
                    if_modified_since=request.headers.get("If-Modified-Since", ""),
                    status=status,
                    body_bytes=sent,
                )
                with self._lock:
                    self._records.append(record)

    def _local_host(self, request: web.Request) -> str:
        sockname = request.transport.get_extra_info("sockname") if request.transport else None
        return f"{sockname[0]}:{sockname[1]}" if sockname else ""

    async def _respond(self, request: web.Request) -> web.StreamResponse:
        if self._delay:
            await asyncio.sleep(self._delay)
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
        index = page_index(remove_dot_segments(path), self.spec.pages_per_host)
        if host_index is None or index is None:
            return web.Response(status=404, text="not found", content_type="text/plain")
        return self._validating.respond(request, host_index, self._pages.render(host_index, index))

    def _host_index(self, request: web.Request) -> int | None:
        # The socket the request arrived on decides the host, not the Host header: a client
        # may send any Host, but a page belongs to the address that served it.
        sockname = request.transport.get_extra_info("sockname") if request.transport else None
        if not sockname:
            return None
        last = str(sockname[0]).rsplit(".", 1)[-1]
        index = int(last) - self.spec.first_ip if last.isdecimal() else -1
        return index if 0 <= index < self.spec.hosts else None
