"""``sitesync status``: active runs, the work left, and why idle runs are idle."""

from __future__ import annotations

import time
from typing import Annotated

import typer
from rich.table import Table
from rich.text import Text

from sitesync.cli._common import plain_console, styled, with_store
from sitesync.cli.options import DbOption, from_flags
from sitesync.cli.output import AsJson, StatusCheck, emit
from sitesync.cli.runs import status_text
from sitesync.errors import ExitCode
from sitesync.readmodel.health import HealthLimits, problems
from sitesync.readmodel.idle import ago
from sitesync.readmodel.overview import Overview, OverviewOptions
from sitesync.readmodel.schema import StatusOverview
from sitesync.redact import redact
from sitesync.store import Store

console = plain_console()

#: Exit code of ``status --check`` when an active run needs attention.
EXIT_ATTENTION = ExitCode.ATTENTION


def status_command(
    db: DbOption = None,
    check: Annotated[
        bool,
        typer.Option(
            "--check",
            help="For monitors: exit 4 with one line naming why when an active run is "
            "stalled, failing or past --max-duration; exit 0 otherwise.",
        ),
    ] = False,
    max_duration: Annotated[
        float | None,
        typer.Option(
            help="With --check: minutes an active run may take since it started.",
            show_default="no limit",
        ),
    ] = None,
    max_failed_share: Annotated[
        float,
        typer.Option(
            min=0.0, max=1.0, help="With --check: share of a run's finished URLs that may fail."
        ),
    ] = 0.5,
    as_json: AsJson = False,
) -> None:
    """Show the active runs, pending work per run and in total, and why idle runs are idle.

    The same overview as the dashboard's /api/status; pending work comes from the runs'
    counters, so this is instant on runs of any size.
    """
    settings = from_flags(db=db)
    options = OverviewOptions.from_settings(settings)

    async def load(store: Store) -> StatusOverview:
        return await Overview(store, options).status()

    overview = with_store(settings.db, load, migrate=False)
    limits = HealthLimits(
        max_failed_share=max_failed_share,
        max_duration=None if max_duration is None else 60 * max_duration,
    )
    found = problems(overview, limits)
    if as_json:
        emit("status", StatusCheck(overview, found))
    elif check:
        _report_health(overview, found)
    else:
        _print_status(settings.db, overview)
    if check and found:
        raise typer.Exit(EXIT_ATTENTION)


def _report_health(overview: StatusOverview, found: tuple[str, ...]) -> None:
    """One line, as monitoring systems show a check's output."""
    if found:
        console.print(f"attention: {'; '.join(found)}", soft_wrap=True)
    else:
        console.print(f"ok: {len(overview.active_runs)} active runs, none stalled or failing")


def _print_status(db: str, overview: StatusOverview) -> None:
    if not overview.active_runs:
        console.print(f"no active run in {redact(db)}: 'sitesync runs' lists past runs")
        return
    console.print(runs_table(overview))
    console.print(
        Text.assemble(
            "pending across active runs: ",
            styled(str(overview.pending_total), "bold"),
            f" ({overview.in_flight_total} in flight)",
        )
    )
    idle = idle_table(overview)
    if idle is not None:
        console.print(idle)
    slowed = slowed_table(overview)
    if slowed is not None:
        console.print(slowed)


def runs_table(overview: StatusOverview) -> Table:
    table = Table(title="active runs")
    columns = ("run", "status", "seeds", "done", "pending", "in flight", "failed", "pages/s")
    for column in (*columns, "last activity"):
        table.add_column(column, justify="left" if column in ("status", "seeds") else "right")
    for run in overview.active_runs:
        counters = run.counters
        seeds = ", ".join(run.seeds[:2]) + (" …" if len(run.seeds) > 2 else "")
        last = run.last_activity_at
        table.add_row(
            str(run.id),
            status_text(run.status),
            seeds,
            str(counters.completed),
            str(counters.pending),
            str(counters.assigned),
            str(counters.failed),
            f"{run.pages_per_second:.1f}",
            f"{ago(time.time() - last)} ago" if last else "-",
        )
    return table


def idle_table(overview: StatusOverview) -> Table | None:
    idle = [run for run in overview.active_runs if run.idle_reasons]
    if not idle:
        return None
    table = Table(title="idle because…")
    table.add_column("run", justify="right")
    table.add_column("why", overflow="fold")
    for run in idle:
        table.add_row(str(run.id), "\n".join(run.idle_reasons))
    return table


def slowed_table(overview: StatusOverview) -> Table | None:
    """Hosts adaptive politeness slowed down ("host X: 2.4 s, backing off after 503s")."""
    slowed = [run for run in overview.active_runs if run.slowed_hosts]
    if not slowed:
        return None
    table = Table(title="hosts slowed down (adaptive politeness)")
    table.add_column("run", justify="right")
    table.add_column("pace", overflow="fold")
    for run in slowed:
        table.add_row(str(run.id), "\n".join(run.slowed_hosts))
    return table
