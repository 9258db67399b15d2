"""The read model behind the dashboard, the JSON API and ``sitesync status``.

Routes stay thin: each asks :class:`Overview` for one value of :mod:`sitesync.readmodel.schema`
and returns it. Totals come from the runs' counters; only per-run detail reads tasks, and
then through small aggregates (``OverviewStore``) or with a limit.
"""

from __future__ import annotations

import enum
import time
from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from sitesync.config import Settings
from sitesync.models import (
    ChangeReport,
    Claim,
    Domain,
    Run,
    RunStatus,
    Task,
    TaskState,
    WorkerInfo,
)
from sitesync.readmodel.idle import gather_idle_facts, idle_reasons, is_live, slowed_hosts
from sitesync.readmodel.navigation import failure_of, mark_failed, sampled_urls
from sitesync.readmodel.samples import SampleBook
from sitesync.readmodel.schema import (
    ClaimRow,
    DomainInfo,
    ErrorGroup,
    FailedUrl,
    Hop,
    HostRow,
    NavigationSample,
    RedirectChain,
    RunDetail,
    RunErrors,
    RunNavigation,
    RunSummary,
    StatusOverview,
    WorkerRow,
)
from sitesync.store.base import Store

_RECENT_PER_GROUP = 5
_MAX_HOSTS = 500  # per-host rows of one run's detail


class Action(enum.StrEnum):
    """What the dashboard's buttons (``POST /api/runs/{id}/{action}``) do to a run."""

    PAUSE = "pause"
    RESUME = "resume"
    STOP = "stop"
    CANCEL = "cancel"

    @property
    def status(self) -> RunStatus:
        return _ACTION_STATUS[self]

    @property
    def reason(self) -> str:
        return _ACTION_REASON[self]


_ACTION_STATUS = {
    Action.PAUSE: RunStatus.PAUSED,
    Action.RESUME: RunStatus.RUNNING,
    Action.STOP: RunStatus.STOPPED,
    Action.CANCEL: RunStatus.CANCELLED,
}
_ACTION_REASON = {
    Action.PAUSE: "paused by a user from the dashboard",
    Action.RESUME: "resumed by a user from the dashboard",
    Action.STOP: "stopped by a user from the dashboard",
    Action.CANCEL: "cancelled by a user from the dashboard",
}


@dataclass(frozen=True, slots=True)
class OverviewOptions:
    worker_ttl: float = 120.0  # a worker silent this long is not live
    idle_after: float = 60.0  # counters still this long: a running run is stalled
    samples: SampleBook | None = None  # the dashboard's; None in the terminal
    clock: Callable[[], float] = time.time

    @classmethod
    def from_settings(
        cls, settings: Settings, samples: SampleBook | None = None
    ) -> OverviewOptions:
        # Workers heartbeat with every claim refresh; one silent for a whole claim period
        # has lost its claims, which is what "not live" means to the other workers too.
        return cls(
            worker_ttl=settings.claim_seconds,
            idle_after=settings.idle_after_seconds,
            samples=samples,
        )


