"""Loopback servers standing in for a public site and an internal host.

Loopback is itself refused by default, so the tests open only the public stand-in's address
(``127.0.0.1/32``) and keep the internal one (``127.0.0.2``) closed: what reaches the
internal server is exactly what the network policy let through.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any

from aiohttp import web

PUBLIC_IP = "127.0.0.1"
INTERNAL_IP = "127.0.0.2"
PUBLIC_ONLY = [f"{PUBLIC_IP}/32"]
BOTH = [f"{PUBLIC_IP}/32", f"{INTERNAL_IP}/32"]

Route = Callable[["StandIn"], web.StreamResponse] | tuple[str, str]  # handler, or (type, body)


class StandIn:
    """An aiohttp server on one address; it logs every request path it answers."""

    def __init__(self, ip: str) -> None:
        self.ip = ip
        self.port = 0
        self.log: list[str] = []
        self.routes: dict[str, Any] = {}

    @property
    def origin(self) -> str:
        return f"http://{self.ip}:{self.port}"

    @property
    def host(self) -> str:
        return f"{self.ip}:{self.port}"

    def url(self, path: str) -> str:
        return self.origin + path

    def html(self, path: str, body: str) -> None:
        self.routes[path] = ("text/html", body)

    def text(self, path: str, content_type: str, body: str) -> None:
        self.routes[path] = (content_type, body)

    def redirect(self, path: str, target: Callable[[], str]) -> None:
        self.routes[path] = target

    async def _handle(self, request: web.Request) -> web.StreamResponse:
        self.log.append(request.path)
        route = self.routes.get(request.path)
        if route is None:
            return web.Response(status=404, text="not here")
        if callable(route):
            raise web.HTTPFound(route())
        content_type, body = route
        return web.Response(body=body.encode(), content_type=content_type)


@asynccontextmanager
async def serving(*stand_ins: StandIn) -> AsyncIterator[None]:
    runners = []
    try:
        for stand_in in stand_ins:
            app = web.Application()
            app.router.add_route("*", "/{tail:.*}", stand_in._handle)
            runner = web.AppRunner(app, access_log=None)
            await runner.setup()
            site = web.TCPSite(runner, stand_in.ip, 0)
            await site.start()
            runners.append(runner)
            stand_in.port = runner.addresses[0][1]
        yield
    finally:
        for runner in runners:
            await runner.cleanup()
