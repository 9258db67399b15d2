"""``sitesync crawl`` and ``sitesync worker``: their options and arguments.

What they run is in :mod:`sitesync.cli.crawling`, imported by each command when it runs:
the crawl stack (aiohttp above all, a third of the CLI's start-up) is then loaded only by
the commands that crawl, not by ``sitesync status``, ``pause`` or ``stop``.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer

from sitesync.cli.options import CRAWL, WORKER, Flags, from_flags, settings_flags
from sitesync.errors import ConfigError
from sitesync.runs.request import CrawlRequest

WHAT = "What to crawl"

SummaryJsonOption = Annotated[
    Path | None,
    typer.Option(
        metavar="FILE", help="Also write the final counters to this JSON file.",
        rich_help_panel="Output",
    ),
]  # fmt: skip
Progress = Annotated[bool, typer.Option(help="Show a live progress bar.", rich_help_panel="Output")]

Seeds = Annotated[
    list[str] | None,
    typer.Argument(metavar="URL...", help="Start URLs; their hosts are the crawl's scope."),
]
Resume = Annotated[
    int | None,
    typer.Option("--resume", metavar="RUN", rich_help_panel=WHAT,
                 help="Continue this run instead of starting one."),
]  # fmt: skip
MaxPages = Annotated[
    int | None,
    typer.Option(min=1, metavar="N", rich_help_panel=WHAT, show_default="no limit",
                 help="Admit at most this many URLs."),
]  # fmt: skip
MaxDepth = Annotated[
    int | None,
    typer.Option(min=0, metavar="N", rich_help_panel=WHAT, show_default="no limit",
                 help="Links deeper than this are skipped."),
]  # fmt: skip
AllowDomain = Annotated[
    list[str] | None,
    typer.Option(metavar="DOMAIN", rich_help_panel=WHAT,
                 help="Also crawl this domain and its subdomains (repeatable)."),
]  # fmt: skip
Include = Annotated[
    list[str] | None,
    typer.Option(metavar="REGEX", rich_help_panel=WHAT,
                 help="Only URLs matching one of these regexes (repeatable)."),
]  # fmt: skip
Exclude = Annotated[
    list[str] | None,
    typer.Option(metavar="REGEX", rich_help_panel=WHAT,
                 help="Skip URLs matching any of these regexes (repeatable)."),
]  # fmt: skip
Queue = Annotated[
    bool,
    typer.Option("--queue", rich_help_panel=WHAT,
                 help="Only create the run, queued for 'sitesync supervise'."),
]  # fmt: skip


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
    progress: Progress = True,
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
    from sitesync.cli import crawling  # the crawl stack: see the module's docstring

    if queue:
        crawling.queue(settings, request)
        return
    crawling.crawl_and_report(settings, request, progress=progress, summary_json=summary_json)


@settings_flags(*WORKER)
def worker_command(
    flags: Flags,
    run_id: Annotated[
        int | None,
        typer.Option("--run", help="Join this run (default: the oldest running or queued run)."),
    ] = None,
    progress: Progress = False,
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
    the run goes on. A paused run is joined and waited on, never resumed. It crawls with
    the run's own settings ('sitesync settings RUN'); its flags, SITESYNC_* variables and
    sitesync.toml set only this process's own (its concurrency, store, timings). With
    --serve it never ends on its own: see docs/operating.md for running one per machine
    under systemd.
    """
    if db_from_stdin:  # how supervise hands over a DSN: never on a command line
        flags = {**flags, "db": sys.stdin.readline().strip() or None}
    settings = from_flags(**flags)
    from sitesync.cli import crawling  # the crawl stack: see the module's docstring

    if serve:
        crawling.serve_runs(settings, run_id)
        return
    request = CrawlRequest(resume_run_id=run_id, join_any=run_id is None, join=True)
    crawling.crawl_and_report(
        settings, request, progress=progress, summary_json=summary_json, worker=True
    )
