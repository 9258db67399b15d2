"""``sitesync runs``, ``sitesync show`` and ``sitesync db``: looking at the store."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from typing import Annotated

import typer
from rich.table import Table
from rich.text import Text

from sitesync.cli._common import (
    format_bytes,
    format_duration,
    plain_console,
    styled,
    with_store,
)
from sitesync.cli.help import SitesyncTyper
from sitesync.cli.options import DbOption, from_flags
from sitesync.cli.output import AsJson, ShownRun, emit
from sitesync.cli.settings import settings_tables
from sitesync.config import Settings
from sitesync.fetch.text import visible
from sitesync.models import Run, RunStatus, SettingChange, TaskState
from sitesync.readmodel.overview import Overview, OverviewOptions
from sitesync.redact import redact
from sitesync.run_settings import redacted
from sitesync.store import Store, pending_migrations

console = plain_console()

_STATUS_STYLE = {
    RunStatus.RUNNING: "cyan",
    RunStatus.COMPLETED: "green",
    RunStatus.STOPPED: "yellow",
    RunStatus.PAUSED: "yellow",
    RunStatus.FAILED: "red",
    RunStatus.CANCELLED: "magenta",
    RunStatus.QUEUED: "blue",
}


def status_text(status: RunStatus) -> Text:
    return styled(status.value, _STATUS_STYLE[status])


runs_app = SitesyncTyper(help="List runs, or clean up stale ones.", invoke_without_command=True)


@runs_app.callback()
def runs_command(
    ctx: typer.Context,
    db: DbOption = None,
    limit: Annotated[int, typer.Option(help="Show at most this many runs, newest first.")] = 20,
    as_json: AsJson = False,
) -> None:
    """List runs with their status and progress."""
    if ctx.invoked_subcommand is not None:
        return
    settings = from_flags(db=db)
    if as_json:
        options = OverviewOptions.from_settings(settings)
        summaries = with_store(
            settings.db, lambda store: Overview(store, options).runs(limit=limit), migrate=False
        )
        emit("runs", tuple(summaries))
        return
    runs = with_store(settings.db, lambda store: store.list_runs(limit=limit), migrate=False)
    table = Table(title=f"runs in {redact(settings.db)}")
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
        console.print(f"no runs in {redact(settings.db)} yet: start one with 'sitesync crawl URL'")
        return
    console.print(table)


def show_command(
    run_id: Annotated[int, typer.Argument(help="The run to show.")],
    db: DbOption = None,
    errors: Annotated[int, typer.Option(help="How many failed URLs to list.")] = 10,
    as_json: AsJson = False,
) -> None:
    """Show one run: status, counters, settings and its failed URLs."""
    settings = from_flags(db=db)
    if as_json:
        emit("show", with_store(settings.db, _shown(settings, run_id, errors), migrate=False))
        return

    async def load(
        store: Store,
    ) -> tuple[Run, list[tuple[str, str]], Table | None, Table | None, list[SettingChange]]:
        run = await store.get_run(run_id)
        failed = await store.list_tasks(run_id, state=TaskState.FAILED, limit=errors)
        failures = [(t.url, t.last_error or "") for t in failed]
        changes = await store.list_setting_changes(run_id)
        hosts, slowed = await hosts_table(store, run), await slowed_table(store, run)
        return run, failures, hosts, slowed, changes

    run, failed, hosts, slowed, changes = with_store(settings.db, load, migrate=False)
    console.print(run_table(run))
    for table in settings_tables(run, changes):
        console.print(table)
    if hosts is not None:
        console.print(hosts)
    if slowed is not None:
        console.print(slowed)
    if failed:
        table = Table(title="failed URLs")
        table.add_column("url", overflow="fold")
        table.add_column("last error", overflow="fold")
        for url, error in failed:
            table.add_row(url, error)
        console.print(table)


def _shown(settings: Settings, run_id: int, errors: int) -> Callable[[Store], Awaitable[ShownRun]]:
    async def load(store: Store) -> ShownRun:
        detail = await Overview(store, OverviewOptions.from_settings(settings)).detail(run_id)
        run = await store.get_run(run_id)
        failed = await store.list_tasks(run_id, state=TaskState.FAILED, limit=errors)
        return ShownRun(
            detail=detail,
            settings=redacted(run.settings),  # credentials masked
            settings_version=run.settings_version,
            setting_changes=tuple(await store.list_setting_changes(run_id)),
            failed=tuple((t.url, t.last_error or "") for t in failed),
        )

    return load


async def hosts_table(store: Store, run: Run) -> Table | None:
    """Per-host counters with the worker holding each host (flushed counts; see
    domain_stats_flush_interval_pages)."""
    hosts = {h.host: h for h in await store.list_run_hosts(run.id)}
    now = time.time()
    holders = {c.host: c.worker_id for c in await store.list_claims(run.id) if c.expires_at > now}
    workers = {w.worker_id: w for w in await store.list_workers(run.id)}
    names = sorted(hosts.keys() | holders.keys())
    if not names:
        return None
    table = Table(title=f"hosts of run {run.id} ({len(workers)} workers joined)")
    for column in ("host", "pages", "errors", "status", "claimed by"):
        table.add_column(column, justify="right" if column in ("pages", "errors") else "left")
    for name in names:
        host = hosts.get(name)
        holder = holders.get(name)
        worker = workers.get(holder) if holder else None
        where = f"{holder} (pid {worker.pid} on {worker.host})" if worker else (holder or "-")
        table.add_row(
            name,
            str(host.pages_crawled) if host else "0",
            str(host.errors) if host else "0",
            host.status.value if host else "active",
            where,
        )
    return table


async def slowed_table(store: Store, run: Run) -> Table | None:
    """The run's hosts that adaptive politeness slowed down, or None when there are none."""
    hosts = {h.host for h in await store.list_run_hosts(run.id)}
    hosts |= {c.host for c in await store.list_claims(run.id)}
    states = await store.get_host_states(sorted(hosts))  # one query, however many hosts
    texts = [text for host in sorted(states) if (text := states[host].pace_text())]
    if not texts:
        return None
    table = Table(title="hosts slowed down (adaptive politeness)", show_header=False)
    table.add_column("pace", overflow="fold")
    for text in texts:
        table.add_row(text)
    return table


