"""``sitesync scan`` and ``sitesync schedule``: scans of a scope's registered domains, now
or on a cadence, each created with the run settings its schedule recorded."""

from __future__ import annotations

from dataclasses import replace
from typing import Annotated

import typer
from rich.table import Table

from sitesync.cli._common import format_time, plain_console, styled, with_store
from sitesync.cli.options import SCAN, SCHEDULE, Flags, from_flags, settings_flags
from sitesync.cli.output import AsJson, emit
from sitesync.config import Settings
from sitesync.errors import ConfigError, ExitCode, ScanConflict
from sitesync.models import Run, Schedule
from sitesync.run_settings import given_by_flags, redacted, snapshot
from sitesync.runs.request import CrawlRequest, plugin_names
from sitesync.runs.scans import schedule_scan, start_scan
from sitesync.store import Store

#: Exit code of ``sitesync scan`` when the scope already has an active run.
EXIT_SCAN_CONFLICT = ExitCode.SCAN_CONFLICT

console = plain_console()
err_console = plain_console(stderr=True)


# -- sitesync scan ------------------------------------------------------------------------


@settings_flags(*SCAN)
def scan_command(
    flags: Flags,
    scope: Annotated[str, typer.Argument(help="The scope to scan.")],
    now: Annotated[
        bool, typer.Option("--now", help="Also crawl it in this process until it ends.")
    ] = False,
    progress: Annotated[bool, typer.Option(help="With --now: show a live progress bar.")] = True,
) -> None:
    """Start a scan of a scope's active domains: a queued run that 'sitesync supervise' (or
    'sitesync worker --run ID') crawls, or this process with --now.

    A scope has at most one active run: if it has one, this names it and exits with code 3.
    """
    settings = from_flags(**flags)
    try:
        run = with_store(settings.db, lambda store: _start_scan(store, scope, settings))
    except ScanConflict as exc:
        err_console.print(
            styled("error:", "bold red"),
            f"scope {scope} already has an active run: {exc.run_id}",
            soft_wrap=True,
        )
        raise typer.Exit(EXIT_SCAN_CONFLICT) from None
    console.print(
        f"run {run.id}: scan of scope {scope!r} queued ({len(run.config.seeds)} domains)",
        highlight=False,
        soft_wrap=True,
    )
    if not now:
        console.print(
            f"crawl it with 'sitesync supervise' or 'sitesync worker --run {run.id}'",
            soft_wrap=True,
        )
        return
    from sitesync.cli import crawling  # the crawl stack, loaded only to crawl (cli/crawl.py)

    crawling.crawl_and_report(
        settings, CrawlRequest(resume_run_id=run.id), progress=progress, summary_json=None
    )


async def _start_scan(store: Store, scope: str, settings: Settings) -> Run:
    """A scan created with its schedule's settings (if the scope has one), this command's
    flags on top: a scan started by hand crawls as the scheduled ones do."""
    schedule = next((s for s in await store.list_schedules() if s.scope == scope), None)
    recorded = None
    if schedule is not None and schedule.settings is not None:
        recorded = {**schedule.settings, **given_by_flags(settings)}
    return await start_scan(store, scope, settings, recorded=recorded)


# -- sitesync schedule --------------------------------------------------------------------


@settings_flags(*SCHEDULE)
def schedule_command(
    flags: Flags,
    scope: Annotated[str | None, typer.Argument(help="The scope to scan on a cadence.")] = None,
    list_: Annotated[bool, typer.Option("--list", help="List every schedule.")] = False,
    delete: Annotated[
        bool, typer.Option("--delete", help="Delete SCOPE's schedule (no more scans).")
    ] = False,
    as_json: AsJson = False,
) -> None:
    """Scan a scope on a cadence (set or replace its schedule), list the schedules, or
    delete one (--delete SCOPE).

    The schedule records the run settings it is set with (these flags, SITESYNC_*
    variables and sitesync.toml, as for a crawl), and every scan it starts is created
    with them. 'sitesync supervise' starts each scan when it is due.
    """
    settings = from_flags(**flags)
    cadence_given = flags["scan_cadence"] is not None
    if delete:
        if scope is None or cadence_given or list_:
            raise ConfigError("--delete takes a SCOPE only: sitesync schedule --delete SCOPE")
        if not with_store(settings.db, lambda store: store.delete_schedule(scope)):
            raise ConfigError(f"scope {scope!r} has no schedule: 'sitesync schedule --list'")
        console.print(f"schedule of scope {scope!r} deleted", highlight=False, soft_wrap=True)
    elif list_ or scope is None:
        if scope is not None or cadence_given:
            raise ConfigError("give either --list, or a SCOPE (and optionally --cadence)")
        schedules = with_store(settings.db, lambda store: store.list_schedules(), migrate=False)
        if as_json:
            shown = (replace(s, settings=redacted(s.settings)) for s in schedules)
            emit("schedule.list", tuple(shown))
            return
        if not schedules:
            console.print("no schedules: add one with 'sitesync schedule SCOPE'")
            return
        console.print(schedules_table(schedules))
    else:
        _set_schedule(settings, scope)


def _set_schedule(settings: Settings, scope: str) -> None:
    cadence = settings.scan_cadence

    recorded = snapshot(settings, plugins=plugin_names(settings))

    async def work(store: Store) -> tuple[float, int]:
        next_run_at = await schedule_scan(store, scope, cadence, settings=recorded)
        return next_run_at, len(await store.list_domains(scope=scope, active=True))

    next_run_at, active = with_store(settings.db, work)
    console.print(
        f"scope {scope!r} is scanned on '{cadence}' (UTC); next scan {format_time(next_run_at)}",
        highlight=False,
        soft_wrap=True,
    )
    if not active:
        err_console.print(
            styled("warning:", "yellow"),
            f"scope {scope!r} has no active domains yet: "
            f"'sitesync domains import FILE --scope {scope}'",
            soft_wrap=True,
        )


def schedules_table(schedules: list[Schedule]) -> Table:
    table = Table(title="scan schedules (UTC)")
    for column in ("scope", "cadence", "next scan", "last run"):
        table.add_column(column, justify="right" if column == "last run" else "left")
    for schedule in schedules:
        table.add_row(
            schedule.scope,
            schedule.cadence,
            format_time(schedule.next_run_at),
            str(schedule.last_run_id) if schedule.last_run_id is not None else "-",
        )
    return table
