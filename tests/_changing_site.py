"""A small site whose pages a test changes between scans (issue 30): each path answers a
status and a body that links to other paths; the test edits ``pages`` in between."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
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
    served: list[tuple[str, int]] = field(default_factory=list)

    def url(self, path: str) -> str:
        return f"{self.root}{path}"

    async def handle(self, request: web.Request) -> web.Response:
        page = self.pages.get(request.path)
        if page is None:
            self.served.append((request.path, 404))
            return web.Response(status=404, text="not here")
        self.served.append((request.path, page.status))
        return web.Response(status=page.status, text=page.html(), content_type="text/html")


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
