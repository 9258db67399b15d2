"""Loopback sites for the adaptive politeness tests and benchmark: one that struggles under
load (:class:`LoadedSite`), and a healthy one with a few troubled URLs (:class:`TroubledSite`).

It takes at most ``limit`` requests per second (counted over the last second, answered
ones only) and answers 503 without Retry-After to any request above that; below it, each
answer takes ``base_latency / (1 - rate / limit)`` (a queue filling up: latency grows with
the request rate long before anything fails), plus ``extra_latency``. ``forced_status``
makes every page answer that status at once (a 503 burst, a 429 without Retry-After).
All of these may be changed while it serves (the server "heals").

Pages form a tree: page ``i`` links to pages ``links*i+1 .. links*i+links``, so a crawl
may fetch several at once from the start.
"""

from __future__ import annotations

import asyncio
import collections
import socket
import threading
import time
from dataclasses import dataclass

from aiohttp import web


@dataclass(frozen=True, slots=True)
class Answer:
    started: float  # time.monotonic()
    status: int
    path: str
    wall: float = 0.0  # time.time() at the start, to compare with a store's times


class LoadedSite:
    routes: tuple[str, ...] = ("/", "/p/{n}")

    def __init__(
        self,
        *,
        pages: int = 100,
        links: int = 4,
        limit: float | None = 5.0,
        base_latency: float = 0.02,
        ip: str = "127.0.0.3",
    ) -> None:
        self.pages = pages
        self.links = links
        self.limit = limit
        self.base_latency = base_latency
        self.extra_latency = 0.0
        self.forced_status: int | None = None
        self.ip = ip
        self.port = 0
        self.answers: list[Answer] = []
        self._accepted: collections.deque[float] = collections.deque()
        self._thread: threading.Thread | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stop: asyncio.Event | None = None

    @property
    def host(self) -> str:
        return f"{self.ip}:{self.port}"

    @property
    def root(self) -> str:
        return f"http://{self.host}/"

    def page_urls(self) -> list[str]:
        return [self.root] + [f"{self.root}p/{i}" for i in range(1, self.pages)]

    def count(self, status: int, *, since: float = 0.0) -> int:
        return sum(1 for a in list(self.answers) if a.status == status and a.started >= since)

    def rate(self, *, since: float, until: float | None = None) -> float:
        """Answered (non-503/429) requests per second between two monotonic times."""
        end = until if until is not None else time.monotonic()
        ok = [a for a in list(self.answers) if a.status == 200 and since <= a.started <= end]
        return len(ok) / max(end - since, 1e-6)

    # -- serving ----------------------------------------------------------------------------

    async def _handle(self, request: web.Request) -> web.StreamResponse:
        now = time.monotonic()
        status, latency = self._decide(now)
        self.answers.append(Answer(now, status, request.path, time.time()))
        if status != 200:
            return web.Response(status=status, text="busy", content_type="text/plain")
        await asyncio.sleep(latency)
        index = 0 if request.path == "/" else int(request.path.rsplit("/", 1)[-1] or 0)
        children = range(
            self.links * index + 1, min(self.pages, self.links * index + self.links + 1)
        )
        body = "".join(f'<a href="/p/{i}">page {i}</a>\n' for i in children)
        return web.Response(text=f"<html><body>{body}</body></html>", content_type="text/html")

    def _decide(self, now: float) -> tuple[int, float]:
        if self.forced_status is not None:
            return self.forced_status, 0.0
        while self._accepted and self._accepted[0] < now - 1.0:
            self._accepted.popleft()
        rate = len(self._accepted)
        if self.limit is not None and rate >= self.limit:
            return 503, 0.0
        self._accepted.append(now)
        load = rate / self.limit if self.limit else 0.0
        return 200, self.base_latency / max(0.1, 1.0 - load) + self.extra_latency

    def start(self) -> LoadedSite:
        ready = threading.Event()
        self._thread = threading.Thread(target=self._main, args=(ready,), daemon=True)
        self._thread.start()
        if not ready.wait(10):
            raise RuntimeError("the loaded site did not start")
        return self

    def _main(self, ready: threading.Event) -> None:
        async def serve() -> None:
            self._loop = asyncio.get_running_loop()
            self._stop = asyncio.Event()
            app = web.Application()
            for route in self.routes:
                app.router.add_get(route, self._handle)
            # A request still answering (a stall) is cut off at the end, not waited for.
            runner = web.AppRunner(app, access_log=None, shutdown_timeout=0.5)
            await runner.setup()
            sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            sock.bind((self.ip, 0))
            self.port = sock.getsockname()[1]
            await web.SockSite(runner, sock).start()
            ready.set()
            await self._stop.wait()
            await runner.cleanup()

        asyncio.run(serve())

    def stop(self) -> None:
        if self._loop is not None and self._stop is not None:
            self._loop.call_soon_threadsafe(self._stop.set)
        if self._thread is not None:
            self._thread.join(10)

    def __enter__(self) -> LoadedSite:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