def run_table(run: Run) -> Table:
    counters = run.counters
    table = Table(title=f"run {run.id}", show_header=False)
    table.add_column("field", style="bold")
    table.add_column("value")
    duration = _duration(run)
    rate = counters.pages_fetched / duration if duration else 0.0
    rows: list[tuple[str, str | Text]] = [
        (
            "status",
            status_text(run.status)
            + (visible(f" ({run.status_reason})") if run.status_reason else ""),
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


db_app = SitesyncTyper(help="Database maintenance.", no_args_is_help=True)


def migrate_command(
    db: DbOption = None,
    dry_run: Annotated[
        bool, typer.Option("--dry-run", help="List the migrations it would apply; change nothing.")
    ] = False,
) -> None:
    """Create the store, or bring its schema up to date.

    The commands that crawl or manage (crawl, worker, supervise, scan, schedule, pause ...)
    do this themselves; the ones that only read (runs, show, status, why, the dashboard
    ...) never do, so that a newer sitesync reading the fleet's store does not migrate it
    under older workers. Two processes migrating at once apply each migration once.
    """
    settings = from_flags(db=db)
    pending = asyncio.run(pending_migrations(settings.db))
    where = redact(settings.db)
    if dry_run:
        if not pending:
            console.print(f"{where}: schema up to date; nothing to do", soft_wrap=True)
            return
        console.print(f"{where}: {len(pending)} migrations would be applied:", soft_wrap=True)
        for name in pending:
            console.print(f"  {name}", soft_wrap=True)
        return

    async def noop(store: Store) -> None:
        return None

    with_store(settings.db, noop)  # opening a store as a writer migrates it
    done = f"applied {len(pending)} migrations" if pending else "nothing to apply"
    console.print(f"{where}: schema up to date ({done})", soft_wrap=True)


#: ``sitesync db upgrade``, as before ``sitesync migrate``.
db_app.command("upgrade", help="Same as 'sitesync migrate'.")(migrate_command)
