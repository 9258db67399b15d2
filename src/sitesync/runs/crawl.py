"""Start or resume a run in this process and crawl it to an end."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
import signal
from collections.abc import Callable

from sitesync import logs
from sitesync.config import Settings
from sitesync.engine.options import WorkerOptions
from sitesync.engine.waits import wait_set
from sitesync.engine.wiring import fetch_limits, network_policy, request_profiles, worker_options
from sitesync.engine.worker import CrawlWorker, WorkerExit, new_worker_id
from sitesync.errors import (
    ConfigError,
    PluginError,
    StoreUnavailable,
)
from sitesync.fetch.base import Fetcher
from sitesync.fetch.http import HttpFetcher
from sitesync.fetch.null import NullFetcher
from sitesync.fetch.polite import LateClient
from sitesync.models import Run, RunStatus
from sitesync.plugins.pipeline import PluginPipeline, build_pipeline
from sitesync.runs import taskdump
from sitesync.runs.processes import FOREGROUND_DONE
from sitesync.runs.scans import finish_completed_scans
from sitesync.store.base import Store
from sitesync.urls import set_session_params

log = logging.getLogger(__name__)


#: Ctrl-C on the foreground ``sitesync crawl`` stops the run: that terminal is the run's own.
STOP_ON_CTRL_C = frozenset({signal.SIGINT})


async def crawl(
    store: Store,
    run: Run,
    settings: Settings,
    *,
    fetcher: Fetcher | None = None,
    on_start: Callable[[CrawlWorker], None] | None = None,
    stop_signals: frozenset[signal.Signals] = frozenset(),
    signals: Signals | None = None,
    siblings: int = 1,
) -> Run:
    """Crawl ``run`` until it drains, the run is stopped, or this process leaves; return
    the run as it ended (``running``, ``paused`` or ``queued`` when it goes on without us).

    SIGINT and SIGTERM make this process leave: fetches under way finish and are committed,
    what it leased but had not started goes back to PENDING, its claims are released, and
    the run goes on with the other workers (or waits, as it was, for the next one). A
    signal in ``stop_signals`` stops the run instead: in-flight work goes back to PENDING
    and the run becomes ``stopped`` (resumable). A paused run is waited on, never resumed.
    Given ``signals``, their owner (a service crawling several runs) installs the handlers.
    ``siblings``: the processes of this crawl started together, this one included.
    """
    worker_id = new_worker_id()
    # Every line this crawl logs, in any task or thread it starts, names its run and worker.
    with logs.about(run=run.id, worker=worker_id):
        options = dataclasses.replace(worker_options(settings), siblings=siblings)
        return await _crawl(store, run, settings, options, worker_id, fetcher, on_start,
                            stop_signals, signals)  # fmt: skip


async def _crawl(
    store: Store,
    run: Run,
    settings: Settings,
    options: WorkerOptions,
    worker_id: str,
    fetcher: Fetcher | None,
    on_start: Callable[[CrawlWorker], None] | None,
    stop_signals: frozenset[signal.Signals],
    signals: Signals | None,
) -> Run:
    set_session_params(settings.session_params)
    plain = _plain_fetcher(settings, worker_id, run)
    if fetcher is None:
        fetcher = _configured_fetcher(settings)
    store.max_stored_body_bytes = settings.max_stored_body_bytes
    client = LateClient()  # plugins fetch through the worker's gate, bound below
    store.max_attempts_kept = settings.max_attempts_kept
    plugins = await _build_plugins(store, run, settings, client)
    # A dry run has no page for plugins to see.
    page_plugins = plugins if plugins.plugins and settings.fetcher != "null" else None
    async with contextlib.AsyncExitStack() as stack:
        await stack.enter_async_context(plugins)  # closed last, after the worker's last report
        # robots.txt and sitemaps always go over plain HTTP.
        await stack.enter_async_context(plain)
        page_fetcher = await stack.enter_async_context(fetcher) if fetcher else plain
        if signals is None:  # ours: handlers for this call only
            signals = Signals(stop_signals)
            stack.callback(signals.uninstall)
            signals.install(asyncio.get_running_loop())
        while True:
            run = await _wait_while_paused(store, run.id, settings.status_poll_seconds, signals)
            if signals.requested is not None or run.status is not RunStatus.RUNNING:
                break
            worker = CrawlWorker(
                store, run, page_fetcher, options=options, worker_id=worker_id,
                robots_fetcher=plain, plugins=page_plugins,
            )  # fmt: skip
            client.bind(worker.polite_client)
            exit_reason = await _run_worker(store, run, worker, on_start, signals)
            if exit_reason is not WorkerExit.RUN_NOT_RUNNING:
                break
    return await _ended(store, run.id, signals)


def _plain_fetcher(settings: Settings, worker_id: str, run: Run) -> HttpFetcher:
    """The HTTP fetcher of this process: pages (unless another fetcher is configured),
    and robots.txt and sitemaps always."""
    extra_headers = {"X-Sitesync-Worker": worker_id} if settings.worker_id_header else {}
    return HttpFetcher(
        limits=fetch_limits(settings),
        user_agent=settings.user_agent,
        max_connections=settings.concurrency,
        extra_headers=extra_headers,
        network=network_policy(settings),
        profiles=request_profiles(settings, run.config.seeds),
    )


def _configured_fetcher(settings: Settings) -> Fetcher | None:
    """The page fetcher ``settings.fetcher`` names, or None for the plain HTTP one."""
    if settings.fetcher == "browser":
        from sitesync.fetch.browser import BrowserFetcher

        return BrowserFetcher(
            limits=fetch_limits(settings),
            user_agent=settings.user_agent,
            executable_path=settings.browser_executable,
            max_pages=settings.browser_pages,
            network=network_policy(settings),
        )
    if settings.fetcher == "null":
        return NullFetcher.dry_run()
    return None


async def _ended(store: Store, run_id: int, signals: Signals) -> Run:
    """The run as this process leaves it, after what its end asks of the store."""
    if signals.requested is WorkerExit.STOP_REQUESTED:
        current = await store.get_run(run_id)
        if current.status is RunStatus.RUNNING or current.status is RunStatus.PAUSED:
            await store.transition_run(run_id, RunStatus.STOPPED, reason="stopped by user")
    ended = await store.get_run(run_id)
    if ended.status.is_terminal:
        # Pages of the previous scan found gone get their tombstones (any worker that sees
        # the end may ask: a page already gone is not marked again).
        await store.mark_gone(run_id)
    if ended.scope is not None and ended.status.is_terminal:
        # The registry remembers what this scan did on each domain, whatever its end.
        await store.record_domain_scans(run_id)
    if ended.scope is not None and ended.status is RunStatus.COMPLETED:
        # A completed scan updates its scope's stale lifecycle. Every worker that sees the
        # end asks (and so do the supervisor and the next worker, should we die first);
        # the store applies it once.
        await finish_completed_scans(store)
    return ended


async def _run_worker(
    store: Store,
    run: Run,
    worker: CrawlWorker,
    on_start: Callable[[CrawlWorker], None] | None,
    signals: Signals,
) -> WorkerExit:
    if on_start is not None:
        on_start(worker)
    signals.workers.add(worker)
    try:
        return await worker.run()
    except (ConfigError, PluginError) as exc:
        # A setting the operator must change: retrying cannot help.
        await _mark_failed(store, run.id, exc)
        raise
    except Exception as exc:
        # The store went away, or a bug: this process ends, the run does not. It stays
        # running, its leases already released (or expiring), for the next worker, for
        # 'crawl --resume', or for the watchdog (which re-queues it up to max_crash_retries).
        log.error(
            "this worker of run %d ends (%s); the run stays running for the watchdog or "
            "'sitesync crawl --resume %d'",
            run.id,
            "store unavailable" if isinstance(exc, StoreUnavailable) else type(exc).__name__,
            run.id,
        )
        raise
    finally:
        signals.workers.discard(worker)


async def _wait_while_paused(store: Store, run_id: int, poll: float, signals: Signals) -> Run:
    """A paused run keeps its state whoever joins or leaves: this process waits for
    ``sitesync resume`` (or an end), and a signal ends the wait."""
    run = await store.get_run(run_id)
    if run.status is not RunStatus.PAUSED:
        return run
    log.warning("run %d paused: waiting for 'sitesync resume %d'", run_id, run_id)
    while run.status is RunStatus.PAUSED and signals.requested is None:
        await wait_set(signals.received, poll)
        run = await store.get_run(run_id)
    return run


class Signals:
    """SIGINT and SIGTERM for a process: a signal in ``stop_signals`` stops the run, any
    other makes every worker of this process leave its run. A second one of the same kind
    kills at once: nothing committed is lost, leases and claims simply expire."""

    def __init__(self, stop_signals: frozenset[signal.Signals]) -> None:
        self.stop_signals = stop_signals
        self.requested: WorkerExit | None = None  # STOP_REQUESTED or LEFT, once signalled
        self.received = asyncio.Event()
        self.workers: set[CrawlWorker] = set()  # the workers crawling now
        self._loop: asyncio.AbstractEventLoop | None = None
        self._installed: list[signal.Signals] = []
        self._dumps = False

    def install(self, loop: asyncio.AbstractEventLoop) -> None:
        self._loop = loop
        self._dumps = taskdump.install(loop)  # kill -USR1: what every task waits on
        for sig in (signal.SIGINT, signal.SIGTERM, FOREGROUND_DONE):
            try:
                loop.add_signal_handler(sig, self._on_signal, sig)
            except (NotImplementedError, RuntimeError):  # not the main thread, or no signals
                continue
            self._installed.append(sig)

    def uninstall(self) -> None:
        assert self._loop is not None
        if self._dumps:
            taskdump.uninstall(self._loop)
        for sig in self._installed:
            self._loop.remove_signal_handler(sig)
        self._installed.clear()

    def _on_signal(self, sig: signal.Signals) -> None:
        stops = sig in self.stop_signals
        if stops:
            log.warning(
                "%s received: stopping the run; in-flight pages go back to pending", sig.name
            )
        elif sig is FOREGROUND_DONE:
            log.debug("the foreground crawl is done: leaving the run")
        else:
            log.warning(
                "%s received: leaving the run, which goes on without this process", sig.name
            )
        if self.requested is None:
            self.requested = WorkerExit.STOP_REQUESTED if stops else WorkerExit.LEFT
        for worker in self.workers:
            if self.requested is WorkerExit.STOP_REQUESTED:
                worker.stop()
            else:
                worker.leave()
        self.received.set()
        assert self._loop is not None
        self._loop.remove_signal_handler(sig)
        self._installed.remove(sig)


async def _build_plugins(
    store: Store, run: Run, settings: Settings, client: LateClient
) -> PluginPipeline:
    """The run's plugins. With ``strict_plugins`` a plugin that cannot be loaded fails the
    run before anything is fetched (the CLI checks before it even creates a run)."""
    try:
        return build_pipeline(settings, run, client=client)
    except ConfigError as exc:
        await _mark_failed(store, run.id, exc)
        raise


async def _mark_failed(store: Store, run_id: int, exc: BaseException) -> None:
    if isinstance(exc, asyncio.CancelledError | KeyboardInterrupt):
        return
    try:
        await store.transition_run(run_id, RunStatus.FAILED, reason=f"{type(exc).__name__}: {exc}")
    except Exception:  # the store may be what failed; the original error matters more
        log.exception("could not mark run %d failed", run_id)
