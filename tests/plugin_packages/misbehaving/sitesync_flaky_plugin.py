"""A plugin that fails on some pages: those pages record the failure, the crawl goes on."""

from __future__ import annotations

from sitesync.models import AssetRecord, CrawlArtifact
from sitesync.plugins import ParsedPage, PluginContext, record_key


class FlakyPlugin:
    def __init__(self, context: PluginContext) -> None:
        pass

    def process(self, artifact: CrawlArtifact, page: ParsedPage) -> list[AssetRecord]:
        if "boom" in artifact.final_url:
            raise RuntimeError(f"cannot make sense of {artifact.final_url}")
        url = artifact.final_url
        return [AssetRecord(key=record_key("flaky", url), kind="flaky", url=url, content_hash="1")]
