"""A CPU-heavy plugin: its ``process`` is ``async`` and computes for BUSY_PLUGIN_SECONDS
(default 0.02) on every page without ever awaiting, so it holds the crawler's event loop."""

from __future__ import annotations

import os
import time

from sitesync.models import CrawlArtifact
from sitesync.plugins import ParsedPage, PluginContext


class BusyPlugin:
    def __init__(self, context: PluginContext) -> None:
        self.seconds = float(os.environ.get("BUSY_PLUGIN_SECONDS", "0.02"))

    async def process(self, artifact: CrawlArtifact, page: ParsedPage) -> None:
        until = time.perf_counter() + self.seconds
        while time.perf_counter() < until:  # work, not a wait: nothing else runs meanwhile
            pass