class Overview:
    """Builds API values from one store."""

    def __init__(self, store: Store, options: OverviewOptions | None = None) -> None:
        self.store = store
        self.options = options or OverviewOptions()

    # -- runs -----------------------------------------------------------------------------

    async def status(self) -> StatusOverview:
        """Active runs and the work left across them, from their counters (R6)."""
        runs = await self.store.list_active_runs()
        summaries = tuple([await self.summary(run) for run in runs])
        return StatusOverview(
            now=self.options.clock(),
            active_runs=summaries,
            pending_total=sum(run.counters.pending for run in runs),
            in_flight_total=sum(run.counters.assigned for run in runs),
        )

    async def runs(self, *, limit: int = 50) -> list[RunSummary]:
        return [await self.summary(run) for run in await self.store.list_runs(limit=limit)]

    async def summary(self, run: Run) -> RunSummary:
        now = self.options.clock()
        reasons: tuple[str, ...] = ()
        slowed: tuple[str, ...] = ()
        if not run.status.is_terminal:
            facts = await gather_idle_facts(
                self.store,
                run,
                now=now,
                worker_ttl=self.options.worker_ttl,
                idle_after=self.options.idle_after,
            )
            reasons = tuple(idle_reasons(facts))
            slowed = tuple(await slowed_hosts(self.store, run, now))
        counters = run.counters
        return RunSummary(
            id=run.id,
            status=run.status,
            status_reason=run.status_reason,
            seeds=run.config.seeds,
            counters=counters,
            created_at=run.created_at,
            started_at=run.started_at,
            ended_at=run.ended_at,
            last_activity_at=run.last_activity_at,
            pending_work=counters.pending + counters.assigned,
            pages_per_second=self._rate(run, now),
            idle_reasons=reasons,
            slowed_hosts=slowed,
        )

    def _rate(self, run: Run, now: float) -> float:
        samples = self.options.samples
        recent = samples.rate(run.id) if samples is not None else None
        if recent is not None and not run.status.is_terminal:
            return recent
        if run.started_at is None:
            return 0.0
        elapsed = (run.ended_at or now) - run.started_at
        return run.counters.pages_fetched / elapsed if elapsed > 0 else 0.0

    async def detail(self, run_id: int) -> RunDetail:
        run = await self.store.get_run(run_id)
        now = self.options.clock()
        workers = await self.store.list_workers(run_id)
        claims = await self.store.list_claims(run_id)
        leased = {held.worker_id: held.tasks for held in await self.store.leases_by_worker(run_id)}
        samples = self.options.samples
        return RunDetail(
            run=await self.summary(run),
            hosts=tuple(await self._hosts(run_id, claims, now)),
            workers=tuple(self._worker_row(w, leased.get(w.worker_id, 0), now) for w in workers),
            claims=tuple(_claim_row(c, now) for c in claims),
            outcomes=tuple(await self.store.count_outcomes(run_id)),
            samples=samples.points(run_id) if samples is not None else (),
        )

    def _worker_row(self, worker: WorkerInfo, leased: int, now: float) -> WorkerRow:
        return WorkerRow(
            worker_id=worker.worker_id,
            machine=worker.host,
            pid=worker.pid,
            started_at=worker.started_at,
            last_heartbeat=worker.last_heartbeat,
            stopped_at=worker.stopped_at,
            live=is_live(worker, now, self.options.worker_ttl),
            leased=leased,
        )

    async def _hosts(self, run_id: int, claims: Sequence[Claim], now: float) -> list[HostRow]:
        counted = {h.host: h for h in await self.store.list_run_hosts(run_id)}
        pending = {
            b.host: b.pending for b in await self.store.pending_by_host(run_id, limit=_MAX_HOSTS)
        }
        held = {c.host: c for c in claims if c.expires_at > now}
        names = sorted(counted.keys() | pending.keys() | held.keys())[:_MAX_HOSTS]
        # Two queries for every host shown, not two per host.
        states = await self.store.get_host_states(names)
        domains = await self.store.get_domains(names)
        rows = []
        for name in names:
            host, claim, state = counted.get(name), held.get(name), states.get(name)
            slowed = state is not None and bool(state.pace_reason)
            rows.append(
                HostRow(
                    host=name,
                    pages_crawled=host.pages_crawled if host else 0,
                    errors=host.errors if host else 0,
                    status=host.status.value if host else "active",
                    pending=pending.get(name, 0),
                    claimed_by=claim.worker_id if claim else None,
                    claim_expires_at=claim.expires_at if claim else None,
                    domain=_domain_info(domains.get(name)),
                    pace_delay=state.pace_delay if slowed and state else None,
                    pace_reason=state.pace_reason if slowed and state else None,
                )
            )
        return rows

    # -- what went wrong, where redirects led, what the navigation sampler found ----------

    async def errors(self, run_id: int, *, limit: int = 1000) -> RunErrors:
        """Failed tasks grouped by outcome, most frequent first, newest examples first."""
        run = await self.store.get_run(run_id)
        failed = await self.store.list_tasks(run_id, state=TaskState.FAILED, limit=limit)
        groups: dict[str, list[Task]] = defaultdict(list)
        for task in failed:
            groups[_outcome_of(task)].append(task)
        ordered = sorted(groups.items(), key=lambda item: (-len(item[1]), item[0]))
        return RunErrors(
            run_id=run_id,
            failed=run.counters.failed,
            groups=tuple(_error_group(outcome, tasks) for outcome, tasks in ordered),
            truncated=len(failed) >= limit,
        )

    async def redirects(self, run_id: int, *, limit: int = 100) -> list[RedirectChain]:
        await self.store.get_run(run_id)  # RunNotFound for an unknown run, not an empty list
        return [
            RedirectChain(
                url=task.url,
                final_url=task.final_url,
                http_status=task.http_status,
                hops=tuple(Hop(a, b, status) for a, b, status in task.redirects),
            )
            for task in await self.store.list_redirected(run_id, limit=limit)
        ]

    async def changes(self, run_id: int, since_run_id: int | None = None) -> ChangeReport:
        """The run's change report (``sitesync changes``), against its previous scan."""
        await self.store.get_run(run_id)
        if since_run_id is not None:
            await self.store.get_run(since_run_id)
        return await self.store.change_report(run_id, since_run_id=since_run_id)

    async def navigation(self, run_id: int) -> RunNavigation:
        await self.store.get_run(run_id)
        versions = await self.store.records_of_run(run_id, kind="navigation")
        samples = []
        for v in versions:
            failures = {}
            for entry in sampled_urls(v.data):
                failure = failure_of(await self.store.get_task(run_id, entry["url"]))
                if failure is not None:
                    failures[entry["url"]] = failure
            samples.append(NavigationSample(v.url, v.version, mark_failed(v.data, failures)))
        return RunNavigation(run_id=run_id, samples=tuple(samples))

    # -- the buttons ----------------------------------------------------------------------

    async def act(self, run_id: int, action: Action) -> RunSummary:
        """Move the run as ``action`` asks; ``IllegalTransition`` when its status forbids it.

        Resume does what ``sitesync resume`` does: a paused run carries on (its workers are
        waiting), a stopped or failed one is queued for a supervisor or ``sitesync worker``.
        """
        target = action.status
        if action is Action.RESUME:
            current = await self.store.get_run(run_id)
            if current.status in (RunStatus.STOPPED, RunStatus.FAILED):
                target = RunStatus.QUEUED
        run = await self.store.transition_run(run_id, target, reason=action.reason)
        return await self.summary(run)


