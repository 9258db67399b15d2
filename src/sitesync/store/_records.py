"""What both backends decide alike about a record version: its body, its data, its similarity.

The backends differ only in SQL and in sync/async; everything that is a decision (keep the
body or not, how far a version moved from the previous one) lives here once.
"""

from __future__ import annotations

import hashlib
import re
import zlib
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from sitesync.config import setting_default
from sitesync.models import (
    AssetRecord,
    HostAssets,
    RecordChange,
    RecordVersion,
    canonical_json,
)

DEFAULT_MAX_STORED_BODY_BYTES: int = setting_default("max_stored_body_bytes")
COMPRESSION = "zlib"
#: Record kinds that move the per-run-and-host asset counters.
ASSET_KINDS = frozenset({"image", "document"})

# Similarity reads at most this much of a body and this many words: cheap and bounded even
# for a huge page, and a defacement shows in the first few thousand words anyway.
_MAX_COMPARED_BYTES = 512 * 1024
_MAX_COMPARED_WORDS = 20_000
_SHINGLE = 3
# Markup is stripped by a scan, not by one pattern: ``<[^>]*>`` (or a ``<script`` that is
# never closed) backtracks over the rest of the body for every ``<``: quadratic in it.
_RAW_TEXT_OPEN = re.compile(r"<(script|style)\b", re.I)
_RAW_TEXT_CLOSE = {
    "script": re.compile(r"</script\s*>", re.I),
    "style": re.compile(r"</style\s*>", re.I),
}
_WORD = re.compile(r"\w+")


class Row(Protocol):
    """A result row by column name: ``sqlite3.Row`` or psycopg's ``DictRow``."""

    def __getitem__(self, key: str, /) -> Any: ...


@dataclass(frozen=True, slots=True)
class BodyPlan:
    """What becomes of a record's body: kept (hash + compressed bytes) or only noted."""

    body_hash: str | None = None
    size: int | None = None
    note: str | None = None


def plan_body(record: AssetRecord, cap: int) -> BodyPlan:
    body = record.body
    if body is None:
        return BodyPlan()
    if len(body) > cap:
        note = f"not stored: {len(body)} bytes, over max_stored_body_bytes ({cap})"
        return BodyPlan(size=len(body), note=note)
    # The plugin's own digest when it made one (the page plugin's content hash is the
    # body's): a page's body is hashed once, not again here.
    digest = record.body_hash or hashlib.sha256(body).hexdigest()
    return BodyPlan(body_hash=digest, size=len(body))


def compress(body: bytes) -> bytes:
    # Level 1: a body is compressed on the crawl's hot path (once per new content), and
    # level 6 takes about 2.5 times as long for about 13 % less space on real HTML.
    # zlib releases the GIL meanwhile: on SQLite's thread this overlaps the crawl.
    return zlib.compress(body, 1)


def body_params(plan: BodyPlan, body: bytes, now: float) -> dict[str, Any]:
    """Parameters of ``insert_body``: the body, compressed, under its sha256."""
    return {
        "content_hash": plan.body_hash,
        "size": plan.size,
        "compression": COMPRESSION,
        "data": compress(body),
        "now": now,
    }


def decompress(compression: str, data: bytes) -> bytes:
    if compression != COMPRESSION:
        raise ValueError(f"unknown body compression {compression!r}")
    return zlib.decompress(data)


def data_json(data: Mapping[str, Any]) -> str:
    """Canonical JSON of a record's data (sorted keys), as stored and compared.

    NUL becomes U+FFFD: PostgreSQL's jsonb refuses it, and both backends must agree.
    """
    return _storable(canonical_json(data))


def record_json(record: AssetRecord) -> str:
    """``data_json`` of a record's data, serialized once: the plugin's own canonical JSON
    when it made one to hash (the built-ins' data records), else made here."""
    text = record.data_json
    return data_json(record.data) if text is None else _storable(text)


def _storable(text: str) -> str:
    return text.replace("\\u0000", "\\ufffd") if "\\u0000" in text else text


def similarity(
    record: AssetRecord,
    data: str,
    previous_body: bytes | None,
    previous_data: str,
    previous_had_body: bool,
) -> float | None:
    """How much of the previous version is still there, 0..1 (Jaccard of word 3-shingles).

    Bodies are compared when the record has one (tags, scripts and styles stripped); records
    without bodies compare their data. None when the previous body was not kept.
    """
    if record.body is not None:
        if previous_body is None:
            return None
        return jaccard(_shingles(previous_body), _shingles(record.body))
    if previous_had_body:
        return None
    return jaccard(_shingles(previous_data.encode()), _shingles(data.encode()))


