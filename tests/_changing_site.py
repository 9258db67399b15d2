"""A small site whose pages a test changes between scans (issue 30): each path answers a
status and a body that links to other paths, with an ETag it honours; the test edits
``pages`` in between."""

from __future__ import annotations

import asyncio
import hashlib
import threading
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from dataclasses import dataclass, field

from aiohttp import web


@dataclass
class Page:
    links: tuple[str, ...] = ()
    status: int = 200
    text: str = ""

    def html(self) -> str:
        anchors = "".join(f'<a href="{link}">{link}</a>' for link in self.links)
        return (
            f"<html><head><title>{self.text}</title></head><body>{self.text}{anchors}</body></html>"
        )


@dataclass
class ChangingSite:
    pages: dict[str, Page]
    root: str = ""
    served: list[tuple[str, int, int]] = field(default_factory=list)  # (path, status, bytes)
    # /sitemap.xml: path -> its <lastmod> (None: an entry without one); empty: a 404.
    sitemap: dict[str, str | None] = field(default_factory=dict)

    def sitemap_xml(self) -> str:
        entries = "".join(
            f"<url><loc>{self.url(path)}</loc>"
            + (f"<lastmod>{lastmod}</lastmod>" if lastmod else "")
            + "</url>"
            for path, lastmod in self.sitemap.items()
        )
        return f'<?xml version="1.0"?><urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">{entries}</urlset>'

    def url(self, path: str) -> str:
        return f"{self.root}{path}"

    async def handle(self, request: web.Request) -> web.Response:
        """The page, with a strong ETag of its body; a 304 when If-None-Match has it."""
        if request.path == "/sitemap.xml" and self.sitemap:
            self.served.append((request.path, 200, 0))
            return web.Response(text=self.sitemap_xml(), content_type="application/xml")
        page = self.pages.get(request.path)
        if page is None:
            self.served.append((request.path, 404, 0))
            return web.Response(status=404, text="not here")
        body = page.html().encode()
        etag = f'"{hashlib.sha256(body).hexdigest()[:16]}"'
        if page.status == 200 and request.headers.get("If-None-Match") == etag:
            self.served.append((request.path, 304, 0))
            return web.Response(status=304, headers={"ETag": etag})
        self.served.append((request.path, page.status, len(body)))
        return web.Response(status=page.status, body=body, content_type="text/html",
                            headers={"ETag": etag})  # fmt: skip


@asynccontextmanager
async def serving(pages: dict[str, Page]) -> AsyncIterator[ChangingSite]:
    """The site on 127.0.0.1 (a free port), in the test's own event loop."""
    site = ChangingSite(pages)
    app = web.Application()
    app.router.add_route("GET", "/{tail:.*}", site.handle)
    runner = web.AppRunner(app)
    await runner.setup()
    tcp = web.TCPSite(runner, "127.0.0.1", 0)
    await tcp.start()
    port = runner.addresses[0][1]
    site.root = f"http://127.0.0.1:{port}"
    try:
        yield site
    finally:
        await runner.cleanup()


@contextmanager
def serving_in_thread(pages: dict[str, Page]) -> Iterator[ChangingSite]:
    """:func:`serving` on a thread of its own, for a test that runs the CLI in process
    (which runs its own event loop)."""
    loop = asyncio.new_event_loop()
    thread = threading.Thread(target=loop.run_forever, daemon=True)
    thread.start()
    context = serving(pages)
    site = asyncio.run_coroutine_threadsafe(context.__aenter__(), loop).result(10)
    try:
        yield site
    finally:
        asyncio.run_coroutine_threadsafe(context.__aexit__(None, None, None), loop).result(10)
        loop.call_soon_threadsafe(loop.stop)
        thread.join(10)
        loop.close()
