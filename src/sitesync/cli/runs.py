"""``sitesync runs``, ``sitesync show`` and ``sitesync db``: looking at the store."""

from __future__ import annotations

import time
from typing import Annotated

import typer
from rich.console import Console
from rich.table import Table

from sitesync.cli._common import DbOption, format_bytes, format_duration, with_store
from sitesync.config import load_settings
from sitesync.models import Run, RunStatus, TaskState
from sitesync.store import Store

console = Console()

_STATUS_STYLE = {
    RunStatus.RUNNING: "cyan",
    RunStatus.COMPLETED: "green",
    RunStatus.STOPPED: "yellow",
    RunStatus.PAUSED: "yellow",
    RunStatus.FAILED: "red",
    RunStatus.CANCELLED: "magenta",
    RunStatus.QUEUED: "blue",
}


def status_text(status: RunStatus) -> str:
    return f"[{_STATUS_STYLE[status]}]{status.value}[/]"


def runs_command(
    db: DbOption = None,
    limit: Annotated[int, typer.Option(help="Show at most this many runs, newest first.")] = 20,
) -> None:
    """List runs with their status and progress."""
    settings = load_settings(db=db)
    runs = with_store(settings.db, lambda store: store.list_runs(limit=limit))
    table = Table(title=f"runs in {settings.db}")
    for column in ("run", "status", "seeds", "done", "pending", "failed", "fetched", "duration"):
        table.add_column(column, justify="right" if column != "seeds" else "left")
    for run in runs:
        seeds = ", ".join(run.config.seeds[:2]) + (" …" if len(run.config.seeds) > 2 else "")
        table.add_row(
            str(run.id),
            status_text(run.status),
            seeds,
            str(run.counters.completed),
            str(run.counters.pending + run.counters.assigned),
            str(run.counters.failed),
            format_bytes(run.counters.bytes_fetched),
            format_duration(_duration(run)),
        )
    if not runs:
        console.print(f"no runs in {settings.db} yet: start one with 'sitesync crawl URL'")
        return
    console.print(table)


def show_command(
    run_id: Annotated[int, typer.Argument(help="The run to show.")],
    db: DbOption = None,
    errors: Annotated[int, typer.Option(help="How many failed URLs to list.")] = 10,
) -> None:
    """Show one run: status, counters, settings and its failed URLs."""
    settings = load_settings(db=db)

    async def load(store: Store) -> tuple[Run, list[tuple[str, str]]]:
        run = await store.get_run(run_id)
        failed = await store.list_tasks(run_id, state=TaskState.FAILED, limit=errors)
        return run, [(t.url, t.last_error or "") for t in failed]

    run, failed = with_store(settings.db, load)
    console.print(run_table(run))
    if failed:
        table = Table(title="failed URLs")
        table.add_column("url", overflow="fold")
        table.add_column("last error", overflow="fold")
        for url, error in failed:
            table.add_row(url, error)
        console.print(table)


def run_table(run: Run) -> Table:
    counters = run.counters
    table = Table(title=f"run {run.id}", show_header=False)
    table.add_column("field", style="bold")
    table.add_column("value")
    duration = _duration(run)
    rate = counters.pages_fetched / duration if duration else 0.0
    rows = [
        (
            "status",
            status_text(run.status) + (f" ({run.status_reason})" if run.status_reason else ""),
        ),
        ("seeds", "\n".join(run.config.seeds)),
        ("tasks", str(counters.tasks_total)),
        ("completed", str(counters.completed)),
        ("pending", str(counters.pending)),
        ("in flight", str(counters.assigned)),
        ("failed", str(counters.failed)),
        ("retries", str(counters.retries)),
        ("pages fetched", str(counters.pages_fetched)),
        ("bytes fetched", format_bytes(counters.bytes_fetched)),
        ("duration", format_duration(duration)),
        ("pages/s", f"{rate:.1f}"),
    ]
    if run.status in (RunStatus.STOPPED, RunStatus.FAILED, RunStatus.RUNNING):
        rows.append(("resume with", f"sitesync crawl --resume {run.id}"))
    for name, value in rows:
        table.add_row(name, value)
    return table


def _duration(run: Run) -> float | None:
    if run.started_at is None:
        return None
    end = run.ended_at if run.ended_at is not None else time.time()
    return end - run.started_at


db_app = typer.Typer(help="Database maintenance.", no_args_is_help=True)


@db_app.command("upgrade")
def db_upgrade(db: DbOption = None) -> None:
    """Create the database or apply pending schema migrations."""
    settings = load_settings(db=db)

    async def noop(store: Store) -> None:
        return None

    with_store(settings.db, noop)  # opening a store migrates it
    console.print(f"{settings.db}: schema up to date")