def jaccard(a: set[tuple[str, ...]], b: set[tuple[str, ...]]) -> float:
    if not a and not b:
        return 1.0
    return round(len(a & b) / len(a | b), 4)


def _shingles(content: bytes) -> set[tuple[str, ...]]:
    text = content[:_MAX_COMPARED_BYTES].decode("utf-8", errors="replace")
    words = _WORD.findall(without_markup(text).lower())[:_MAX_COMPARED_WORDS]
    if len(words) < _SHINGLE:
        return {tuple(words)} if words else set()
    return set(zip(*(words[i:] for i in range(_SHINGLE)), strict=False))


def without_markup(text: str) -> str:
    """``text`` with each tag, comment, script and style replaced by a space, in linear time.

    Reads as ``<(script|style)\\b.*?</\\1\\s*>|<!--.*?-->|<[^>]*>`` replaced by a space would,
    but a closing that was looked for once and is not there is never looked for again.
    """
    parts: list[str] = []
    position = 0
    unclosed: set[str] = set()  # closings known to be absent from here on
    while (start := text.find("<", position)) >= 0:
        parts.append(text[position:start])
        end = _markup_end(text, start, unclosed)
        if end is None:  # no ">" after it: nothing from here on is markup
            position = start
            break
        parts.append(" ")
        position = end
    parts.append(text[position:])
    return "".join(parts)


def _markup_end(text: str, start: int, unclosed: set[str]) -> int | None:
    """Where the markup that starts at ``text[start]`` (a ``<``) ends, or None when no
    ``>`` follows it at all."""
    raw = _RAW_TEXT_OPEN.match(text, start)
    if raw is not None:
        name = raw.group(1).lower()
        if name not in unclosed:
            closing = _RAW_TEXT_CLOSE[name].search(text, raw.end())
            if closing is not None:
                return closing.end()
            unclosed.add(name)
    if text.startswith("<!--", start) and "-->" not in unclosed:
        comment_end = text.find("-->", start + 4)
        if comment_end >= 0:
            return comment_end + 3
        unclosed.add("-->")
    if ">" in unclosed:
        return None
    tag_end = text.find(">", start)
    if tag_end < 0:
        unclosed.add(">")
        return None
    return tag_end + 1


def record_params(record: AssetRecord, run_id: int, now: float) -> dict[str, Any]:
    return {
        "key": record.key,
        "kind": record.kind,
        "url": record.url,
        "run_id": run_id,
        "now": now,
    }


def version_params(
    record_id: int,
    version: int,
    run_id: int,
    record: AssetRecord,
    plan: BodyPlan,
    score: float | None,
    data: str,
    now: float,
) -> dict[str, Any]:
    """Parameters of ``insert_version`` and ``update_record_latest`` (both backends)."""
    return {
        "record_id": record_id,
        "version": version,
        "run_id": run_id,
        "content_hash": record.content_hash,
        "similarity": score,
        "body_hash": plan.body_hash,
        "body_size": plan.size,
        "body_note": plan.note,
        "data": data,
        "now": now,
    }


def version_from_row(row: Row, data: Mapping[str, Any]) -> RecordVersion:
    """A RecordVersion from a joined records/record_versions row (data already decoded)."""
    return RecordVersion(
        key=row["key"],
        kind=row["kind"],
        url=row["url"],
        version=row["version"],
        run_id=row["run_id"],
        content_hash=row["content_hash"],
        created_at=row["created_at"],
        similarity=row["similarity"],
        body_hash=row["body_hash"],
        body_size=row["body_size"],
        body_note=row["body_note"],
        data=data,
    )


def change_from_row(row: Row) -> RecordChange:
    return RecordChange(
        key=row["key"],
        kind=row["kind"],
        url=row["url"],
        version_a=row["version_a"],
        version_b=row["version_b"],
        similarity=row["similarity"],
    )


def one_sided_change(row: Row, *, side: str) -> RecordChange:
    """A key only one run of a diff saw (``side`` "a": removed; "b": added)."""
    version = row["version"]
    return RecordChange(
        key=row["key"],
        kind=row["kind"],
        url=row["url"],
        version_a=version if side == "a" else None,
        version_b=version if side == "b" else None,
    )


def assets_from_row(row: Row) -> HostAssets:
    return HostAssets(
        host=row["host"], assets_found=row["assets_found"], assets_stored=row["assets_stored"]
    )


@dataclass(slots=True)
class AssetTally:
    """Per report: distinct assets newly seen in the run, and newly stored, for its host."""

    found: int = 0
    stored: int = 0

    def count(self, record: AssetRecord, *, newly_seen: bool, newly_stored: bool) -> None:
        if record.kind in ASSET_KINDS:
            self.found += newly_seen
            self.stored += newly_stored
