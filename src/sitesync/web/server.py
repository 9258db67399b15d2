"""Serving the dashboard with uvicorn, for ``sitesync dashboard``."""

from __future__ import annotations

import socket
from collections.abc import Callable

import uvicorn

from sitesync.config import Settings
from sitesync.errors import ConfigError
from sitesync.store import open_store
from sitesync.web.app import create_app
from sitesync.web.auth import check_exposure


class _Server(uvicorn.Server):
    """Says where it listens once it does (port 0 resolved to the port actually bound)."""

    def __init__(self, config: uvicorn.Config, on_ready: Callable[[str], None]) -> None:
        super().__init__(config)
        self._on_ready = on_ready

    async def startup(self, sockets: list[socket.socket] | None = None) -> None:
        await super().startup(sockets=sockets)
        if self.started and self.servers:
            port = self.servers[0].sockets[0].getsockname()[1]
            host = self.config.host
            self._on_ready(f"http://{f'[{host}]' if ':' in host else host}:{port}/")


async def serve(settings: Settings, *, on_ready: Callable[[str], None]) -> None:
    """Serve until SIGINT/SIGTERM; ``on_ready`` gets the URL once listening."""
    check_exposure(settings)
    # The dashboard only reads (and pauses or resumes runs): a store that is missing or
    # older than this sitesync is one line now, never created or migrated by it.
    await (await open_store(settings.db, migrate=False)).close()
    config = uvicorn.Config(
        create_app(settings),
        host=settings.dashboard_host,
        port=settings.dashboard_port,
        log_level=settings.log_level,
        # No handlers of uvicorn's own: its loggers (and every ASGI exception it logs, a
        # traceback that may quote the store's DSN) go to sitesync's, which redact.
        log_config=None,
        # One line a request at -v (info) and below, through sitesync's handler.
        access_log=settings.log_level in ("debug", "info"),
        lifespan="on",
    )
    try:
        await _Server(config, on_ready).serve()
    except SystemExit as exc:  # uvicorn exits when it cannot bind or start up
        where = f"{settings.dashboard_host}:{settings.dashboard_port}"
        raise ConfigError(
            f"the dashboard could not start on {where} (port in use? see the error above)"
        ) from exc
