"""A loopback site that struggles under load, for the adaptive politeness tests and benchmark.

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


class LoadedSite:
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

    async def _handle(self, request: web.Request) -> web.Response:
        now = time.monotonic()
        status, latency = self._decide(now)
        self.answers.append(Answer(now, status, request.path))
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
            app.router.add_get("/", self._handle)
            app.router.add_get("/p/{n}", self._handle)
            runner = web.AppRunner(app, access_log=None)
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
