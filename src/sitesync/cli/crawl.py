"""``sitesync crawl``: crawl seeds, or resume a run, with a live progress bar."""

from __future__ import annotations

import asyncio
import contextlib
import functools
import json
import signal
import sys
import time
from pathlib import Path
from typing import Annotated

import typer
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from sitesync.cli._common import exit_code_of, plain_console
from sitesync.cli.options import CRAWL, WORKER, Flags, from_flags, settings_flags
from sitesync.cli.runs import run_table
from sitesync.config import Settings
from sitesync.errors import ConfigError
from sitesync.models import Run, RunStatus
from sitesync.plugins.loader import discover
from sitesync.redact import redact
from sitesync.runs.crawl import (
    STOP_ON_CTRL_C,
    CrawlRequest,
    crawl,
    prepare_run,
    request_config,
    validate_request,
)
from sitesync.runs.processes import Helpers, freeze_startup_heap, process_count
from sitesync.runs.scans import finish_completed_scans
from sitesync.runs.service import serve
from sitesync.store import Store, open_store

console = plain_console(stderr=True)

SummaryJsonOption = Annotated[
    Path | None, typer.Option(help="Also write the final counters to this JSON file.")
]


Seeds = Annotated[
    list[str] | None, typer.Argument(help="Start URLs; their hosts are the crawl's scope.")
]
Resume = Annotated[
    int | None, typer.Option("--resume", help="Continue this run instead of starting one.")
]
MaxPages = Annotated[int | None, typer.Option(min=1, help="Admit at most this many URLs.")]
MaxDepth = Annotated[int | None, typer.Option(min=0, help="Links deeper than this are skipped.")]
AllowDomain = Annotated[
    list[str] | None, typer.Option(help="Also crawl this domain and its subdomains (repeatable).")
]
Include = Annotated[
    list[str] | None, typer.Option(help="Only URLs matching one of these regexes (repeatable).")
]
Exclude = Annotated[
    list[str] | None, typer.Option(help="Skip URLs matching any of these regexes (repeatable).")
]
Queue = Annotated[
    bool, typer.Option("--queue", help="Only create the run, queued for 'sitesync supervise'.")
]


@settings_flags(*CRAWL)
def crawl_command(
    flags: Flags,
    seeds: Seeds = None,
    resume: Resume = None,
    max_pages: MaxPages = None,
    max_depth: MaxDepth = None,
    allow_domain: AllowDomain = None,
    include: Include = None,
    exclude: Exclude = None,
    queue: Queue = False,
    progress: Annotated[bool, typer.Option(help="Show a live progress bar.")] = True,
    summary_json: SummaryJsonOption = None,
) -> None:
    """Crawl seeds (or resume a run) into the store, politely and within scope.

    Ctrl-C stops the run cleanly: it becomes 'stopped' and 'sitesync crawl --resume ID'
    continues it. SIGTERM makes this process leave: the run stays running for other
    workers (or the next 'sitesync worker' / supervisor), and this exits with 143.
    It crawls with one process per core (--processes): helpers that die with it.
    """
    settings = from_flags(**flags)
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
    if queue:
        _queue(settings, request)
        return
    crawl_and_report(settings, request, progress=progress, summary_json=summary_json)


def _queue(settings: Settings, request: CrawlRequest) -> None:
    if request.resume_run_id is not None:
        raise ConfigError("--queue creates a new run: give seed URLs, not --resume")
    check_before_run(settings, request)
    run = asyncio.run(_enqueue(settings, request))
    plain_console().print(f"run {run.id} queued: 'sitesync supervise' or 'sitesync worker' runs it")


async def _enqueue(settings: Settings, request: CrawlRequest) -> Run:
    store = await open_store(settings.db, **settings.store_options())
    try:
        return await store.create_run(request_config(request, settings))
    finally:
        await store.close()


@settings_flags(*WORKER)
def worker_command(
    flags: Flags,
    run_id: Annotated[
        int | None,
        typer.Option("--run", help="Join this run (default: the oldest running or queued run)."),
    ] = None,
    progress: Annotated[bool, typer.Option(help="Show a live progress bar.")] = False,
    summary_json: SummaryJsonOption = None,
    db_from_stdin: Annotated[
        bool, typer.Option("--db-from-stdin", hidden=True, help="Read --db from stdin.")
    ] = False,
    serve: Annotated[
        bool,
        typer.Option(
            "--serve",
            help="Run as a service: crawl every active run, up to serve_max_runs at once,"
            " wait for new ones; SIGTERM leaves them all (exit 0).",
        ),
    ] = False,
) -> None:
    """Join a run from another process or machine and crawl until it ends.

    Workers share the run through the store: each host is fetched by one worker at a time
    (claims), and counters stay exact whichever worker dies. SIGTERM or Ctrl-C makes this
    worker leave (exit 0): its fetches under way finish, its hosts pass to the others, and
    the run goes on. A paused run is joined and waited on, never resumed. Other settings
    come from SITESYNC_* variables or sitesync.toml. With --serve it never ends on its own:
    see docs/operating.md for running one per machine under systemd.
    """
    if db_from_stdin:  # how supervise hands over a DSN: never on a command line
        flags = {**flags, "db": sys.stdin.readline().strip() or None}
    settings = from_flags(**flags)
    if serve:
        serve_runs(settings, run_id)
        return
    request = CrawlRequest(resume_run_id=run_id, join_any=run_id is None, join=True)
    crawl_and_report(settings, request, progress=progress, summary_json=summary_json, worker=True)


