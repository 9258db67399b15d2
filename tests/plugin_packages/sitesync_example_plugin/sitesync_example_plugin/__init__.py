"""An example third-party sitesync plugin (the one docs/plugins.md walks through).

It records each HTML page's headings as a record of kind ``headings``, and contributes the
links a page keeps in ``data-href`` attributes (links a script would follow), which the
crawl then scopes and fetches like any other. Which headings, and how many, it reads from
its own table in sitesync.toml::

    [plugins.headings]
    levels = ["h1", "h2", "h3"]
    max_headings = 20
"""

from __future__ import annotations

import hashlib

from pydantic import BaseModel, Field

from sitesync.models import AssetRecord, CrawlArtifact, ProcessedArtifact
from sitesync.plugins import ParsedPage, PluginContext, record_key


class HeadingsConfig(BaseModel):
    """``[plugins.headings]``: checked by sitesync before a crawl starts."""

    levels: list[str] = Field(default=["h1", "h2"], min_length=1)
    max_headings: int = Field(default=50, ge=1)


class HeadingsPlugin:
    """Built once per run by sitesync, from the entry point ``headings``."""

    # sitesync checks [plugins.headings] against this model and hands the result over as
    # ``context.config``; an error names the plugin and the key.
    config_model = HeadingsConfig

    # process() only reads the already parsed page: bounded work, no I/O. Saying so lets it
    # run on the event loop instead of paying a thread hop per page (docs/plugins.md).
    nonblocking = True

    def __init__(self, context: PluginContext) -> None:
        self.config: HeadingsConfig = context.config or HeadingsConfig()

    def process(self, artifact: CrawlArtifact, page: ParsedPage) -> ProcessedArtifact | None:
        if page.tree is None or not 200 <= artifact.status < 300:
            return None  # not HTML (page.tree parses it once, for every plugin), or an error
        found = [node.text(strip=True) for tag in self.config.levels for node in page.tags(tag)]
        headings = found[: self.config.max_headings]
        digest = hashlib.sha256("\n".join(headings).encode()).hexdigest()
        record = AssetRecord(
            key=record_key("headings", artifact.final_url),
            kind="headings",
            url=artifact.final_url,
            content_hash=digest,
            data={"headings": headings},
        )
        links: tuple[str, ...] = ()
        if "data-href" in (artifact.text or ""):  # CSS only where it can find something
            nodes = page.tree.css("[data-href]")
            # Relative or absolute: sitesync resolves them against the page, then scopes them.
            links = tuple(node.attributes.get("data-href") or "" for node in nodes)
        return ProcessedArtifact(records=(record,), links=links)
