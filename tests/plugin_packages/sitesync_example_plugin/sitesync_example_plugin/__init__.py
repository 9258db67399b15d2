"""An example third-party sitesync plugin (the one docs/plugins.md walks through).

It records each HTML page's ``<h1>``/``<h2>`` headings as a record of kind ``headings``, and
contributes the links a page keeps in ``data-href`` attributes (links a script would follow),
which the crawl then scopes and fetches like any other.
"""

from __future__ import annotations

import hashlib

from sitesync.models import AssetRecord, CrawlArtifact, ProcessedArtifact
from sitesync.plugins import ParsedPage, PluginContext, record_key


class HeadingsPlugin:
    """Built once per run by sitesync, from the entry point ``headings``."""

    # process() only reads the already parsed page: bounded work, no I/O. Saying so lets it
    # run on the event loop instead of paying a thread hop per page (docs/plugins.md).
    nonblocking = True

    def __init__(self, context: PluginContext) -> None:
        self.max_headings = 50

    def process(self, artifact: CrawlArtifact, page: ParsedPage) -> ProcessedArtifact | None:
        if page.tree is None or not 200 <= artifact.status < 300:
            return None  # not HTML (page.tree parses it once, for every plugin), or an error
        found = [node.text(strip=True) for tag in ("h1", "h2") for node in page.tags(tag)]
        headings = found[: self.max_headings]
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
