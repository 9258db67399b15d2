"""``sitesync dashboard``: the web dashboard, its JSON API and Prometheus metrics."""

from __future__ import annotations

import asyncio
import contextlib

from sitesync.cli._common import plain_console
from sitesync.cli.options import DASHBOARD, Flags, from_flags, settings_flags
from sitesync.redact import redact

console = plain_console(stderr=True)


@settings_flags(*DASHBOARD)
def dashboard_command(flags: Flags) -> None:
    """Serve a live dashboard of runs (with pause/resume/stop/cancel), a JSON API under
    /api (described at /api/openapi.json) and Prometheus metrics at /metrics.

    Ctrl-C stops it; the crawls it shows are not affected.
    """
    settings = from_flags(**flags)
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
