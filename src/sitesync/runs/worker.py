"""A crawl worker: leases tasks from the store, fetches them concurrently, reports back.

Side tasks, each named and supervised:

- ``feed``: keeps up to ``in_flight_limit`` leases in hand, acquiring in batches and
  skipping hosts it already holds enough of; notices when the run has drained.
- ``fetch-N``: ``concurrency`` slots, each fetching one lease at a time under the host limiter.
- ``report``: commits finished attempts in batches (one transaction per batch), so
  durability costs one commit per batch instead of one per page.
- ``heartbeat``: renews this worker's leases and signs the run alive.
- ``status``: reads the run's status row every ``status_poll`` seconds, so a pause, stop
  or cancel issued from another process reaches this one within that long. From then on
  no request starts (each fetch checks right before it begins), and leases not yet
  started go back to pending at once.

At most ``in_flight_limit`` tasks are leased, fetched or waiting to be committed at any
time; that is all a SIGKILL can cost, and those tasks are fetched again after their leases
expire, or at once by the next worker of the run on the same machine, which proves the
killed process gone (``liveness``) and has the store release its leases and claims.
"""

from __future__ import annotations

import asyncio
import contextlib
import enum
import logging
import os
import secrets
import socket
import time
from collections import Counter
from collections.abc import Awaitable
from dataclasses import dataclass, field

from sitesync.errors import StoreUnavailable
from sitesync.fetch.adaptive import LearnedPace, PaceSettings
from sitesync.fetch.base import Fetcher
from sitesync.fetch.polite import PoliteClient
from sitesync.fetch.politeness import HostLimiter
from sitesync.fetch.robots import RobotsCache
from sitesync.fetch.text import safe_text
from sitesync.frontier.frontier import Frontier
from sitesync.frontier.retry import RetryPolicy
from sitesync.models import Lease, ReportVerdict, Run, RunStatus, TaskReport
from sitesync.runs.claims import ClaimKeeper
from sitesync.runs.deadhosts import DeadHosts
from sitesync.runs.dispatch import HostDispatcher
from sitesync.runs.liveness import is_gone, this_process
from sitesync.runs.page import DEFER_AFTER_SECONDS, ArtifactProcessor, Deferral, PageAttempts
from sitesync.runs.seeding import SitemapReader, seed_run
from sitesync.runs.waits import wait_set
from sitesync.store.base import Store
from sitesync.urls import url_host

log = logging.getLogger(__name__)


class WorkerExit(enum.StrEnum):
    DRAINED = "drained"  # nothing pending or assigned: the run is complete
    STOP_REQUESTED = "stop_requested"  # stop() was called: the run is being stopped (Ctrl-C)
    LEFT = "left"  # leave() was called: this process goes, the run goes on without it
    RUN_NOT_RUNNING = "run_not_running"  # another process paused, stopped or cancelled the run


@dataclass(frozen=True, slots=True)
class WorkerOptions:
    concurrency: int = 16
    per_host_concurrency: int = 1  # 0 = no per-host cap
    per_host_delay: float = 1.0  # seconds between request starts on one host
    # Adaptive politeness (its delay and concurrency come from the two above).
    adaptive: PaceSettings = field(default_factory=lambda: PaceSettings(enabled=False))
    lease_seconds: float = 60.0
    in_flight_limit: int = 0  # 0 = twice the concurrency
    report_batch: int = 256
    report_interval: float = 0.05
    poll_interval: float = 0.5
    status_poll: float = 0.5  # seconds between reads of the run's status (pause, stop)
    drain_timeout: float = 10.0  # run left "running" elsewhere: let in-flight fetches finish
    retry: RetryPolicy = field(default_factory=RetryPolicy)
    respect_robots: bool = True
    robots_recheck_seconds: float = 300.0
    dead_host_attempts: int = 3  # 0 = never end a host's tasks early
    dead_host_recheck: tuple[float, ...] = (5.0, 15.0, 30.0)
    sitemaps: bool = True
    follow_offsite_seed_redirects: bool = False
    sitemap_max_bytes: int = 50 * 1024 * 1024
    max_crawl_delay: float = 60.0
    max_retry_after: float = 3600.0
    heartbeat_seconds: float = 0.0  # 0 = a third of the shorter of lease and claim
    claim_seconds: float = 120.0
    claim_safety: float = 65.0  # a fetch starts only while its host's claim has this left
    max_claims: int | None = None
    stats_flush_interval: int = 100  # pages between per-host counter flushes; 0 = at end
    max_links_per_page: int | None = 5000  # links admitted per page; None = all
    max_parse_bytes: int | None = 4 * 1024 * 1024  # HTML parsed per page; None = all

    @property
    def heartbeat(self) -> float:
        if self.heartbeat_seconds > 0:
            return self.heartbeat_seconds
        return max(0.05, min(10.0, self.lease_seconds / 3, self.claim_seconds / 3))

    @property
    def held_limit(self) -> int:
        return self.in_flight_limit or 2 * self.concurrency

    @property
    def held_per_host(self) -> int:
        """Leases held per host beyond which the worker asks for other hosts' tasks."""
        if self.per_host_concurrency <= 0:
            return self.held_limit
        return 2 * self.per_host_concurrency