#: What each troubled URL of a :class:`TroubledSite` does, by the name in its path.
TROUBLES = ("never", "headers", "drip", "failing")


class TroubledSite(LoadedSite):
    """A healthy site with a few troubled URLs: ``pages`` pages that answer at once, all
    linked from the root, and among those links (spread out) one URL ``/t/NAME`` for each
    of ``troubles``:

    - ``never``: the request is read and never answered;
    - ``headers``: the headers come after ``headers_after`` seconds;
    - ``drip``: the headers at once, then the body one byte every ``drip_every`` seconds;
    - ``failing``: 503 with ``Retry-After: retry_after`` the first time, 500 ever after.

    The issue's site (docs/operating.md, "Adaptive politeness") is the default: 150 pages
    and three URLs that stall, their timing scaled by ``scale`` (1: the real one).
    """

    routes = (*LoadedSite.routes, "/t/{name}")

    def __init__(
        self,
        *,
        pages: int = 150,
        troubles: tuple[str, ...] = ("never", "headers", "drip"),
        scale: float = 1.0,
        retry_after: int = 2,
        ip: str = "127.0.0.4",
    ) -> None:
        super().__init__(pages=pages, limit=None, base_latency=0.0, ip=ip)
        assert set(troubles) <= set(TROUBLES), troubles
        self.troubles = troubles
        self.headers_after = 40.0 * scale
        self.drip_every = 1.0 * scale
        self.retry_after = retry_after

    def page_urls(self) -> list[str]:
        return super().page_urls() + [f"{self.root}t/{name}" for name in self.troubles]

    async def _handle(self, request: web.Request) -> web.StreamResponse:
        if request.path.startswith("/t/"):
            return await self._trouble(request, request.path[3:])
        self.answers.append(Answer(time.monotonic(), 200, request.path, time.time()))
        links = ""
        if request.path == "/":
            paths = [f"/p/{i}" for i in range(1, self.pages)]
            for n, name in enumerate(self.troubles):  # spread among the pages
                paths.insert((2 * n + 1) * len(paths) // (2 * len(self.troubles)), f"/t/{name}")
            links = "".join(f'<a href="{p}">{p}</a>\n' for p in paths)
        return web.Response(text=f"<html><body>{links}</body></html>", content_type="text/html")

    async def _trouble(self, request: web.Request, name: str) -> web.StreamResponse:
        seen = sum(1 for a in self.answers if a.path == request.path)
        status = 200
        if name == "failing":
            status = 503 if seen == 0 else 500
        self.answers.append(Answer(time.monotonic(), status, request.path, time.time()))
        if name == "never":
            await asyncio.Event().wait()  # until the crawler gives up (or the site stops)
        if name == "headers":
            await asyncio.sleep(self.headers_after)
        if name == "failing":
            headers = {"Retry-After": str(self.retry_after)} if status == 503 else {}
            return web.Response(status=status, text="failing", headers=headers)
        if name == "drip":
            response = web.StreamResponse(headers={"Content-Type": "text/html"})
            await response.prepare(request)
            try:
                for _ in range(100_000):
                    await asyncio.sleep(self.drip_every)
                    await response.write(b" ")
            except ConnectionError:  # the crawler gave up on it
                return response
        return web.Response(text="<html><body>late</body></html>", content_type="text/html")
