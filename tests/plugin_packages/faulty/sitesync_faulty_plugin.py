"""Plugins that go wrong on pages whose URL contains ``/fault``, as FAULTY_PLUGIN_MODE says."""

from __future__ import annotations

import asyncio
import os
import time

from sitesync.models import AssetRecord, CrawlArtifact
from sitesync.plugins import ParsedPage, PluginContext, record_key


def _mode(artifact: CrawlArtifact) -> str:
    return os.environ.get("FAULTY_PLUGIN_MODE", "") if "/fault" in artifact.final_url else ""


def _record(url: str, data: dict[str, object] | None = None) -> AssetRecord:
    return AssetRecord(
        key=record_key("faulty", url), kind="faulty", url=url, content_hash="1", data=data or {}
    )


class FaultyPlugin:
    """Synchronous: raises, blocks the thread it runs on, or returns an oversized record."""

    def __init__(self, context: PluginContext) -> None:
        pass

    def process(self, artifact: CrawlArtifact, page: ParsedPage) -> list[AssetRecord]:
        mode = _mode(artifact)
        if mode == "raise":
            raise RuntimeError(f"cannot make sense of {artifact.final_url}")
        if mode == "block":
            time.sleep(float(os.environ.get("FAULTY_PLUGIN_SECONDS", "25")))
        if mode == "bloat":
            size = int(os.environ.get("FAULTY_PLUGIN_BYTES", str(2 * 1024 * 1024)))
            return [_record(artifact.final_url, {"blob": "x" * size})]
        return [_record(artifact.final_url)]


class AsyncFaultyPlugin:
    """Asynchronous: raises, or awaits something that never happens."""

    def __init__(self, context: PluginContext) -> None:
        pass

    async def process(self, artifact: CrawlArtifact, page: ParsedPage) -> list[AssetRecord]:
        mode = _mode(artifact)
        if mode == "raise":
            raise RuntimeError(f"cannot make sense of {artifact.final_url}")
        if mode == "hang":
            await asyncio.Event().wait()
        return [_record(artifact.final_url)]
