"""Why a run that is not finished makes no progress ("idle because…"), from the store's facts.

:func:`idle_reasons` is a pure function of :class:`IdleFacts` (unit-tested on its own);
:func:`gather_idle_facts` reads those facts from the store. The terminal (``sitesync
status``), the JSON API and the dashboard all show the same sentences.
"""

from __future__ import annotations

import time
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, replace

from sitesync.models import (
    Claim,
    HostBacklog,
    HostState,
    Run,
    RunStatus,
    WorkerInfo,
    WorkerLeases,
)
from sitesync.store.base import Store

#: Hosts whose politeness state is read per run: the ones with the most pending work.
MAX_HOSTS_CHECKED = 20
_LISTED = 3  # hosts named in one sentence before "and N more"


@dataclass(frozen=True, slots=True)
class IdleFacts:
    """What the store knows about a run at ``now``."""

    now: float
    run_id: int
    status: RunStatus
    status_reason: str | None
    last_activity_at: float | None
    pending: int
    assigned: int
    next_eligible_at: float | None  # earliest start of a pending task
    workers: tuple[WorkerInfo, ...] = ()
    leases: tuple[WorkerLeases, ...] = ()
    claims: tuple[Claim, ...] = ()
    backlog: tuple[HostBacklog, ...] = ()  # hosts with pending work
    host_states: tuple[HostState, ...] = ()  # politeness state of those hosts
    worker_ttl: float = 120.0  # a worker silent this long is not live (claim_seconds)
    idle_after: float = 60.0  # counters still this long: the run is stalled


def idle_reasons(facts: IdleFacts) -> list[str]:
    """Why the run makes no progress; empty when it does, or when it is over."""
    if facts.status.is_terminal:
        return []
    if facts.status is RunStatus.PAUSED:
        return [_paused(facts)]
    if facts.status is RunStatus.QUEUED:
        return ["queued: no worker has started it yet"]
    stalled = _stalled(facts)
    if facts.pending + facts.assigned == 0:
        return (
            ["nothing pending or in flight, but no worker has completed the run"]
            if (stalled)
            else []
        )
    if facts.assigned and not stalled:
        return []  # pages are being fetched
    reasons = [
        *_worker_reasons(facts),
        *_lease_reasons(facts),
        *_claim_reasons(facts),
        *_wait_reasons(facts),
    ]
    if not reasons and stalled:
        since = facts.last_activity_at or facts.now
        reasons.append(
            f"no progress for {ago(facts.now - since)}: {facts.pending} pending, "
            f"{facts.assigned} in flight"
        )
    return reasons


def _stalled(facts: IdleFacts) -> bool:
    last = facts.last_activity_at
    return last is None or facts.now - last >= facts.idle_after


def _paused(facts: IdleFacts) -> str:
    at = clock_time(facts.last_activity_at or facts.now, facts.now)
    reason = facts.status_reason
    if not reason:
        return f"paused by a user at {at}"
    if reason.startswith("paused"):
        return f"{reason} at {at}"
    return f"paused at {at}: {reason}"


def is_live(worker: WorkerInfo, now: float, ttl: float) -> bool:
    return worker.stopped_at is None and now - worker.last_heartbeat <= ttl


def _worker_reasons(facts: IdleFacts) -> list[str]:
    if facts.pending == 0 or any(is_live(w, facts.now, facts.worker_ttl) for w in facts.workers):
        return []
    if not facts.workers:
        return [f"no worker has joined: start one with 'sitesync worker --run {facts.run_id}'"]
    last = max(facts.workers, key=lambda w: w.last_heartbeat)
    if last.stopped_at is not None:
        when = clock_time(last.stopped_at, facts.now)
        return [f"no live worker: the last one ({last.worker_id}) stopped at {when}"]
    return [
        f"no live worker: the last heartbeat ({last.worker_id}) was "
        f"{ago(facts.now - last.last_heartbeat)} ago"
    ]


def _heartbeat(facts: IdleFacts, worker_id: str) -> str:
    worker = next((w for w in facts.workers if w.worker_id == worker_id), None)
    if worker is None:
        return "never seen"
    if worker.stopped_at is not None:
        return f"stopped at {clock_time(worker.stopped_at, facts.now)}"
    return f"last heartbeat {ago(facts.now - worker.last_heartbeat)} ago"


def _lease_reasons(facts: IdleFacts) -> list[str]:
    reasons = []
    for held in facts.leases:
        if not held.expired:
            continue
        tasks = _plural(held.expired, "task")
        heartbeat = _heartbeat(facts, held.worker_id)
        reasons.append(
            f"{tasks} leased by worker {held.worker_id or '?'}, {heartbeat} "
            "(leases expired: they go back to pending when a worker next takes work)"
        )
    return reasons


