"""``sitesync crawl``: crawl seeds, or resume a run, with a live progress bar."""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from sitesync.cli._common import DbOption
from sitesync.cli.runs import run_table
from sitesync.config import Settings, load_settings
from sitesync.errors import ConfigError
from sitesync.models import Run, RunStatus
from sitesync.runs.crawl import CrawlRequest, crawl, prepare_run
from sitesync.runs.worker import CrawlWorker
from sitesync.store import Store, open_store

console = Console(stderr=True)


def crawl_command(
    seeds: Annotated[
        list[str] | None, typer.Argument(help="Start URLs; their hosts are the crawl's scope.")
    ] = None,
    resume: Annotated[
        int | None, typer.Option("--resume", help="Continue this run instead of starting one.")
    ] = None,
    db: DbOption = None,
    max_pages: Annotated[
        int | None, typer.Option(min=1, help="Admit at most this many URLs.")
    ] = None,
    max_depth: Annotated[
        int | None, typer.Option(min=0, help="Links deeper than this are skipped.")
    ] = None,
    allow_domain: Annotated[
        list[str] | None,
        typer.Option(help="Also crawl this domain and its subdomains (repeatable)."),
    ] = None,
    include: Annotated[
        list[str] | None, typer.Option(help="Only URLs matching one of these regexes (repeatable).")
    ] = None,
    exclude: Annotated[
        list[str] | None, typer.Option(help="Skip URLs matching any of these regexes (repeatable).")
    ] = None,
    concurrency: Annotated[
        int | None, typer.Option(help="Requests in flight at once. [16]")
    ] = None,
    per_host_concurrency: Annotated[
        int | None, typer.Option(help="Requests in flight per host; 0 = no cap. [1]")
    ] = None,
    delay: Annotated[
        float | None, typer.Option(help="Seconds between requests to one host. [1.0]")
    ] = None,
    max_retries: Annotated[int | None, typer.Option(help="Attempts per URL. [3]")] = None,
    retry_backoff: Annotated[
        float | None, typer.Option(help="First wait before a retry, doubling after. [1.0]")
    ] = None,
    lease_seconds: Annotated[
        float | None,
        typer.Option(help="Task lease; a crashed worker's tasks return after it. [60]"),
    ] = None,
    in_flight_limit: Annotated[
        int | None, typer.Option(help="Tasks held at once; 0 = 2 x concurrency. [0]")
    ] = None,
    user_agent: Annotated[str | None, typer.Option(help="User-Agent header.")] = None,
    fetcher: Annotated[
        str | None, typer.Option(help="http, or browser (system Chromium; JavaScript sites).")
    ] = None,
    robots: Annotated[
        bool | None, typer.Option("--robots/--no-robots", help="Obey robots.txt. [on]")
    ] = None,
    sitemaps: Annotated[
        bool | None,
        typer.Option("--sitemaps/--no-sitemaps", help="Admit URLs from the seeds' sitemaps. [on]"),
    ] = None,
    timeout: Annotated[float | None, typer.Option(help="Total seconds per request. [60]")] = None,
    max_body_bytes: Annotated[int | None, typer.Option(help="Largest body kept. [10 MiB]")] = None,
    progress: Annotated[bool, typer.Option(help="Show a live progress bar.")] = True,
    summary_json: Annotated[
        Path | None, typer.Option(help="Also write the final counters to this JSON file.")
    ] = None,
) -> None:
    """Crawl seeds (or resume a run) into the store, politely and within scope.

    Ctrl-C stops cleanly: the run becomes 'stopped' and 'sitesync crawl --resume ID'
    continues it.
    """
    settings = load_settings(
        db=db,
        concurrency=concurrency,
        per_host_concurrency=per_host_concurrency,
        delay=delay,
        max_retries=max_retries,
        lease_seconds=lease_seconds,
        retry_backoff=retry_backoff,
        in_flight_limit=in_flight_limit,
        user_agent=user_agent,
        fetcher=fetcher,
        respect_robots=robots,
        sitemaps=sitemaps,
        total_timeout=timeout,
        max_body_bytes=max_body_bytes,
    )
    if not seeds and resume is None:
        raise ConfigError("give at least one seed URL, or --resume RUN_ID")
    if seeds and resume is not None:
        raise ConfigError("give seed URLs or --resume RUN_ID, not both")
    request = CrawlRequest(
        seeds=tuple(seeds or ()),
        resume_run_id=resume,
        allowed_domains=tuple(allow_domain or ()),
        include=tuple(include or ()),
        exclude=tuple(exclude or ()),
        max_depth=max_depth,
        max_pages=max_pages,
    )
    started = time.monotonic()
    run = asyncio.run(_crawl(settings, request, show_progress=progress))
    elapsed = time.monotonic() - started
    Console().print(run_table(run))
    if summary_json is not None:
        summary_json.write_text(json.dumps(_summary(run, elapsed), indent=2) + "\n")
    if run.status is RunStatus.STOPPED:
        console.print(f"stopped: resume with 'sitesync crawl --resume {run.id}'")
        raise typer.Exit(130)
    if run.status is not RunStatus.COMPLETED:
        raise typer.Exit(1)


async def _crawl(settings: Settings, request: CrawlRequest, *, show_progress: bool) -> Run:
    store = await open_store(settings.db)
    try:
        run = await prepare_run(store, request, settings)
        console.print(
            f"run {run.id}: crawling {', '.join(run.config.seeds[:3])} into {settings.db}"
        )
        if not show_progress:
            return await crawl(store, run, settings)
        return await _crawl_with_progress(store, run, settings)
    finally:
        await store.close()


async def _crawl_with_progress(store: Store, run: Run, settings: Settings) -> Run:
    workers: list[CrawlWorker] = []
    progress = Progress(
        TextColumn("[bold]run {task.fields[run_id]}"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("{task.fields[rate]:>7.1f} pages/s"),
        TextColumn("pending {task.fields[pending]}"),
        TextColumn("errors {task.fields[errors]}"),
        TimeElapsedColumn(),
        console=console,
        transient=False,
    )
    bar = progress.add_task("crawl", total=None, run_id=run.id, rate=0.0, pending=0, errors=0)

    async def refresh() -> None:
        while True:
            await asyncio.sleep(0.5)
            current = await store.get_run(run.id)
            counters = current.counters
            rate = 0.0
            if workers:
                stats = workers[0].stats
                rate = stats.fetched / max(1e-6, time.monotonic() - stats.started)
            progress.update(
                bar,
                completed=counters.completed + counters.failed,
                total=counters.tasks_total,
                rate=rate,
                pending=counters.pending + counters.assigned,
                errors=counters.failed + counters.retries,
            )

    with progress:
        updater = asyncio.ensure_future(refresh())
        try:
            return await crawl(store, run, settings, on_start=workers.append)
        finally:
            updater.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await updater


def _summary(run: Run, elapsed: float) -> dict[str, object]:
    counters = run.counters
    return {
        "run_id": run.id,
        "status": run.status.value,
        "elapsed_seconds": round(elapsed, 3),
        "tasks_total": counters.tasks_total,
        "completed": counters.completed,
        "failed": counters.failed,
        "pending": counters.pending,
        "assigned": counters.assigned,
        "pages_fetched": counters.pages_fetched,
        "bytes_fetched": counters.bytes_fetched,
        "retries": counters.retries,
    }
