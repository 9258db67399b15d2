"""The dashboard: a JSON API, a live page and Prometheus metrics over one store.

``sitesync dashboard`` serves :func:`create_app`. What it shows comes from
:mod:`sitesync.readmodel`, which ``sitesync status`` prints too.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from sitesync.readmodel import (
    Action,
    IdleFacts,
    Overview,
    OverviewOptions,
    gather_idle_facts,
    idle_reasons,
)

if TYPE_CHECKING:
    from sitesync.web.app import create_app

__all__ = [
    "Action",
    "IdleFacts",
    "Overview",
    "OverviewOptions",
    "create_app",
    "gather_idle_facts",
    "idle_reasons",
]


def __getattr__(name: str) -> Any:
    # The web stack (FastAPI, Starlette) loads only when an app is built: every other
    # command, `sitesync status` included, starts without paying for it.
    if name == "create_app":
        from sitesync.web.app import create_app

        return create_app
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
