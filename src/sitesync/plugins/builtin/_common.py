"""Small helpers the built-in plugins share (and nothing else needs)."""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from typing import Any

from sitesync.models import AssetRecord, CrawlArtifact, canonical_json
from sitesync.plugins.base import ParsedPage, record_key

IMAGE_EXTENSIONS = (
    ".png",
    ".jpg",
    ".jpeg",
    ".gif",
    ".webp",
    ".svg",
    ".avif",
    ".bmp",
    ".ico",
    ".tif",
    ".tiff",
)
DOCUMENT_EXTENSIONS = (
    ".pdf",
    ".doc",
    ".docx",
    ".xls",
    ".xlsx",
    ".ppt",
    ".pptx",
    ".odt",
    ".ods",
    ".odp",
    ".rtf",
    ".csv",
    ".epub",
)


def host_of(url: str) -> str:
    """``host[:port]`` of a normalized URL (cheaper than parsing it again)."""
    start = url.find("//") + 2
    end = url.find("/", start)
    return url[start:] if end == -1 else url[start:end]


class SiteTest:
    """``same_site(host, ...)`` for the links of one page, remembered per host."""

    __slots__ = ("_host", "_origin", "_verdicts")

    def __init__(self, page_url: str) -> None:
        self._host = host_of(page_url)
        self._origin = page_url[: page_url.find("/", page_url.find("//") + 2) + 1]
        self._verdicts: dict[str, bool] = {}

    def internal(self, url: str) -> bool:
        if url.startswith(self._origin):  # the common case: a link to the same host
            return True
        host = host_of(url)
        verdict = self._verdicts.get(host)
        if verdict is None:
            verdict = self._verdicts[host] = same_site(self._host, host)
        return verdict


def same_site(host: str, other: str) -> bool:
    """Equal but for ``www.`` and port, or one a subdomain of the other: one site."""
    a = host.rsplit(":", 1)[0].removeprefix("www.")
    b = other.rsplit(":", 1)[0].removeprefix("www.")
    return a == b or a.endswith("." + b) or b.endswith("." + a)


def extension(url: str) -> str:
    """The lower-case file extension of a URL's path (``.pdf``), or ``""``."""
    path = url.split("?", 1)[0]
    name = path[path.rfind("/") + 1 :]
    dot = name.rfind(".")
    return name[dot:].lower() if dot > 0 else ""


def asset_kind(url: str) -> str | None:
    """ "image" or "document" by the URL's extension, else None: the cheap test that runs
    on every link of every page (most have no extension of interest)."""
    end = url.find("?")
    tail = (url if end == -1 else url[:end])[-6:]
    if "." not in tail:
        return None
    tail = tail.lower()
    if tail.endswith(DOCUMENT_EXTENSIONS):
        return "document"
    return "image" if tail.endswith(IMAGE_EXTENSIONS) else None


def word_count(text: str) -> int:
    """Whitespace-separated words, as ``len(text.split())`` counts them for ASCII
    whitespace, in half the time: no string per word, just where words start."""
    marks = text.encode("utf-8", "surrogatepass").translate(_WORD_MARKS)
    return marks.count(b"\x00\x01") + (marks[:1] == b"\x01")


_WORD_MARKS = bytes(0 if byte in b" \t\n\r\x0b\x0c" else 1 for byte in range(256))


def data_hash(data: Mapping[str, Any]) -> str:
    """A content hash of a record that has no body: sha256 of its canonical JSON."""
    return hashlib.sha256(canonical_json(data).encode()).hexdigest()


def data_record(kind: str, url: str, data: Mapping[str, Any]) -> AssetRecord:
    """A record without a body, its content hash that of its data (``data_hash``).

    The canonical JSON hashed goes with the record: the store keeps it as it is instead of
    serializing the data a second time.
    """
    text = canonical_json(data)
    digest = hashlib.sha256(text.encode()).hexdigest()
    key = record_key(kind, url)
    return AssetRecord(key=key, kind=kind, url=url, content_hash=digest, data=data, data_json=text)


def is_answered_html(artifact: CrawlArtifact, page: ParsedPage) -> bool:
    """A 2xx response whose body is HTML: the pages the HTML plugins read.

    The status is checked first, so an error page is never parsed just to be ignored.
    """
    return 200 <= artifact.status < 300 and page.tree is not None
