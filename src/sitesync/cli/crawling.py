"""What ``sitesync crawl`` and ``sitesync worker`` run: crawl, print the run's table, exit
with the run's status; helpers forked beside the foreground crawl.

Imported by the commands when they run (see :mod:`sitesync.cli.crawl`), never at the
CLI's start: it loads the whole crawl stack.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import json
import signal
import time
from pathlib import Path

import typer
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from sitesync.cli._common import exit_code_of, plain_console
from sitesync.cli.runs import run_table
from sitesync.config import Settings
from sitesync.errors import ConfigError, ExitCode
from sitesync.models import Run, RunStatus
from sitesync.plugins.loader import discover, plugin_configs
from sitesync.readmodel.failures import FailureReason, failure_reasons
from sitesync.redact import redact
from sitesync.run_settings import snapshot
from sitesync.runs.crawl import STOP_ON_CTRL_C, crawl
from sitesync.runs.processes import Helpers, freeze_startup_heap, process_count
from sitesync.runs.request import (
    CrawlRequest,
    plugin_names,
    prepare_run,
    request_config,
    validate_request,
)
from sitesync.runs.scans import finish_completed_scans
from sitesync.runs.service import serve
from sitesync.store import Store, open_store

console = plain_console(stderr=True)


def queue(settings: Settings, request: CrawlRequest) -> None:
    """Create the run, queued for a supervisor or a worker; print its id."""
    if request.resume_run_id is not None:
        raise ConfigError("--queue creates a new run: give seed URLs, not --resume")
    check_before_run(settings, request)
    run = asyncio.run(_enqueue(settings, request))
    plain_console().print(f"run {run.id} queued: 'sitesync supervise' or 'sitesync worker' runs it")


async def _enqueue(settings: Settings, request: CrawlRequest) -> Run:
    store = await open_store(settings.db, **settings.store_options())
    try:
        recorded = snapshot(settings, plugins=plugin_names(settings))
        return await store.create_run(request_config(request, settings), settings=recorded)
    finally:
        await store.close()


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
EXIT_LEFT_RUN = ExitCode.LEFT_RUN


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
    # Its processes start together: each leaves the others their hosts (runs.claims).
    siblings = process_count(settings) if not worker or request.helper else 1
    freeze_startup_heap()  # before the helpers fork: they inherit it
    # Before the store is opened and the event loop runs: see Helpers.
    helpers = Helpers.fork(
        count, functools.partial(_crawl_as_helper, settings), drain_timeout=settings.drain_timeout
    )
    try:
        run, reasons = asyncio.run(
            _crawl(
                settings, request, show_progress=progress, stop_signals=stop_signals,
                helpers=helpers, siblings=siblings,
            )
        )  # fmt: skip
    finally:
        helpers.finish()
    elapsed = time.monotonic() - started
    plain_console().print(run_table(run))
    if reasons:
        plain_console().print(failures_table(run, reasons))
    if summary_json is not None:
        summary_json.write_text(json.dumps(_summary(run, elapsed), indent=2) + "\n")
    if run.status is RunStatus.STOPPED:
        console.print(f"stopped: resume with 'sitesync crawl --resume {run.id}'")
        raise typer.Exit(ExitCode.STOPPED)
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
    if request.join_any or request.resume_run_id is not None:
        return  # a run that exists is checked with its own settings (join_settings)
    found = discover(settings.plugins, strict=settings.strict_plugins, log_skips=False)
    plugin_configs(settings, found.loaded)  # each plugin's own table, against its model
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
    siblings: int,
) -> tuple[Run, list[FailureReason]]:
    store = await open_store(settings.db, **settings.store_options())
    try:
        run, settings = await prepare_run(store, request, settings)
        if run.status is RunStatus.COMPLETED:  # a worker that joined too late
            await finish_completed_scans(store)  # in case the one that completed it died
            console.print(f"run {run.id} is already completed: nothing to do")
            return run, []
        console.print(
            f"run {run.id}: crawling {', '.join(run.config.seeds[:3])} into {redact(settings.db)}"
        )
        if run.status is RunStatus.PAUSED:
            console.print(f"run {run.id} is paused: waiting for 'sitesync resume {run.id}'")
        helpers.start(run.id)  # they crawl it beside this process until told it is over
        if not show_progress:
            run = await crawl(store, run, settings, stop_signals=stop_signals, siblings=siblings)
        else:
            run = await _crawl_with_progress(store, run, settings, stop_signals, siblings)
        return run, await failure_reasons(store, run)
    finally:
        await store.close()


def failures_table(run: Run, reasons: list[FailureReason]) -> Table:
    """Why URLs failed, the most frequent reason first, with what to do about each."""
    table = Table(title=f"why {run.counters.failed} URLs of run {run.id} failed")
    for column in ("reason", "URLs", "for example", "what to do"):
        table.add_column(column, overflow="fold", justify="right" if column == "URLs" else "left")
    for reason in reasons:
        table.add_row(reason.outcome, str(reason.urls), reason.example, reason.advice or "-")
    return table


async def _crawl_with_progress(
    store: Store,
    run: Run,
    settings: Settings,
    stop_signals: frozenset[signal.Signals],
    siblings: int,
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
            return await crawl(store, run, settings, stop_signals=stop_signals, siblings=siblings)
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
