"""Start or resume a run in this process and crawl it to an end."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import signal
from collections.abc import Callable
from dataclasses import dataclass

from sitesync.config import Settings
from sitesync.errors import IllegalTransition
from sitesync.fetch.base import Fetcher
from sitesync.fetch.http import HttpFetcher
from sitesync.frontier.frontier import normalize_seeds
from sitesync.models import RUN_TRANSITIONS, Run, RunConfig, RunStatus
from sitesync.runs.worker import CrawlWorker, WorkerExit
from sitesync.store.base import Store

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class CrawlRequest:
    """What the user asked for: a new run from seeds, or a run to resume."""

    seeds: tuple[str, ...] = ()
    resume_run_id: int | None = None
    allowed_domains: tuple[str, ...] = ()
    include: tuple[str, ...] = ()
    exclude: tuple[str, ...] = ()
    max_depth: int | None = None
    max_pages: int | None = None


async def prepare_run(store: Store, request: CrawlRequest, settings: Settings) -> Run:
    """Create the run (status running), or move the run to resume back to running."""
    if request.resume_run_id is not None:
        run = await store.get_run(request.resume_run_id)
        if run.status is RunStatus.RUNNING:
            # A crash left it running; its dead worker's leases expire and are reclaimed.
            return run
        if RunStatus.RUNNING not in RUN_TRANSITIONS[run.status]:
            raise IllegalTransition(f"run {run.id} is {run.status.value} and cannot be resumed")
        return await store.transition_run(run.id, RunStatus.RUNNING, reason="resumed")
    config = RunConfig(
        seeds=tuple(normalize_seeds(request.seeds)),
        allowed_domains=request.allowed_domains,
        include=request.include,
        exclude=request.exclude,
        max_depth=request.max_depth,
        max_pages=request.max_pages,
        max_retries=settings.max_retries,
    )
    run = await store.create_run(config)
    return await store.transition_run(run.id, RunStatus.RUNNING)


async def crawl(
    store: Store,
    run: Run,
    settings: Settings,
    *,
    fetcher: Fetcher | None = None,
    on_start: Callable[[CrawlWorker], None] | None = None,
) -> Run:
    """Crawl ``run`` until it drains or the user stops it; return the run as it ended.

    SIGINT and SIGTERM stop gracefully: what was fetched is committed, what was in flight
    goes back to PENDING, and the run becomes ``stopped`` (resumable).
    """
    plain = HttpFetcher(
        limits=settings.fetch_limits(),
        user_agent=settings.user_agent,
        max_connections=settings.concurrency,
    )
    if fetcher is None and settings.fetcher == "browser":
        from sitesync.fetch.browser import BrowserFetcher

        fetcher = BrowserFetcher(
            limits=settings.fetch_limits(),
            user_agent=settings.user_agent,
            executable_path=settings.browser_executable,
            max_pages=settings.browser_pages,
        )
    async with contextlib.AsyncExitStack() as stack:
        # robots.txt and sitemaps always go over plain HTTP.
        await stack.enter_async_context(plain)
        page_fetcher = await stack.enter_async_context(fetcher) if fetcher else plain
        worker = CrawlWorker(
            store, run, page_fetcher, options=settings.worker_options(), robots_fetcher=plain
        )
        if on_start is not None:
            on_start(worker)
        loop = asyncio.get_running_loop()
        installed = _install_stop_signals(loop, worker)
        try:
            exit_reason = await worker.run()
        except BaseException as exc:
            await _mark_failed(store, run.id, exc)
            raise
        finally:
            for sig in installed:
                loop.remove_signal_handler(sig)
    if exit_reason is WorkerExit.STOP_REQUESTED:
        current = await store.get_run(run.id)
        if current.status is RunStatus.RUNNING or current.status is RunStatus.PAUSED:
            await store.transition_run(run.id, RunStatus.STOPPED, reason="stopped by user")
    return await store.get_run(run.id)


def _install_stop_signals(
    loop: asyncio.AbstractEventLoop, worker: CrawlWorker
) -> list[signal.Signals]:
    installed = []
    for sig in (signal.SIGINT, signal.SIGTERM):
        try:
            loop.add_signal_handler(sig, _on_signal, loop, sig, worker)
        except (NotImplementedError, RuntimeError):  # not the main thread, or no signals
            continue
        installed.append(sig)
    return installed


def _on_signal(loop: asyncio.AbstractEventLoop, sig: signal.Signals, worker: CrawlWorker) -> None:
    log.warning("%s received: stopping; in-flight pages go back to pending", sig.name)
    worker.stop()
    # A second signal kills at once: nothing committed is lost, leases simply expire.
    loop.remove_signal_handler(sig)


async def _mark_failed(store: Store, run_id: int, exc: BaseException) -> None:
    if isinstance(exc, asyncio.CancelledError | KeyboardInterrupt):
        return
    try:
        await store.transition_run(run_id, RunStatus.FAILED, reason=f"{type(exc).__name__}: {exc}")
    except Exception:  # the store may be what failed; the original error matters more
        log.exception("could not mark run %d failed", run_id)
