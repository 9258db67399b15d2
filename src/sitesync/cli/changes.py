"""``sitesync changes RUN``: what a scan found changed, per domain, and what it cost."""

from __future__ import annotations

from typing import Annotated

import typer

from sitesync.cli._common import format_bytes, plain_console, with_store
from sitesync.cli.options import DbOption, from_flags
from sitesync.cli.output import AsJson, emit
from sitesync.models import ChangeReport, HostChanges
from sitesync.store import Store

console = plain_console()


def changes_command(
    run_id: Annotated[int, typer.Argument(help="The scan (run).")],
    since: Annotated[
        int | None,
        typer.Option(
            "--since",
            help="The earlier run to compare with (default: the run's previous scan: the "
            "latest earlier completed run of its scope, or of the same seeds and limits).",
        ),
    ] = None,
    db: DbOption = None,
    as_json: AsJson = False,
) -> None:
    """Per domain: pages new, changed, unchanged (a 304, the same content, a sitemap date),
    gone, and the bytes downloaded against what fetching every page in full would cost."""
    settings = from_flags(db=db)

    async def load(store: Store) -> ChangeReport:
        await store.get_run(run_id)  # a wrong id is an error, not an empty report
        if since is not None:
            await store.get_run(since)
        return await store.change_report(run_id, since_run_id=since)

    report = with_store(settings.db, load, migrate=False)
    if as_json:
        emit("changes", report)
        return
    against = f"run {report.since_run_id}" if report.since_run_id else "nothing (no earlier scan)"
    console.print(f"run {report.run_id} against {against}")
    if not report.hosts:
        console.print("the run saw no pages")
    for row in (*report.hosts, report.total) if len(report.hosts) > 1 else report.hosts:
        console.print(line(row), soft_wrap=True)


def line(row: HostChanges) -> str:
    """One host's report on one line (a table of a dozen columns fits no terminal)."""
    saved = saving(row)
    host = "all hosts" if row.host == "*" else row.host
    return (
        f"{host}: {row.new} new, {row.changed} changed, {row.unchanged} unchanged "
        f"({row.unchanged_not_modified} by 304, {row.unchanged_same_content} same content, "
        f"{row.unchanged_per_sitemap} by sitemap date), {row.gone} gone, "
        f"{row.not_reached} not reached; {row.requests} requests, "
        f"{format_bytes(row.bytes_downloaded)} downloaded of "
        f"{format_bytes(row.bytes_full_fetch)} for a full fetch"
        + ("" if saved is None else f" ({saved:.0%} saved)")
    )


def saving(row: HostChanges) -> float | None:
    """The share of a full fetch's bytes the scan did not download (None: nothing to save)."""
    if row.bytes_full_fetch <= 0:
        return None
    return 1 - row.bytes_downloaded / row.bytes_full_fetch
