"""The ``sitesync`` command. One module per command group; errors become one red line."""

from __future__ import annotations

import sys
from typing import Annotated

import typer

from sitesync import __version__, logs
from sitesync.cli import changes as _changes
from sitesync.cli import crawl as _crawl
from sitesync.cli import dashboard as _dashboard
from sitesync.cli import domains as _domains
from sitesync.cli import export as _export
from sitesync.cli import lifecycle as _lifecycle
from sitesync.cli import ops as _ops
from sitesync.cli import plugins as _plugins
from sitesync.cli import records as _records
from sitesync.cli import runs as _runs
from sitesync.cli import scans as _scans
from sitesync.cli import settings as _settings
from sitesync.cli import status as _status
from sitesync.cli import supervise as _supervise
from sitesync.cli import why as _why
from sitesync.cli._common import exit_code_of
from sitesync.cli.help import SitesyncTyper

app = SitesyncTyper(
    name="sitesync",
    help="Crawl websites politely and keep a versioned catalogue of them in sync.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
)


def _print_version(asked: bool) -> None:
    if asked:
        from sitesync.store import schema_versions

        speaks = ", ".join(f"{name} {version}" for name, version in schema_versions().items())
        typer.echo(f"sitesync {__version__} (store schema: {speaks})")
        raise typer.Exit()


@app.callback()
def _options(
    version: Annotated[
        bool,
        typer.Option(
            "--version",
            is_eager=True,
            callback=_print_version,
            help="Print the version and the store schema version it speaks, and exit.",
        ),
    ] = False,
) -> None:
    """Crawl websites politely and keep a versioned catalogue of them in sync."""


app.command("crawl")(_crawl.crawl_command)
app.command("worker")(_crawl.worker_command)
_runs.runs_app.command("cleanup-stale")(_ops.cleanup_stale)
app.add_typer(_runs.runs_app, name="runs")
app.command("show")(_runs.show_command)
app.command("settings")(_settings.settings_command)
app.command("status")(_status.status_command)
app.command("dashboard")(_dashboard.dashboard_command)
app.add_typer(_runs.db_app, name="db")
app.command("migrate")(_runs.migrate_command)
app.add_typer(_ops.claims_app, name="claims")
app.command("pause")(_lifecycle.pause_command)
app.command("resume")(_lifecycle.resume_command)
app.command("stop")(_lifecycle.stop_command)
app.command("cancel")(_lifecycle.cancel_command)
app.command("supervise")(_supervise.supervise_command)
app.add_typer(_domains.domains_app, name="domains")
app.command("scan")(_scans.scan_command)
app.command("schedule")(_scans.schedule_command)
app.command("plugins")(_plugins.plugins_command)
app.command("history")(_records.history_command)
app.command("diff")(_records.diff_command)
app.command("changes")(_changes.changes_command)
app.command("records")(_records.records_command)
app.command("export")(_export.export_command)
app.command("why")(_why.why_command)


def main() -> None:
    # SITESYNC_LOG_LEVEL/FORMAT from the start; -v/-q and sitesync.toml once they are read.
    logs.configure()
    sys.exit(exit_code_of(app))
