"""The read model: what ``sitesync status``, the dashboard and its JSON API show of a store.

It sits below both faces: the CLI and the web app import it, it imports neither, so the
terminal needs no web stack and the two never disagree.
"""

from __future__ import annotations

from sitesync.readmodel.idle import IdleFacts, gather_idle_facts, idle_reasons
from sitesync.readmodel.overview import Action, Overview, OverviewOptions

__all__ = [
    "Action",
    "IdleFacts",
    "Overview",
    "OverviewOptions",
    "gather_idle_facts",
    "idle_reasons",
]
