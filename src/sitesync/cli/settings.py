"""``sitesync settings RUN``: a run's own settings, and the one way to change them.

A run records the settings it is created with (:mod:`sitesync.run_settings`), and every
process that works on it obeys them; ``--set NAME=VALUE`` changes one of its politeness
settings, for every worker of the fleet within ``status_poll_seconds``, and records the
change with its time.
"""

from __future__ import annotations

import datetime
from typing import Annotated

import typer
from rich.table import Table

from sitesync.cli._common import plain_console, with_store
from sitesync.cli.options import DbOption, from_flags
from sitesync.cli.output import AsJson, RunSettings, emit
from sitesync.models import Run, SettingChange
from sitesync.run_settings import LIVE, parse_changes, redacted, shown_settings
from sitesync.store import Store

console = plain_console()


def settings_command(
    run_id: Annotated[int, typer.Argument(help="The run whose settings to show or change.")],
    set_: Annotated[
        list[str] | None,
        typer.Option(
            "--set",
            metavar="NAME=VALUE",
            help="Change one of the run's politeness settings (repeatable): "
            + ", ".join(sorted(LIVE))
            + ".",
        ),
    ] = None,
    db: DbOption = None,
    as_json: AsJson = False,
) -> None:
    """Show the settings a run was created with and every change since, or change some.

    Every process that works on a run obeys its settings, whatever its own environment
    or sitesync.toml say. Only politeness changes while a run goes on (every worker
    applies it within status_poll_seconds); the others are fixed for the life of the run.
    """
    settings = from_flags(db=db)

    async def work(store: Store) -> tuple[Run, list[SettingChange]]:
        run = await store.get_run(run_id)
        if set_:
            run = await store.change_run_settings(run_id, parse_changes(run, set_))
        return run, await store.list_setting_changes(run_id)

    run, changes = with_store(settings.db, work, migrate=bool(set_))
    if as_json:
        stored = redacted(run.settings)  # credentials masked
        emit("settings", RunSettings(run.id, stored, run.settings_version, tuple(changes)))
        return
    for table in settings_tables(run, changes):
        console.print(table)


def settings_tables(run: Run, changes: list[SettingChange]) -> list[Table]:
    """The run's settings and their changes, as ``settings`` and ``show`` print them."""
    if run.settings is None:
        console.print(
            f"run {run.id} was created before runs kept their settings: each process that "
            "works on it uses its own"
        )
        return []
    table = Table(title=f"settings of run {run.id} (version {run.settings_version})")
    for column in ("setting", "value", "kind"):
        table.add_column(column, overflow="fold")
    for name, value, group in shown_settings(run):
        kind = "changeable" if name in LIVE else "fixed"
        table.add_row(name, value, f"{group}, {kind}")
    tables = [table]
    if changes:
        changed = Table(title=f"changes to the settings of run {run.id}")
        for column in ("when (UTC)", "version", "setting", "from", "to"):
            changed.add_column(column)
        for change in changes:
            when = datetime.datetime.fromtimestamp(change.changed_at, tz=datetime.UTC)
            changed.add_row(
                when.strftime("%Y-%m-%d %H:%M:%S"),
                str(change.version),
                change.name,
                str(change.old),
                str(change.new),
            )
        tables.append(changed)
    return tables