def _claim_reasons(facts: IdleFacts) -> list[str]:
    """Hosts with pending work held by a worker that is no longer live: nobody may fetch
    them until the claim expires."""
    pending_hosts = {b.host for b in facts.backlog}
    by_worker: dict[str, list[Claim]] = defaultdict(list)
    live = {w.worker_id for w in facts.workers if is_live(w, facts.now, facts.worker_ttl)}
    for claim in facts.claims:
        held = claim.expires_at > facts.now and claim.host in pending_hosts
        if held and claim.worker_id not in live:
            by_worker[claim.worker_id].append(claim)
    reasons = []
    for worker_id, claims in sorted(by_worker.items()):
        free_at = clock_time(max(c.expires_at for c in claims), facts.now)
        hosts = _hosts(c.host for c in claims)
        reasons.append(
            f"{hosts} claimed by worker {worker_id}, {_heartbeat(facts, worker_id)}: "
            f"free at {free_at}"
        )
    return reasons


def _wait_reasons(facts: IdleFacts) -> list[str]:
    now = facts.now
    reasons = []
    if facts.pending and facts.next_eligible_at is not None and facts.next_eligible_at > now:
        until = clock_time(facts.next_eligible_at, now)
        reasons.append(
            f"all {_plural(facts.pending, 'pending task')} wait for Retry-After/backoff "
            f"until {until}"
        )
    paused = [s for s in facts.host_states if s.paused_until > now]
    if paused:
        until = clock_time(max(s.paused_until for s in paused), now)
        reasons.append(
            f"{_hosts(s.host for s in paused)} asked to wait (Retry-After) until {until}"
        )
    for state in facts.host_states:
        if _robots_refuses(state, now):
            assert state.robots_expires_at is not None  # checked by _robots_refuses
            answer = "unreachable" if state.robots_status == 0 else f"HTTP {state.robots_status}"
            reasons.append(
                f"robots.txt of host {state.host} {answer}: nothing fetched there, "
                f"retry at {clock_time(state.robots_expires_at, now)}"
            )
    return reasons


def _robots_refuses(state: HostState, now: float) -> bool:
    """RFC 9309: an unreachable robots.txt or a 5xx disallows everything until rechecked."""
    status = state.robots_status
    if status is None or state.robots_expires_at is None or state.robots_expires_at <= now:
        return False
    return status == 0 or status >= 500


def _hosts(names: Iterable[str]) -> str:
    hosts = sorted(set(names))
    if len(hosts) == 1:
        return f"host {hosts[0]}"
    shown = ", ".join(hosts[:_LISTED])
    more = f" and {len(hosts) - _LISTED} more" if len(hosts) > _LISTED else ""
    return f"{len(hosts)} hosts ({shown}{more})"


def _plural(n: int, noun: str) -> str:
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"


def ago(seconds: float) -> str:
    """A short duration: ``45 s``, ``4 min``, ``2 h 5 min``."""
    seconds = max(0.0, seconds)
    if seconds < 90:
        return f"{seconds:.0f} s"
    minutes = int(seconds // 60)
    if minutes < 120:
        return f"{minutes} min"
    return f"{minutes // 60} h {minutes % 60} min"


def clock_time(at: float, now: float) -> str:
    """Local wall-clock time, with the date when it is not today."""
    moment, today = time.localtime(at), time.localtime(now)
    same_day = moment[:3] == today[:3]
    return time.strftime("%H:%M" if same_day else "%Y-%m-%d %H:%M", moment)


async def gather_idle_facts(
    store: Store, run: Run, *, now: float, worker_ttl: float, idle_after: float
) -> IdleFacts:
    """Read what :func:`idle_reasons` needs about ``run`` (a handful of small queries)."""
    facts = IdleFacts(
        now=now,
        run_id=run.id,
        status=run.status,
        status_reason=run.status_reason,
        last_activity_at=run.last_activity_at,
        pending=run.counters.pending,
        assigned=run.counters.assigned,
        next_eligible_at=None,
        worker_ttl=worker_ttl,
        idle_after=idle_after,
    )
    if run.status is not RunStatus.RUNNING or (facts.assigned and not _stalled(facts)):
        return facts  # nothing more decides: not running, or fetching right now
    backlog = tuple(await store.pending_by_host(run.id, limit=MAX_HOSTS_CHECKED))
    states = [await store.get_host_state(b.host) for b in backlog]
    return replace(
        facts,
        next_eligible_at=await store.next_eligible_at(run.id),
        workers=tuple(await store.list_workers(run.id)),
        leases=tuple(await store.leases_by_worker(run.id)),
        claims=tuple(await store.list_claims(run.id)),
        backlog=backlog,
        host_states=tuple(s for s in states if s is not None),
    )


async def slowed_hosts(store: Store, run: Run, now: float) -> list[str]:
    """``host X: 2.4 s, backing off after 503s`` for each host of the run (those held or
    with pending work, the busiest first) that adaptive politeness slowed down."""
    hosts = [c.host for c in await store.list_claims(run.id) if c.expires_at > now]
    hosts += [b.host for b in await store.pending_by_host(run.id, limit=MAX_HOSTS_CHECKED)]
    texts = []
    for host in list(dict.fromkeys(hosts))[:MAX_HOSTS_CHECKED]:
        state = await store.get_host_state(host)
        text = state.pace_text() if state is not None else None
        if text is not None:
            texts.append(text)
    return texts
