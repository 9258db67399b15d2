"""Export a run's records: JSON Lines, CSV, or WARC for web archivists' tools.

Every format lists the version of each record the run saw. WARC (ISO 28500, written with
``warcio``) holds a ``response`` record per page whose body the store kept (HTTP status line
and headers as received, body as stored), each followed by a ``metadata`` record with what
the plugins made of it; records without a body (links, navigation samples, assets not
downloaded) become ``metadata`` records of their own. ``WARC-Date`` is when sitesync first
saw that content.
"""

from __future__ import annotations

import csv
import enum
import http
import io
import json
from collections.abc import Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import IO, Any

from warcio.statusandheaders import StatusAndHeaders
from warcio.warcwriter import WARCWriter

from sitesync.files import atomic_output, check_output
from sitesync.models import RecordVersion
from sitesync.store.base import Store

#: Headers that described the bytes on the wire, not the (decoded) body that was kept.
_WIRE_HEADERS = frozenset({"content-encoding", "transfer-encoding", "content-length"})
CSV_COLUMNS = (
    "key",
    "kind",
    "url",
    "version",
    "run_id",
    "content_hash",
    "similarity",
    "body_hash",
    "body_size",
    "body_note",
    "created_at",
    "data",
)


class ExportFormat(enum.StrEnum):
    JSONL = "jsonl"
    CSV = "csv"
    WARC = "warc"


async def export_run(
    store: Store, run_id: int, output: Path, fmt: ExportFormat, *, kind: str | None = None
) -> int:
    """Write the run's records to ``output``; how many records were written.

    A WARC file whose name ends in ``.gz`` is gzip-compressed record by record, as
    archiving tools expect.
    """
    check_output(output)  # a bad path is one line before any work, not a traceback after
    await store.get_run(run_id)  # RunNotFound, rather than an empty file, for a wrong id
    records = await store.records_of_run(run_id, kind=kind)
    with atomic_output(output) as stream:
        if fmt is ExportFormat.WARC:
            await _write_warc(store, run_id, records, stream, gzip=output.suffix == ".gz")
        else:
            text = io.TextIOWrapper(stream, encoding="utf-8", newline="")
            (_write_jsonl if fmt is ExportFormat.JSONL else _write_csv)(records, text)
            text.flush()
            text.detach()  # the stream stays open: atomic_output syncs and renames it
    return len(records)


def record_json(record: RecordVersion) -> dict[str, Any]:
    """A record version as a JSON object (the JSONL line; CSV's columns)."""
    return {
        "key": record.key,
        "kind": record.kind,
        "url": record.url,
        "version": record.version,
        "run_id": record.run_id,
        "content_hash": record.content_hash,
        "similarity": record.similarity,
        "body_hash": record.body_hash,
        "body_size": record.body_size,
        "body_note": record.body_note,
        "created_at": record.created_at,
        "data": dict(record.data),
    }


def _write_jsonl(records: list[RecordVersion], out: IO[str]) -> None:
    for record in records:
        out.write(json.dumps(record_json(record), ensure_ascii=False) + "\n")


def _write_csv(records: list[RecordVersion], out: IO[str]) -> None:
    writer = csv.DictWriter(out, fieldnames=CSV_COLUMNS)
    writer.writeheader()
    for record in records:
        row = record_json(record)
        row["data"] = json.dumps(row["data"], ensure_ascii=False, sort_keys=True)
        writer.writerow(row)


async def _write_warc(
    store: Store, run_id: int, records: list[RecordVersion], out: IO[bytes], *, gzip: bool
) -> None:
    writer = WARCWriter(out, gzip=gzip)
    info = {
        "software": "sitesync",
        "format": "WARC File Format 1.1",
        "description": f"sitesync run {run_id}",
    }
    writer.write_record(writer.create_warcinfo_record(f"sitesync-run-{run_id}.warc", info))
    for record in records:
        concurrent_to = None
        if record.kind == "page" and record.body_hash is not None:
            body = await store.get_body(record.body_hash)
            if body is not None:
                response = _response(writer, record, body)
                writer.write_record(response)
                concurrent_to = response.rec_headers.get_header("WARC-Record-ID")
        writer.write_record(_metadata(writer, record, concurrent_to))


def _response(writer: WARCWriter, record: RecordVersion, body: bytes) -> Any:
    status = int(record.data.get("status") or 200)
    try:
        reason = http.HTTPStatus(status).phrase
    except ValueError:
        reason = ""
    headers = _http_headers(record.data.get("headers"), len(body))
    http_headers = StatusAndHeaders(f"{status} {reason}".strip(), headers, protocol="HTTP/1.1")
    return writer.create_warc_record(
        record.url,
        "response",
        payload=io.BytesIO(body),
        length=len(body),
        http_headers=http_headers,
        warc_headers_dict={"WARC-Date": _warc_date(record.created_at)},
    )


def _metadata(writer: WARCWriter, record: RecordVersion, concurrent_to: str | None) -> Any:
    payload = json.dumps(record_json(record), ensure_ascii=False, sort_keys=True).encode()
    warc_headers = {"WARC-Date": _warc_date(record.created_at)}
    if concurrent_to is not None:
        warc_headers["WARC-Concurrent-To"] = concurrent_to
    return writer.create_warc_record(
        record.url,
        "metadata",
        payload=io.BytesIO(payload),
        length=len(payload),
        warc_content_type="application/json",
        warc_headers_dict=warc_headers,
    )


def _http_headers(headers: Any, size: int) -> list[tuple[str, str]]:
    kept = [
        (str(name), str(value))
        for name, value in (headers.items() if isinstance(headers, Mapping) else ())
        if str(name).lower() not in _WIRE_HEADERS
    ]
    kept.append(("Content-Length", str(size)))
    return kept


def _warc_date(timestamp: float) -> str:
    return datetime.fromtimestamp(timestamp, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
