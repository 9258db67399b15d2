"""A CPU-heavy synchronous plugin: on every page whose URL contains ``burn`` its ``process``
computes (pure Python, never sleeping) for BURNING_PLUGIN_SECONDS (default 60). Not ``async``,
so sitesync runs it on a plugin thread under ``plugin_timeout_seconds``."""

from __future__ import annotations

import os
import time

from sitesync.models import CrawlArtifact
from sitesync.plugins import ParsedPage, PluginContext


class BurningPlugin:
    def __init__(self, context: PluginContext) -> None:
        self.seconds = float(os.environ.get("BURNING_PLUGIN_SECONDS", "60"))

    def process(self, artifact: CrawlArtifact, page: ParsedPage) -> None:
        if "burn" not in artifact.final_url:
            return
        until = time.perf_counter() + self.seconds
        while time.perf_counter() < until:  # work, not a wait
            pass
