"""Built-in plugin ``page``: one record of kind ``page`` per successfully fetched URL.

The record keeps the body (content-addressed and compressed by the store, under
``max_stored_body_bytes``) and, for HTML, the page's title, description, canonical link,
language and word count. Its content hash is the sha256 of the body, so a new version is
written exactly when the bytes changed.
"""

from __future__ import annotations

import hashlib
from typing import Any

from sitesync.models import AssetRecord, CrawlArtifact, FetchOutcome
from sitesync.plugins.base import ParsedPage, PluginContext, record_key
from sitesync.plugins.builtin._common import word_count

KIND = "page"
_INVISIBLE = ("script", "style")  # in the body's text, never seen by a reader


class PageMetadataPlugin:
    def __init__(self, context: PluginContext) -> None:
        pass

    def process(self, artifact: CrawlArtifact, page: ParsedPage) -> tuple[AssetRecord, ...]:
        if not 200 <= artifact.status < 300 or artifact.outcome != FetchOutcome.SUCCESS:
            return ()  # an error page is not the page's content: no record, no sighting
        digest = hashlib.sha256(artifact.body).hexdigest()
        data: dict[str, Any] = {
            "status": artifact.status,
            "content_type": artifact.headers.get("content-type"),
            "content_hash": digest,
            "size": len(artifact.body),
            "headers": dict(artifact.headers),  # for archives (export --format warc)
        }
        tree = page.tree
        if tree is not None:
            data.update(_html_metadata(tree, page, artifact))
        url = artifact.final_url
        record = AssetRecord(
            key=record_key(KIND, url),
            kind=KIND,
            url=url,
            content_hash=digest,
            data=data,
            body=artifact.body,
            body_hash=digest,  # the store keeps the body under it without hashing it again
        )
        return (record,)


def _html_metadata(tree: Any, page: ParsedPage, artifact: CrawlArtifact) -> dict[str, Any]:
    # Elements by tag name, not CSS: see ParsedPage.tags on why.
    titles = page.tags("title")
    root = tree.root
    language = root.attributes.get("lang") if root is not None else None
    return {
        "title": " ".join(titles[0].text().split()) if titles else None,
        "description": _description(page.tags("meta")),
        "canonical": _canonical(page),
        "language": language or artifact.headers.get("content-language"),
        "word_count": _word_count(tree, page),
    }


def _description(metas: list[Any]) -> str | None:
    fallback = None
    for meta in metas:
        attributes = meta.attributes
        name = (attributes.get("name") or attributes.get("property") or "").lower()
        if name == "description":
            return " ".join((attributes.get("content") or "").split())
        if name == "og:description" and fallback is None:
            fallback = " ".join((attributes.get("content") or "").split())
    return fallback


def _canonical(page: ParsedPage) -> str | None:
    for link in page.tags("link"):
        attributes = link.attributes
        if "canonical" in (attributes.get("rel") or "").lower().split():
            return page.resolve(attributes.get("href"))
    return None


def _word_count(tree: Any, page: ParsedPage) -> int:
    """Words a reader sees: the body's text, less the scripts and styles in it."""
    body = tree.body
    if body is None:
        return 0
    words = word_count(body.text(separator=" "))
    fates: dict[int, bool] = {}
    for tag in _INVISIBLE:
        for node in page.tags(tag):
            if _subtracted(node, fates):
                words -= word_count(node.text(separator=" "))
    return max(0, words)


def _subtracted(node: Any, fates: dict[int, bool]) -> bool:
    """Whether a script's or style's text is subtracted from the body's: it is in the body,
    and not inside another script or style (whose text, subtracted, holds it already).

    ``fates`` remembers, per element, the answer for everything below it: each element is
    walked through once per page, so a page of deeply nested elements with a script at
    every level costs its size, not its depth times its scripts.
    """
    passed: list[int] = []
    parent = node.parent
    fate = False
    while parent is not None:
        key = parent.mem_id
        if key in fates:
            fate = fates[key]
            break
        passed.append(key)
        if parent.tag in _INVISIBLE or parent.tag in ("body", "head"):
            fate = parent.tag == "body"
            break
        parent = parent.parent
    for key in passed:
        fates[key] = fate
    return fate