@dataclass(slots=True)
class WorkerStats:
    fetched: int = 0  # attempts that got an HTTP response
    errors: int = 0  # attempts that failed (network, timeout, 5xx, ...)
    committed: int = 0
    lease_lost: int = 0  # late reports rejected because the lease was taken over
    started: float = field(default_factory=time.monotonic)


#: Statuses set elsewhere after which fetches under way may finish (paused: "in-flight ones
#: finish"; completed: nothing left to protect). Stopped, cancelled and failed runs get
#: their in-flight work back to PENDING at once.
_DRAIN_ON = frozenset({RunStatus.PAUSED, RunStatus.COMPLETED})


#: Longest wait before a worker looks at its fair share of hosts again.
CLAIM_REFRESH_SECONDS = 2.0


def _one_line(exc: BaseException) -> str:
    """An exception as one storable line (its message may quote server data)."""
    return safe_text(" ".join(f"{type(exc).__name__}: {exc}".split()))


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
        self.options = options or WorkerOptions()
        self.worker_id = worker_id or new_worker_id()
        self.frontier = Frontier(store, run)
        self.stats = WorkerStats()
        self._limiter = HostLimiter(
            concurrency=self.options.per_host_concurrency,
            delay=self.options.per_host_delay,
            max_delay=self.options.max_crawl_delay,
            adaptive=self.options.adaptive,
        )
        # robots.txt and sitemaps are plain HTTP even when pages are rendered in a browser.
        self._plain_fetcher = robots_fetcher or fetcher
        self._robots = (
            RobotsCache(
                self._plain_fetcher,
                user_agent=getattr(fetcher, "user_agent", "*"),
                error_ttl=self.options.robots_recheck_seconds,
                persist=self._persist_robots,
            )
            if self.options.respect_robots
            else None
        )
        self._dead_hosts = DeadHosts(
            store,
            limiter=self._limiter,
            robots=self._robots,
            attempts=self.options.dead_host_attempts,
            recheck=self.options.dead_host_recheck,
        )
        self.claims = ClaimKeeper(
            store,
            run_id=run.id,
            worker_id=self.worker_id,
            claim_seconds=self.options.claim_seconds,
            worker_ttl=self.options.claim_seconds,
            safety=self.options.claim_safety,
            max_hosts=self.options.max_claims,
            on_new_host=self._load_host_state,
            before_letting_go=self._save_next_starts,
        )
        # Everything but the page fetch itself (sitemaps, plugins' downloads) asks through
        # this: the same limiter, robots.txt and claims as the pages.
        self.polite_client = PoliteClient(
            self._plain_fetcher,
            limiter=self._limiter,
            robots=self._robots,
            may_request=self.claims.may_request,
            keep_pace=self._keep_pace,
        )
        self._attempts = PageAttempts(
            store=store,
            claims=self.claims,
            fetcher=fetcher,
            frontier=self.frontier,
            limiter=self._limiter,
            robots=self._robots,
            retry=self.options.retry,
            max_retry_after=self.options.max_retry_after,
            plugins=plugins,
            halted=self._leaving,
            max_links=self.options.max_links_per_page,
            max_parse_bytes=self.options.max_parse_bytes,
            dead_hosts=self._dead_hosts,
            sitemaps=SitemapReader(
                client=self.polite_client,
                limiter=self._limiter,
                robots=self._robots,
                scope=lambda: self.frontier.scope,
                max_bytes=self.options.sitemap_max_bytes,
            )
            if self.options.sitemaps
            else None,
            follow_offsite_seed_redirects=self.options.follow_offsite_seed_redirects,
            worker_id=self.worker_id,
        )
        self._queue = HostDispatcher(self._limiter)
        self._held: Counter[str] = Counter()
        self._held_total = 0
        self._reports: list[TaskReport] = []
        self._report_now = asyncio.Event()
        self._closing = False  # shutting down: the reporter ends after its current write
        self._room = asyncio.Event()
        self._done = asyncio.Event()
        self._exit: WorkerExit | None = None
        self._quiet = asyncio.Event()  # set whenever no request of this worker is under way
        self._failure: BaseException | None = None
        self._uncounted = 0  # pages reported since the last per-host counter flush
        self.run_status = RunStatus.RUNNING  # as last seen in the store
        self._seeder: asyncio.Task[None] | None = None
        self._identity = this_process()

    def stop(self) -> None:
        """Ask the worker to stop: in-flight work is released to PENDING."""
        self._finish(WorkerExit.STOP_REQUESTED)

    def leave(self) -> None:
        """Ask the worker to leave the run (which goes on without it): fetches under way
        finish within ``drain_timeout`` and are committed, the rest is released."""
        self._finish(WorkerExit.LEFT)

    async def run(self) -> WorkerExit:
        """Crawl until the run drains, stop() is called, or the run leaves ``running``."""
        me = self._identity
        await self.store.register_worker(
            self.run_id, worker_id=self.worker_id, host=me.host, pid=me.pid,
            boot_id=me.boot_id, proc_start=me.proc_start,
        )  # fmt: skip
        # Before the first acquire: a crashed predecessor on this machine (``crawl
        # --resume`` after kill -9) hands its tasks and hosts over now, not at expiry.
        await self._release_gone_workers()
        side = [
            self._spawn(self._feed(), "feed"),
            self._spawn(self._flush_reports_forever(), "report"),
            self._spawn(self._heartbeat(), "heartbeat"),
            self._spawn(self._watch_status(), "status"),
            self._spawn(self._rebalance_claims(), "claims"),
            *(
                self._spawn(self._fetch_slot(), f"fetch-{n}")
                for n in range(self.options.concurrency)
            ),
        ]
        if self._run.seeded_at is None:
            self._seeder = self._spawn(self._seed(), "seed")
            side.append(self._seeder)
        try:
            await self._done.wait()
            if self._failure is None and self._drains():
                await self._drain(side[0])
        finally:
            await self._shutdown(side)
        if self._failure is not None:
            raise self._failure
        assert self._exit is not None
        return self._exit

    # -- supervision ----------------------------------------------------------------------

    def _spawn(self, coro: Awaitable[None], name: str) -> asyncio.Task[None]:
        task = asyncio.ensure_future(coro)
        task.set_name(name)
        task.add_done_callback(self._watch)
        return task

    def _watch(self, task: asyncio.Task[None]) -> None:
        if task.cancelled():
            return
        exc = task.exception()
        if exc is not None and self._failure is None:
            log.error("worker task %s died: %r", task.get_name(), exc)
            self._failure = exc
            self._done.set()

    def _leaving(self) -> bool:
        """Whether this worker is on its way out: no new request may start."""
        return self._exit is not None

    def _drains(self) -> bool:
        """Whether fetches under way may finish: a worker that leaves lets them (a page
        fetched once is not fetched again by whoever takes its host over), and so does one
        whose run was paused or completed elsewhere."""
        if self._exit is WorkerExit.LEFT:
            return True
        return self._exit is WorkerExit.RUN_NOT_RUNNING and self.run_status in _DRAIN_ON

    def _finish(self, reason: WorkerExit) -> None:
        if self._exit is None:
            self._exit = reason
        self._done.set()

    async def _drain(self, feeder: asyncio.Task[None]) -> None:
        """Take nothing new; give fetches already under way a bounded time to finish.

        Their results still go through the fenced report: accepted if the lease is still
        this worker's, rejected (and logged) if someone took it over. Leases not yet
        started go back to pending now, not when the drain ends.
        """
        feeder.cancel()
        if self._seeder is not None:
            # Sitemap requests are requests too; the next worker seeds again (dedup).
            self._seeder.cancel()
        await self._give_back(self._queue.clear())
        # Only requests already started are waited for. A slot still waiting for its host's
        # turn (a whole delay, far longer once adaptive politeness slowed the host) starts
        # nothing now: waiting for it would spend the drain, and a fetch still under way
        # when the drain ran out would be cut off and its page fetched again after the
        # resume. Those slots are cancelled by the shutdown, their untried leases released.
        if self._attempts.under_way:
            self._quiet.clear()
            await wait_set(self._quiet, self.options.drain_timeout)

    async def _give_back(self, leases: list[Lease]) -> None:
        if not leases:
            return
        try:
            released = await self.store.release(self.run_id, leases)
        except Exception as exc:  # the shutdown's release_worker gives them back later
            log.warning("could not give back %d leased tasks yet: %s", len(leases), exc)
            return
        for lease in leases:
            self._let_go(lease.host)
        log.info("gave back %d leased tasks not yet started", released)

    async def _shutdown(self, side: list[asyncio.Task[None]]) -> None:
        # Slots and feeder stop first, so nothing new is fetched or leased; then what was
        # fetched is committed, and only then is everything still held released.
        for task in side:
            if task.get_name() != "report":
                task.cancel()
        await asyncio.gather(*side[:1], *side[2:], return_exceptions=True)
        # The reporter is stopped between two writes, never cut off in one: a batch it had
        # taken would be lost, and its pages fetched again by whoever comes next.
        # (A store that does not answer is waited on for ``drain_timeout`` at most.)
        self._closing = True
        self._report_now.set()
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(
                asyncio.gather(side[1], return_exceptions=True), self.options.drain_timeout
            )
        with contextlib.suppress(Exception):
            await self._flush_reports()
        with contextlib.suppress(Exception):
            released = await self.store.release_worker(self.run_id, worker_id=self.worker_id)
            if released:
                log.info("released %d in-flight tasks back to pending", released)
        with contextlib.suppress(Exception):
            await self.store.flush_host_stats(self.run_id, final=self._exit is WorkerExit.DRAINED)
        with contextlib.suppress(Exception):
            # A pause learned just before a stop must outlive this worker: the next holder
            # of the host reads it from the store.
            for host in self._limiter.paused_hosts():
                await self.store.save_host_pause(host, until=self._limiter.paused_until(host))
        with contextlib.suppress(Exception):
            await self._save_paces(self.claims.hosts)
        with contextlib.suppress(Exception):
            await self.claims.release_all()
        if self._failure is None:
            # Recorded only for a worker that leaves or ends cleanly: the watchdog re-queues
            # a run its workers left without spending a crash retry, and a worker that
            # failed did not leave, it crashed.
            with contextlib.suppress(Exception):
                await self.store.stop_worker(self.worker_id)

    # -- feeding --------------------------------------------------------------------------

    async def _feed(self) -> None:
        options = self.options
        min_batch = max(1, options.held_limit // 4)
        while True:
            room = options.held_limit - self._held_total
            if room >= min_batch or (room > 0 and self._held_total == 0):
                leases = await self.store.acquire(
                    self.run_id,
                    worker_id=self.worker_id,
                    limit=room,
                    lease_seconds=options.lease_seconds,
                    exclude_hosts=self._hosts_to_skip(),
                    claimed_only=True,
                    per_host=options.held_per_host if options.per_host_concurrency else None,
                )
                for lease in leases:
                    self._held[lease.host] += 1
                    self._held_total += 1
                    self._queue.put(lease)
                if leases:
                    continue
                # Nothing from the hosts we hold: maybe new hosts have work, or ours ran dry.
                await self.claims.refresh()
                if self._held_total == 0:
                    await self._wait_for_work()
                    continue
            self._room.clear()
            # Not asyncio.wait_for: it can swallow the shutdown's cancel (see runs.waits).
            await wait_set(self._room, options.poll_interval)

    def _hosts_to_skip(self) -> list[str]:
        """Hosts this worker holds enough of, or that asked us to back off."""
        full = [h for h, n in self._held.items() if n >= self.options.held_per_host]
        paused = self._limiter.paused_hosts(longer_than=DEFER_AFTER_SECONDS)
        return [*full, *paused, *self.claims.surplus]

    async def _seed(self) -> None:
        await seed_run(self.store, self.frontier)
        self._room.set()

    async def _wait_for_work(self) -> None:
        """Nothing eligible and nothing in hand: finish, or sleep until something may be."""
        run = await self.store.get_run(self.run_id)
        if run.status is not RunStatus.RUNNING:
            self.run_status = run.status
            self._finish(WorkerExit.RUN_NOT_RUNNING)
            return
        if run.counters.pending == 0 and run.counters.assigned == 0:
            if await self.store.complete_if_drained(self.run_id):
                self._finish(WorkerExit.DRAINED)
            return
        # Pending tasks waiting for a retry time, or tasks leased by someone else whose
        # leases may yet expire: look again soon.
        wait = self.options.poll_interval
        next_at = await self.store.next_eligible_at(self.run_id)
        if next_at is not None:
            wait = min(wait, max(0.01, next_at - time.time()))
        await asyncio.sleep(wait)

    # -- fetching -------------------------------------------------------------------------

    async def _fetch_slot(self) -> None:
        while True:
            lease = await self._queue.get()
            try:
                await self._fetch_one(lease)
            finally:
                self._queue.done(lease.host)
                self._attempts.under_way.discard(lease.task_id)
                if not self._attempts.under_way:
                    self._quiet.set()
            if len(self._reports) >= self.options.report_batch:
                self._report_now.set()

    async def _fetch_one(self, lease: Lease) -> None:
        """Attempt ``lease``; its report is queued (or the lease given back) on return."""
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
                ended_at=time.time(),
                error=f"internal error: {_one_line(exc)}",
                retry_delay=self.options.retry.delay(lease.attempt_count),
            )
        if isinstance(outcome, Deferral):
            await self.store.release(self.run_id, [lease], not_before=outcome.until)
            self._let_go(lease.host)
        else:
            self._count(outcome)
            self._reports.append(outcome)

    def _count(self, report: TaskReport) -> None:
        if report.http_status > 0:
            self.stats.fetched += 1
        if not report.ok:
            self.stats.errors += 1

    def _let_go(self, host: str) -> None:
        self._held[host] -= 1
        self._held_total -= 1
        self._room.set()

    # -- reporting ------------------------------------------------------------------------

    async def _flush_reports_forever(self) -> None:
        while not self._closing:
            await wait_set(self._report_now, self.options.report_interval)
            self._report_now.clear()
            await self._flush_reports()

    async def _flush_reports(self) -> None:
        if not self._reports:
            return
        batch, self._reports = self._reports, []
        try:
            verdicts = await self.store.report(self.run_id, batch)
        except StoreUnavailable:
            raise  # the store is down, not the batch: nothing to blame on one report
        except Exception as exc:
            # One report the store refuses must not take its batch (and the worker) with it.
            log.warning(
                "a batch of %d reports failed (%s); storing them one by one",
                len(batch), _one_line(exc),
            )  # fmt: skip
            verdicts = [await self._report_alone(report) for report in batch]
        for report, verdict in zip(batch, verdicts, strict=True):
            self._held[report.lease.host] -= 1
            self._held_total -= 1
            if verdict is ReportVerdict.LEASE_LOST:
                self.stats.lease_lost += 1
                log.warning(
                    "late result for %s rejected: its lease expired and was taken over",
                    report.lease.url,
                )
            else:
                self.stats.committed += 1
                self._uncounted += 1
        self._room.set()
        interval = self.options.stats_flush_interval
        if interval and self._uncounted >= interval:
            self._uncounted = 0
            await self.store.flush_host_stats(self.run_id)

    async def _report_alone(self, report: TaskReport) -> ReportVerdict:
        """Store one report; if the store refuses it, fail its task with the reason instead.

        The bare failure carries nothing the page produced (records, links), so what the store
        refused cannot be in it; if even that fails, the store itself is in trouble and the
        exception goes up.
        """
        try:
            [verdict] = await self.store.report(self.run_id, [report])
            return verdict
        except StoreUnavailable:
            raise
        except Exception as exc:
            error = f"report could not be stored: {_one_line(exc)}"
            log.error("%s: %s", report.lease.url, error)
        bare = TaskReport(
            lease=report.lease, ok=False, http_status=report.http_status, error=error,
            give_up=True, outcome=report.outcome, final_url=report.final_url,
        )  # fmt: skip
        [verdict] = await self.store.report(self.run_id, [bare])
        return verdict

    # -- heartbeat ------------------------------------------------------------------------

    async def _rebalance_claims(self) -> None:
        """Claims are refreshed more often than leases are renewed, so that hosts pass
        quickly to workers that join (or leave) a run."""
        interval = min(self.options.heartbeat, CLAIM_REFRESH_SECONDS)
        while True:
            await asyncio.sleep(interval)
            await self._release_gone_workers()
            await self.claims.refresh()
            self._room.set()

    async def _release_gone_workers(self) -> None:
        """Workers of this run on this machine whose process is provably gone give up
        their leases and claims now; those elsewhere are recovered at expiry."""
        for worker in await self.store.list_workers(self.run_id):
            if is_gone(worker, self._identity):
                ended = await self.store.release_gone_worker(self.run_id, worker)
                log.warning(
                    "worker %s (pid %d) is gone: %d of its tasks and its hosts are free again",
                    worker.worker_id, worker.pid, ended,
                )  # fmt: skip

    async def _heartbeat(self) -> None:
        while True:
            await asyncio.sleep(self.options.heartbeat)
            await self.store.renew_leases(
                self.run_id, worker_id=self.worker_id, lease_seconds=self.options.lease_seconds
            )
            await self.store.heartbeat_run(self.run_id)

    async def _watch_status(self) -> None:
        """One row read per poll, apart from the heartbeat's heavier writes, so that a
        pause reaches the fetch slots within ``status_poll`` seconds."""
        while True:
            await asyncio.sleep(self.options.status_poll)
            run = await self.store.get_run(self.run_id)
            self.frontier.refresh(run)
            if run.status is not RunStatus.RUNNING:
                self.run_status = run.status
                self._finish(WorkerExit.RUN_NOT_RUNNING)

    # -- politeness state shared through the store ------------------------------------------

    async def _load_host_state(self, host: str) -> None:
        """A host just claimed: honour what earlier holders learned about it."""
        await self._dead_hosts.load(self.run_id, host)
        state = await self.store.get_host_state(host)
        if state is None:
            return
        if state.paused_until > time.time():
            self._limiter.pause(host, state.paused_until)
        if state.pace_delay is not None and state.pace_since is not None and state.pace_reason:
            self._limiter.restore(
                host,
                LearnedPace(
                    delay=state.pace_delay,
                    concurrency=state.pace_concurrency or 1,
                    reason=state.pace_reason,
                    since=state.pace_since,
                ),
            )
        if (
            self._robots is not None
            and state.robots_origin
            and state.robots_status is not None
            and state.robots_expires_at
        ):
            self._robots.preload(
                state.robots_origin,
                status=state.robots_status,
                body=state.robots_body,
                expires_at=state.robots_expires_at,
            )

    async def _save_next_starts(self, hosts: list[str]) -> None:
        """Store when each host may next be asked, before its claim may pass to another
        worker: the delay then holds across the hand-over, not only within one worker."""
        now, mono = time.time(), time.monotonic()
        for host in hosts:
            wait = self._limiter.next_start(host) - mono
            if wait > 0:
                await self.store.save_host_pause(host, until=now + wait)
        await self._save_paces(hosts)  # and the adaptive pace: the next holder keeps it

    async def _save_paces(self, hosts: list[str]) -> None:
        """Store each host's adaptive pace as it is now, before the host may pass to another
        worker: the next holder continues from it (recovery included)."""
        for host in hosts:
            learned = self._limiter.learned(host)
            if learned is not None:
                await self._keep_pace(host, learned)

    async def _keep_pace(self, host: str, learned: LearnedPace) -> None:
        await self.store.save_host_pace(
            host,
            delay=learned.delay,
            concurrency=learned.concurrency,
            reason=learned.reason,
            since=learned.since,
        )

    async def _persist_robots(
        self, origin: str, status: int, body: str | None, expires_at: float
    ) -> None:
        host = url_host(origin + "/")
        await self.store.save_host_robots(
            host, origin=origin, status=status, body=body, expires_at=expires_at
        )
