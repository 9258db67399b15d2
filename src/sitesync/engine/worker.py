"""A crawl worker: leases tasks from the store, fetches them concurrently, reports back.

The worker is a small orchestrator of parts with one job each, and of the side tasks that
run them, kept by name:

- ``feed`` (:class:`~sitesync.engine.feeder.LeaseFeeder`): keeps up to ``in_flight_limit``
  leases in hand, acquiring in batches and skipping hosts it already holds enough of;
  notices when the run has drained.
- ``fetch-N``: ``concurrency`` slots, each fetching one lease at a time under the host
  limiter (:class:`~sitesync.engine.page.PageAttempts`, its parts put together by
  :mod:`~sitesync.engine.pageparts`).
- ``report`` (:class:`~sitesync.engine.reporter.ReportBatcher`): commits finished attempts
  in batches (one transaction per batch), so durability costs one commit per batch
  instead of one per page.
- ``heartbeat`` and ``claims`` (:class:`~sitesync.engine.upkeep.Upkeep`): renew this
  worker's leases and sign the run alive; refresh its fair share of hosts.
- ``status`` (:class:`~sitesync.engine.ending.StatusWatcher`): reads the run's status row
  every ``status_poll`` seconds, so a pause, stop or cancel issued from another process
  reaches this one within that long. From then on no request starts (each fetch checks
  right before it begins), and leases not yet started go back to pending at once.
- ``seed``: a run not seeded yet is seeded (its sitemaps read) alongside.

What the worker learns about hosts is kept in the store by
:class:`~sitesync.engine.hoststate.HostStateSync`.

At most ``in_flight_limit`` tasks are leased, fetched or waiting to be committed at any
time; that is all a SIGKILL can cost, and those tasks are fetched again after their leases
expire, or at once by the next worker of the run on the same machine, which proves the
killed process gone (``liveness``) and has the store release its leases and claims.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import secrets
import socket
from collections.abc import Awaitable

from sitesync import logs
from sitesync.engine.claims import ClaimKeeper
from sitesync.engine.deferral import Deferral
from sitesync.engine.ending import Ending, StatusWatcher, WorkerExit
from sitesync.engine.feeder import LeaseFeeder
from sitesync.engine.hoststate import HostStateSync
from sitesync.engine.liveness import this_process
from sitesync.engine.options import WorkerOptions
from sitesync.engine.page import PageAttempts
from sitesync.engine.pageparts import page_attempts, page_revalidation
from sitesync.engine.pluginstep import ArtifactProcessor
from sitesync.engine.reporter import ReportBatcher, WorkerStats, one_line
from sitesync.engine.seeding import seed_run
from sitesync.engine.upkeep import Upkeep
from sitesync.engine.waits import cancel_and_wait, wait_set
from sitesync.engine.wiring import live_pace
from sitesync.fetch.base import Fetcher
from sitesync.fetch.gate import RequestGate
from sitesync.fetch.polite import PoliteClient
from sitesync.fetch.text import safe_text
from sitesync.frontier.frontier import Frontier
from sitesync.models import Lease, Run, RunStatus, TaskReport
from sitesync.plugins.offloop import PageWork
from sitesync.store.base import Store

__all__ = ["CrawlWorker", "WorkerExit", "WorkerOptions", "WorkerStats", "new_worker_id"]

log = logging.getLogger(__name__)


def new_worker_id() -> str:
    return f"{socket.gethostname()}-{os.getpid()}-{secrets.token_hex(2)}"


class CrawlWorker:
    def __init__(
        self,
        store: Store,
        run: Run,
        fetcher: Fetcher,
        *,
        options: WorkerOptions | None = None,
        worker_id: str | None = None,
        robots_fetcher: Fetcher | None = None,
        plugins: ArtifactProcessor | None = None,
    ) -> None:
        self.store = store
        self.run_id = run.id
        self._run = run
        self.fetcher = fetcher
        self.options = options = options or WorkerOptions()
        self.worker_id = worker_id = worker_id or new_worker_id()
        self.frontier = Frontier(store, run)
        self.stats = WorkerStats()
        self._ending = Ending()
        self._identity = this_process()
        # robots.txt and sitemaps are plain HTTP even when pages are rendered in a browser.
        self._plain_fetcher = robots_fetcher or fetcher
        self._hosts = HostStateSync(
            store, run_id=run.id, robots_fetcher=self._plain_fetcher,
            user_agent=getattr(fetcher, "user_agent", "*"), options=options,
        )  # fmt: skip
        self._limiter = self._hosts.limiter
        self.claims = self._claim_keeper()
        self._gate = self._request_gate()
        self.polite_client = self._polite_client()
        # A large page's CPU work runs off the loop, within parse_timeout
        # (sitesync.plugins.offloop); a worker on its way out waits for none of it.
        self._page_work = PageWork(budget=options.parse_timeout, leaving=self._ending.done)
        self._revalidation = page_revalidation(store, fetcher, options)  # feeder: on_leased
        self._attempts = self._page_attempts(plugins)
        self._feeder, self._reporter = self._lease_flow()
        self._upkeep = Upkeep(
            store, run_id=run.id, worker_id=worker_id, identity=self._identity,
            options=options, claims=self.claims, on_hosts_changed=self._feeder.wake,
        )  # fmt: skip
        self._feeder.on_surplus_drained = self._upkeep.look_now
        self._feeder.on_leased = self._revalidation.prefetch
        self._status = StatusWatcher(
            store, run=run, frontier=self.frontier, poll=options.status_poll,
            ending=self._ending, on_settings=self._retune,
        )  # fmt: skip
        self._quiet = asyncio.Event()  # set whenever no request of this worker is under way
        self._side: dict[str, asyncio.Task[None]] = {}  # side tasks by name

    def _request_gate(self) -> RequestGate:
        """The one gate every request of this worker starts at (fetch/gate.py): the pages',
        and those of the polite client (sitemaps, plugins' downloads, the browser's
        subresources)."""
        return RequestGate(
            limiter=self._limiter, robots=self._hosts.robots, may_request=self.claims.may_request,
            confirm=self.claims.confirm, keep_pace=self._hosts.keep_pace,
        )  # fmt: skip

    def _polite_client(self) -> PoliteClient:
        client = PoliteClient(self._plain_fetcher, self._gate)
        # The browser's subresources too, at its guard proxy (fetch/browser_gate.py).
        bind_gate = getattr(self.fetcher, "bind_gate", None)
        if bind_gate is not None:
            bind_gate(client.admit)
        return client

    def _claim_keeper(self) -> ClaimKeeper:
        return ClaimKeeper(
            self.store,
            run_id=self.run_id,
            worker_id=self.worker_id,
            claim_seconds=self.options.claim_seconds,
            worker_ttl=self.options.claim_seconds,
            safety=self.options.claim_safety,
            max_hosts=self.options.max_claims_per_worker,
            on_new_host=self._hosts.load,
            before_letting_go=self._hosts.save_next_starts,
            # A robots.txt, sitemap or redirect-hop request is no task: the store cannot see
            # it, so the host it is under way on is named, and kept, at each refresh.
            busy_hosts=self._hosts.limiter.busy_hosts,
            siblings=self.options.siblings,
        )

    def _lease_flow(self) -> tuple[LeaseFeeder, ReportBatcher]:
        """The feeder that leases tasks, and the batcher that reports them (and so lets
        the feeder lease more)."""
        feeder = LeaseFeeder(
            self.store, run_id=self.run_id, worker_id=self.worker_id, options=self.options,
            limiter=self._limiter, claims=self.claims, ending=self._ending,
        )  # fmt: skip
        reporter = ReportBatcher(
            self.store, run_id=self.run_id, options=self.options, stats=self.stats,
            let_go=feeder.let_go, admitted=self.frontier.admitted,
        )  # fmt: skip
        return feeder, reporter

    def _page_attempts(self, plugins: ArtifactProcessor | None) -> PageAttempts:
        """One attempt at one leased URL, its parts put together by engine/pageparts.py."""
        return page_attempts(
            store=self.store, frontier=self.frontier, claims=self.claims, gate=self._gate,
            fetcher=self.fetcher, client=self.polite_client, revalidation=self._revalidation,
            plugins=plugins, dead_hosts=self._hosts.dead_hosts, work=self._page_work,
            halted=self._ending.leaving, worker_id=self.worker_id, options=self.options,
        )  # fmt: skip

    def _retune(self, run: Run) -> None:
        """The run's politeness changed (``sitesync settings RUN --set``): every host is
        paced by it from the next request on."""
        concurrency, delay, adaptive = live_pace(run.settings or {}, self.options)
        self._limiter.retune(concurrency=concurrency, delay=delay, adaptive=adaptive)
        log.info(
            "run %d: politeness now %g s between requests, %d at once per host (settings "
            "version %d)", run.id, delay, concurrency, run.settings_version,
        )  # fmt: skip

    @property
    def run_status(self) -> RunStatus:
        """The run's status as last seen in the store."""
        return self._ending.run_status

    def stop(self) -> None:
        """Ask the worker to stop: in-flight work is released to PENDING."""
        self._ending.finish(WorkerExit.STOP_REQUESTED)

    def leave(self) -> None:
        """Ask the worker to leave the run (which goes on without it): fetches under way
        finish within ``drain_timeout`` and are committed, the rest is released."""
        self._ending.finish(WorkerExit.LEFT)

    async def run(self) -> WorkerExit:
        """Crawl until the run drains, stop() is called, or the run leaves ``running``."""
        me = self._identity
        await self.store.register_worker(
            self.run_id, worker_id=self.worker_id, host=me.host, pid=me.pid,
            boot_id=me.boot_id, proc_start=me.proc_start,
        )  # fmt: skip
        # Before the first acquire: a crashed predecessor on this machine (``crawl
        # --resume`` after kill -9) hands its tasks and hosts over now, not at expiry.
        await self._upkeep.release_gone_workers()
        self._spawn(self._feeder.feed(), "feed")
        self._spawn(self._reporter.flush_forever(), "report")
        self._spawn(self._upkeep.heartbeat(), "heartbeat")
        self._spawn(self._status.watch(), "status")
        self._spawn(self._upkeep.rebalance_claims(), "claims")
        for n in range(self.options.concurrency):
            self._spawn(self._fetch_slot(), f"fetch-{n}")
        if self._run.seeded_at is None:
            self._spawn(self._seed(), "seed")
        try:
            await self._ending.done.wait()
            if self._ending.drains():
                await self._drain()
        finally:
            await self._shutdown()
        if self._ending.failure is not None:
            raise self._ending.failure
        assert self._ending.reason is not None
        return self._ending.reason

    # -- supervision ----------------------------------------------------------------------

    def _spawn(self, coro: Awaitable[None], name: str) -> None:
        task = asyncio.ensure_future(coro)
        task.set_name(name)
        task.add_done_callback(self._watch)
        self._side[name] = task

    def _watch(self, task: asyncio.Task[None]) -> None:
        if task.cancelled():
            return
        exc = task.exception()
        if exc is not None:
            self._ending.failed(task.get_name(), exc)

    async def _seed(self) -> None:
        await seed_run(self.store, self.frontier)
        self._feeder.wake()

    async def _drain(self) -> None:
        """Take nothing new; give fetches already under way a bounded time to finish.

        Their results still go through the fenced report: accepted if the lease is still
        this worker's, rejected (and logged) if someone took it over. Leases not yet
        started go back to pending now, not when the drain ends.
        """
        self._side["feed"].cancel()
        if "seed" in self._side:
            # Sitemap requests are requests too; the next worker seeds again (dedup).
            self._side["seed"].cancel()
        await self._feeder.give_back_waiting()
        # Only requests already started are waited for. A slot still waiting for its host's
        # turn (a whole delay, far longer once adaptive politeness slowed the host) starts
        # nothing now: waiting for it would spend the drain, and a fetch still under way
        # when the drain ran out would be cut off and its page fetched again after the
        # resume. Those slots are cancelled by the shutdown, their untried leases released.
        if self._attempts.under_way:
            self._quiet.clear()
            await wait_set(self._quiet, self.options.drain_timeout)

    async def _shutdown(self) -> None:
        # Slots and feeder stop first, so nothing new is fetched or leased; then what was
        # fetched is committed, and only then is everything still held released.
        others = [task for name, task in self._side.items() if name != "report"]
        await cancel_and_wait(others)
        self._page_work.close()
        # The reporter is stopped between two writes, never cut off in one: a batch it had
        # taken would be lost, and its pages fetched again by whoever comes next.
        # (A store that does not answer is waited on for ``drain_timeout`` at most.)
        self._reporter.close()
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(
                asyncio.gather(self._side["report"], return_exceptions=True),
                self.options.drain_timeout,
            )
        with contextlib.suppress(Exception):
            await self._reporter.flush()
        await self._let_go_of_everything()

    async def _let_go_of_everything(self) -> None:
        """Leases, counters, what was learned of the hosts, claims: each step on its own, so
        that one failing (the store gone) does not keep the next from being tried."""
        with contextlib.suppress(Exception):
            released = await self.store.release_worker(self.run_id, worker_id=self.worker_id)
            if released:
                log.info("released %d in-flight tasks back to pending", released)
        with contextlib.suppress(Exception):
            drained = self._ending.reason is WorkerExit.DRAINED
            await self.store.flush_host_stats(self.run_id, final=drained)
        with contextlib.suppress(Exception):
            # A pause learned just before a stop must outlive this worker: the next holder
            # of the host reads it from the store.
            await self._hosts.save_pauses()
        with contextlib.suppress(Exception):
            await self._hosts.save_paces(self.claims.hosts)
        with contextlib.suppress(Exception):
            await self.claims.release_all()
        if self._ending.failure is None:
            # Recorded only for a worker that leaves or ends cleanly: the watchdog re-queues
            # a run its workers left without spending a crash retry, and a worker that
            # failed did not leave, it crashed.
            with contextlib.suppress(Exception):
                await self.store.stop_worker(self.worker_id)

    # -- fetching -------------------------------------------------------------------------

    async def _fetch_slot(self) -> None:
        while True:
            lease = await self._feeder.queue.get()
            try:
                await self._fetch_one(lease)
            finally:
                self._feeder.queue.done(lease.host)
                self._attempts.under_way.discard(lease.task_id)
                if not self._attempts.under_way:
                    self._quiet.set()

    async def _fetch_one(self, lease: Lease) -> None:
        """Attempt ``lease``; its report is queued (or the lease given back) on return."""
        # Every line logged while this page is attempted names its host and URL.
        with logs.about(host=lease.host, url=safe_text(lease.url)):
            await self._attempt_and_report(lease)

    async def _attempt_and_report(self, lease: Lease) -> None:
        try:
            outcome = await self._attempts.attempt(lease)
        except Exception as exc:
            # A bug on one page (a parser crash, a fetcher fault) is recorded on that
            # page and retried like any failure; it never takes the crawl down.
            log.exception("internal error on %s", safe_text(lease.url))
            outcome = TaskReport(
                lease=lease,
                ok=False,
                worker_id=self.worker_id,
                ended_at=self.store.now(),
                error=f"internal error: {one_line(exc)}",
                retry_delay=self.options.retry.delay(lease.attempt_count),
            )
        if isinstance(outcome, Deferral):
            log.debug("put off for %.1f s", outcome.until - self.store.now())
            await self.store.release(self.run_id, [lease], not_before=outcome.until)
            self._feeder.let_go(lease.host)
        else:
            if log.isEnabledFor(logging.DEBUG):
                log.debug("attempt %d: %s", lease.attempt_count, _told(outcome))
            self._reporter.add(outcome)


def _told(report: TaskReport) -> str:
    """One attempt's ending, as a debug line tells it."""
    if report.ok:
        return f"HTTP {report.http_status}, {report.bytes_fetched} bytes"
    return f"failed: {report.error or report.outcome}"
