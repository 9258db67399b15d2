"""``sitesync export``: a run's records as JSON Lines, CSV or WARC."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from sitesync.cli._common import plain_console, with_store
from sitesync.cli.options import DbOption, from_flags
from sitesync.export import ExportFormat, export_run

console = plain_console(stderr=True)


def export_command(
    run_id: Annotated[int, typer.Argument(help="The run to export.")],
    output: Annotated[Path, typer.Option("--output", "-o", help="The file to write.")],
    fmt: Annotated[
        ExportFormat, typer.Option("--format", "-f", help="jsonl, csv, or warc (.warc.gz: gzip).")
    ] = ExportFormat.JSONL,
    kind: Annotated[
        str | None, typer.Option(help="Only records of this kind (page, links, image, ...).")
    ] = None,
    db: DbOption = None,
) -> None:
    """Write a run's records to a JSON Lines, CSV or WARC file.

    JSON Lines and CSV are for analysis; WARC (each stored page body as a response record)
    opens in web archivists' tools.
    """
    settings = from_flags(db=db)
    count = with_store(
        settings.db, lambda store: export_run(store, run_id, output, fmt, kind=kind), migrate=False
    )
    console.print(f"wrote {count} records of run {run_id} to {output} ({fmt.value})")
