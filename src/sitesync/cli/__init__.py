"""The ``sitesync`` command. One module per command group; errors become one red line."""

from __future__ import annotations

import logging
import sys

import typer
from rich.console import Console

from sitesync.cli import crawl as _crawl
from sitesync.cli import runs as _runs
from sitesync.errors import SitesyncError

app = typer.Typer(
    name="sitesync",
    help="Crawl websites politely and keep a versioned catalogue of them in sync.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
)
app.command("crawl")(_crawl.crawl_command)
app.command("runs")(_runs.runs_command)
app.command("show")(_runs.show_command)
app.add_typer(_runs.db_app, name="db")

err_console = Console(stderr=True)


def main() -> None:
    logging.basicConfig(
        level=logging.WARNING, format="%(asctime)s %(levelname)s %(name)s: %(message)s"
    )
    try:
        app()
    except SitesyncError as exc:
        err_console.print(f"[bold red]error:[/] {exc}", highlight=False, soft_wrap=True)
        sys.exit(1)
