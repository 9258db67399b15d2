"""``--json``: what every command that reads prints for scripts and monitors.

Each command prints one JSON document, ``{"schema": "sitesync.COMMAND", "version": N,
"data": ...}``. ``data`` has one documented shape per command (:data:`SHAPES`, whose JSON
Schemas docs/json.md shows and tests/docs checks); ``version`` grows when a shape changes
in a way a reader could notice (a field removed or retyped; new fields do not count).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Annotated, Any

import typer
from pydantic import TypeAdapter

from sitesync.models import (
    ChangeReport,
    Domain,
    DomainScan,
    RecordVersion,
    Schedule,
    SettingChange,
)
from sitesync.readmodel.schema import RunDetail, RunSummary, StatusOverview

#: The ``--json`` option of every command that reads.
AsJson = Annotated[
    bool, typer.Option("--json", help="Print one JSON document (docs/json.md) instead of tables.")
]

#: The version of every shape below (one number for all: a reader checks one field).
VERSION = 1


@dataclass(frozen=True, slots=True)
class ShownRun:
    """``sitesync show RUN --json``: the run as the API's run page has it, its settings
    (None for a run created before runs kept them) and every change to them."""

    detail: RunDetail
    settings: dict[str, Any] | None
    settings_version: int
    setting_changes: tuple[SettingChange, ...]
    failed: tuple[tuple[str, str], ...]  # (url, last error) of up to --errors failed URLs


@dataclass(frozen=True, slots=True)
class StatusCheck:
    """``sitesync status --json``: the overview, and what ``--check`` judges of it."""

    overview: StatusOverview
    problems: tuple[str, ...]  # one line each; empty when every active run is fine


@dataclass(frozen=True, slots=True)
class ShownDomain:
    domain: Domain
    scans: tuple[DomainScan, ...]
    # The change reports of its last scans (newest first), of its own and canonical host.
    changes: tuple[ChangeReport, ...] = ()


@dataclass(frozen=True, slots=True)
class PluginRow:
    name: str
    target: str
    distribution: str | None
    builtin: bool
    status: str  # loaded, disabled or skipped
    error: str | None


@dataclass(frozen=True, slots=True)
class RunSettings:
    """``sitesync settings RUN --json``."""

    run_id: int
    settings: dict[str, Any] | None
    settings_version: int
    changes: tuple[SettingChange, ...]


#: The shape of ``data`` for each command.
SHAPES: dict[str, Any] = {
    "runs": tuple[RunSummary, ...],
    "show": ShownRun,
    "status": StatusCheck,
    "settings": RunSettings,
    "domains.list": tuple[Domain, ...],
    "domains.show": ShownDomain,
    "schedule.list": tuple[Schedule, ...],
    "plugins": tuple[PluginRow, ...],
    "history": tuple[RecordVersion, ...],
    "diff": dict[str, Any],
    "changes": ChangeReport,
    "why": dict[str, Any],
}


def document(command: str, data: Any) -> dict[str, Any]:
    """The JSON document of ``command`` for ``data`` (checked against its shape)."""
    shaped = TypeAdapter(SHAPES[command]).dump_python(data, mode="json")
    return {"schema": f"sitesync.{command}", "version": VERSION, "data": shaped}


def emit(command: str, data: Any) -> None:
    typer.echo(json.dumps(document(command, data), indent=2, ensure_ascii=False))


def json_schema(command: str) -> dict[str, Any]:
    """The JSON Schema of ``command``'s document (docs/json.md, the tests)."""
    shape = TypeAdapter(SHAPES[command]).json_schema()
    definitions = shape.pop("$defs", {})
    schema: dict[str, Any] = {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": f"sitesync {command.replace('.', ' ')} --json",
        "type": "object",
        "required": ["schema", "version", "data"],
        "properties": {
            "schema": {"const": f"sitesync.{command}"},
            "version": {"const": VERSION},
            "data": shape,
        },
    }
    if definitions:
        schema["$defs"] = definitions
    return schema