def _claim_row(claim: Claim, now: float) -> ClaimRow:
    return ClaimRow(
        host=claim.host,
        worker_id=claim.worker_id,
        claimed_at=claim.claimed_at,
        expires_at=claim.expires_at,
        live=claim.expires_at > now,
    )


def _domain_info(domain: Domain | None) -> DomainInfo | None:
    if domain is None:
        return None
    # The lifecycle fields (stale, active, ...) are read defensively: older stores lack them.
    return DomainInfo(
        canonical_host=domain.canonical_host,
        aliases=tuple(domain.aliases),
        active=getattr(domain, "active", None),
        stale=getattr(domain, "stale", None),
        unreachable_streak=getattr(domain, "unreachable_streak", None),
        scope=getattr(domain, "scope", None),
        last_crawled_at=getattr(domain, "last_crawled_at", None),
    )


def _outcome_of(task: Task) -> str:
    if task.outcome:
        return task.outcome
    # Older rows have no outcome; their last_error starts with it ("timeout: ...").
    prefix = (task.last_error or "").split(":", 1)[0].strip()
    return prefix if prefix and " " not in prefix else "unknown"


def _error_group(outcome: str, tasks: list[Task]) -> ErrorGroup:
    recent = sorted(tasks, key=lambda t: t.id, reverse=True)[:_RECENT_PER_GROUP]
    return ErrorGroup(
        outcome=outcome,
        count=len(tasks),
        recent=tuple(
            FailedUrl(t.url, t.http_status, t.last_error, t.attempt_count) for t in recent
        ),
    )
