"""A CPU-heavy synchronous plugin: on every page whose URL contains ``burn`` its ``process``
computes for BURNING_PLUGIN_SECONDS (default 60) without sleeping, as a plugin whose heavy
work is in a C extension does (here sha256 over 1 MB at a time, which releases the GIL, as
lexbor, zlib and hashlib do). Not ``async``, so sitesync runs it on a plugin thread under
``plugin_timeout_seconds``."""

from __future__ import annotations

import hashlib
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
        block = bytes(1024 * 1024)
        while time.perf_counter() < until:  # work, not a wait
            hashlib.sha256(block).digest()
