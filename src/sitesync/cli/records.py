"""``sitesync history``, ``sitesync diff``, ``sitesync records``: versioned records."""

from __future__ import annotations

import time
from typing import Annotated

import typer
from rich.table import Table

from sitesync.cli._common import format_bytes, plain_console, with_store
from sitesync.cli.options import DbOption, from_flags
from sitesync.cli.output import AsJson, emit
from sitesync.errors import InvalidURL
from sitesync.models import HostAssets, RecordChange, RecordVersion, RunDiff
from sitesync.plugins.base import record_key
from sitesync.store import Store
from sitesync.urls import normalize_url

console = plain_console()


def history_command(
    key: Annotated[
        str, typer.Argument(help="A record key (page:https://a.org/), or a page's URL.")
    ],
    db: DbOption = None,
    as_json: AsJson = False,
) -> None:
    """Show every version of one record (a page, an image, ...).

    For each version: the run that first saw it, its hash, size, and how similar it is to
    the version before (a sudden low score is a page that changed a lot).
    """
    settings = from_flags(db=db)
    key = _as_key(key)
    versions = with_store(settings.db, lambda store: store.record_history(key), migrate=False)
    if as_json:
        emit("history", tuple(versions))
        if not versions:
            raise typer.Exit(1)
        return
    if not versions:
        console.print(f"no record with key {key}")
        raise typer.Exit(1)
    table = Table(title=f"history of {key}")
    for column in ("version", "run", "first seen", "content hash", "similarity", "size"):
        table.add_column(
            column, justify="left" if column in ("first seen", "content hash") else "right"
        )
    for version in versions:
        table.add_row(
            str(version.version),
            str(version.run_id),
            time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(version.created_at)),
            _content(version),
            _similarity(version.similarity),
            _size(version),
        )
    console.print(table)


def diff_command(
    run_a: Annotated[int, typer.Argument(help="The earlier run.")],
    run_b: Annotated[int, typer.Argument(help="The later run.")],
    db: DbOption = None,
    as_json: AsJson = False,
    limit: Annotated[int, typer.Option(help="Rows of each kind of change in the table.")] = 50,
) -> None:
    """List records added, removed and changed between two runs of the same site or scope."""
    settings = from_flags(db=db)

    async def load(store: Store) -> RunDiff:
        await store.get_run(run_a)
        await store.get_run(run_b)  # a wrong id is an error, not an empty diff
        return await store.diff_runs(run_a, run_b)

    diff = with_store(settings.db, load, migrate=False)
    if as_json:
        emit("diff", _diff_json(diff))
        return
    console.print(
        f"run {run_a} -> run {run_b}: {len(diff.added)} added, {len(diff.removed)} removed, "
        f"{len(diff.changed)} changed"
    )
    if diff.added or diff.removed or diff.changed:
        console.print(_diff_table(diff, limit))


def records_command(
    run_id: Annotated[int, typer.Argument(help="The run.")],
    db: DbOption = None,
) -> None:
    """Show what the plugins recorded in one run: records per kind, assets per host."""
    settings = from_flags(db=db)

    async def load(store: Store) -> tuple[list[RecordVersion], list[HostAssets]]:
        await store.get_run(run_id)
        return await store.records_of_run(run_id), await store.run_assets(run_id)

    records, assets = with_store(settings.db, load, migrate=False)
    kinds = Table(title=f"records of run {run_id}")
    for column in ("kind", "records", "new or changed in this run"):
        kinds.add_column(column, justify="right" if column != "kind" else "left")
    for kind in sorted({r.kind for r in records}):
        of_kind = [r for r in records if r.kind == kind]
        fresh = sum(1 for r in of_kind if r.run_id == run_id)
        kinds.add_row(kind, str(len(of_kind)), str(fresh))
    console.print(kinds if records else f"run {run_id} recorded nothing")
    if assets:
        table = Table(title="assets (images, documents) per host")
        for column in ("host", "found", "stored"):
            table.add_column(column, justify="right" if column != "host" else "left")
        for row in assets:
            table.add_row(row.host, str(row.assets_found), str(row.assets_stored))
        console.print(table)


def _as_key(key: str) -> str:
    """A bare URL names its page record."""
    if key.lower().startswith(("http://", "https://")):
        try:
            return record_key("page", normalize_url(key))
        except InvalidURL:
            return key
    return key


def _content(version: RecordVersion) -> str:
    """A version's content hash, or the tombstone of a page found gone, and why."""
    if version.gone:
        return f"gone ({version.data.get('reason', '?')})"
    return version.content_hash[:16]


def _similarity(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}"


def _size(version: RecordVersion) -> str:
    if version.body_size is None:
        return "-"
    size = format_bytes(version.body_size)
    return size if version.body_hash is not None else f"{size} (not stored)"


def _diff_table(diff: RunDiff, limit: int) -> Table:
    table = Table()
    for column in ("change", "kind", "url", "versions", "similarity"):
        table.add_column(column, overflow="fold")
    for label, changes in (
        ("added", diff.added),
        ("removed", diff.removed),
        ("changed", diff.changed),
    ):
        for change in changes[:limit]:
            versions = f"{change.version_a or '-'} -> {change.version_b or '-'}"
            table.add_row(label, change.kind, change.url, versions, _similarity(change.similarity))
        if len(changes) > limit:
            table.add_row(label, "", f"... and {len(changes) - limit} more (--limit)", "", "")
    return table


def _diff_json(diff: RunDiff) -> dict[str, object]:
    def rows(changes: tuple[RecordChange, ...]) -> list[dict[str, object]]:
        return [
            {
                "key": c.key,
                "kind": c.kind,
                "url": c.url,
                "version_a": c.version_a,
                "version_b": c.version_b,
                "similarity": c.similarity,
            }
            for c in changes
        ]

    return {
        "run_a": diff.run_a,
        "run_b": diff.run_b,
        "added": rows(diff.added),
        "removed": rows(diff.removed),
        "changed": rows(diff.changed),
    }
