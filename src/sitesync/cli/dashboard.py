"""``sitesync dashboard``: the web dashboard, its JSON API and Prometheus metrics."""

from __future__ import annotations

import asyncio
import contextlib
from typing import Annotated

import typer

from sitesync.cli._common import DbOption, plain_console
from sitesync.config import load_settings
from sitesync.redact import redact

console = plain_console(stderr=True)


def dashboard_command(
    db: DbOption = None,
    host: Annotated[
        str | None,
        typer.Option(help="Address to listen on; beyond loopback needs --token. [127.0.0.1]"),
    ] = None,
    port: Annotated[
        int | None, typer.Option(help="Port to listen on; 0 = any free. [8750]")
    ] = None,
    token: Annotated[
        str | None,
        typer.Option(
            help="Access token for the pages, API and /metrics (or SITESYNC_DASHBOARD_TOKEN).",
            show_default=False,
        ),
    ] = None,
) -> None:
    """Serve a live dashboard of runs (with pause/resume/stop/cancel), a JSON API under
    /api (described at /api/openapi.json) and Prometheus metrics at /metrics.

    Ctrl-C stops it; the crawls it shows are not affected.
    """
    settings = load_settings(db=db, dashboard_host=host, dashboard_port=port, dashboard_token=token)
    # Imported here: the web stack is only loaded by the command that serves it.
    from sitesync.web.server import serve

    def ready(url: str) -> None:
        hint = " (open it once as ?token=TOKEN, or send 'Authorization: Bearer TOKEN')"
        console.print(
            f"dashboard of {redact(settings.db)} at {url}"
            + (hint if settings.dashboard_token else ""),
            soft_wrap=True,
        )

    # uvicorn shuts down gracefully on Ctrl-C, then raises it again: nothing is left to do.
    with contextlib.suppress(KeyboardInterrupt):
        asyncio.run(serve(settings, on_ready=ready))