def serve_runs(settings: Settings, run_id: int | None) -> None:
    if run_id is not None:
        raise ConfigError("--serve crawls every active run: give no --run")
    discover(settings.plugins, strict=settings.strict_plugins, log_skips=False)
    console.print(
        f"serving the runs of {redact(settings.db)}, up to {settings.serve_max_runs} at once"
    )
    freeze_startup_heap()
    asyncio.run(serve(settings))
    console.print("left every run it served; they go on without this service")


#: ``crawl`` left a run that goes on without it (SIGTERM): 128 + SIGTERM, as a shell shows.
EXIT_LEFT_RUN = 143


def crawl_and_report(
    settings: Settings,
    request: CrawlRequest,
    *,
    progress: bool,
    summary_json: Path | None,
    worker: bool = False,
) -> None:
    """Crawl, print the run's table, and exit with the run's status as the exit code.

    The foreground crawl is the run's own terminal: Ctrl-C stops the run. A ``worker`` is
    one process among several: any signal makes it leave, and leaving is a clean exit.
    """
    check_before_run(settings, request)
    started = time.monotonic()
    stop_signals = frozenset() if worker else STOP_ON_CTRL_C
    count = 0 if worker else process_count(settings) - 1
    freeze_startup_heap()  # before the helpers fork: they inherit it
    # Before the store is opened and the event loop runs: see Helpers.
    helpers = Helpers.fork(
        count, functools.partial(_crawl_as_helper, settings), drain_timeout=settings.drain_timeout
    )
    try:
        run = asyncio.run(
            _crawl(
                settings, request, show_progress=progress, stop_signals=stop_signals,
                helpers=helpers,
            )
        )  # fmt: skip
    finally:
        helpers.finish()
    elapsed = time.monotonic() - started
    plain_console().print(run_table(run))
    if summary_json is not None:
        summary_json.write_text(json.dumps(_summary(run, elapsed), indent=2) + "\n")
    if run.status is RunStatus.STOPPED:
        console.print(f"stopped: resume with 'sitesync crawl --resume {run.id}'")
        raise typer.Exit(130)
    if not run.status.is_terminal:  # this process left; the run goes on without it
        console.print(
            f"left run {run.id}, which stays {run.status.value}: 'sitesync worker --run "
            f"{run.id}' or 'sitesync crawl --resume {run.id}' carries on with it"
        )
        raise typer.Exit(0 if worker else EXIT_LEFT_RUN)
    if run.status is not RunStatus.COMPLETED:
        raise typer.Exit(1)


def check_before_run(settings: Settings, request: CrawlRequest) -> None:
    """Every setting that would end the run at once, checked before a run row is created
    (the store's reachability is checked by opening it, also before)."""
    discover(settings.plugins, strict=settings.strict_plugins, log_skips=False)
    validate_request(request, settings)


def _crawl_as_helper(settings: Settings, run_id: int) -> int:
    """A forked helper of ``crawl``: ``sitesync worker --run RUN_ID`` with the crawl's
    settings, quiet but for the log; its exit code."""
    console.quiet = True
    request = CrawlRequest(resume_run_id=run_id, join=True, helper=True)
    return exit_code_of(
        lambda: crawl_and_report(settings, request, progress=False, summary_json=None, worker=True)
    )


async def _crawl(
    settings: Settings,
    request: CrawlRequest,
    *,
    show_progress: bool,
    stop_signals: frozenset[signal.Signals],
    helpers: Helpers,
) -> Run:
    store = await open_store(settings.db, **settings.store_options())
    try:
        run = await prepare_run(store, request, settings)
        if run.status is RunStatus.COMPLETED:  # a worker that joined too late
            await finish_completed_scans(store)  # in case the one that completed it died
            console.print(f"run {run.id} is already completed: nothing to do")
            return run
        console.print(
            f"run {run.id}: crawling {', '.join(run.config.seeds[:3])} into {redact(settings.db)}"
        )
        if run.status is RunStatus.PAUSED:
            console.print(f"run {run.id} is paused: waiting for 'sitesync resume {run.id}'")
        helpers.start(run.id)  # they crawl it beside this process until told it is over
        if not show_progress:
            return await crawl(store, run, settings, stop_signals=stop_signals)
        return await _crawl_with_progress(store, run, settings, stop_signals)
    finally:
        await store.close()


async def _crawl_with_progress(
    store: Store, run: Run, settings: Settings, stop_signals: frozenset[signal.Signals]
) -> Run:
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
        # The rate of every process of the run (helpers included), from its counters.
        started, fetched_before = time.monotonic(), run.counters.pages_fetched
        while True:
            await asyncio.sleep(0.5)
            current = await store.get_run(run.id)
            counters = current.counters
            fetched = counters.pages_fetched - fetched_before
            rate = fetched / max(1e-6, time.monotonic() - started)
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
            return await crawl(store, run, settings, stop_signals=stop_signals)
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
