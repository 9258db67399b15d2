"""Dead hosts: a host that cannot be crawled costs seconds, not the run's tail.

A host-level failure says nothing about the URL and everything about the host: the
connection was refused or never answered, or the name did not resolve, or robots.txt was
unavailable (5xx or no answer; RFC 9309 says disallow everything then). Each one pauses
the host until its next re-check (``recheck``: 5 s, then 15 s, ...); the host's tasks are
handed back untried meanwhile, so they keep their own retry budget. After ``attempts``
consecutive failures with no answer in between, the host is dead for the rest of the run:
the store ends all its pending tasks in one step (``unreachable``, or ``blocked`` when
robots.txt answered 5xx or broke off), tasks already leased end as they come up, and links
to the host found later end as they are admitted.

The count is kept in the store's per-host state of the run, so a worker that takes the
host over goes on counting where the last one stopped.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass

from sitesync.fetch.base import FetchOutcome, FetchResult
from sitesync.fetch.politeness import HostLimiter
from sitesync.fetch.robots import RobotsCache
from sitesync.models import HostStatus, Lease, TaskReport
from sitesync.store.base import Store

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class HostEnd:
    """How a dead host's tasks end: their outcome (= the host's status) and why."""

    status: HostStatus
    reason: str

    def report(self, lease: Lease) -> TaskReport:
        return TaskReport(
            lease=lease,
            ok=False,
            error=self.reason,
            give_up=True,
            outcome=FetchOutcome(self.status.value),  # unreachable or blocked: both outcomes too
        )


@dataclass(slots=True)
class _Health:
    failures: int = 0
    first_failure_at: float = 0.0
    next_check_at: float = 0.0  # no probe of the host before this
    end: HostEnd | None = None


class DeadHosts:
    """One worker's view of its hosts' health; ``attempts`` 0 turns it off."""

    def __init__(
        self,
        store: Store,
        *,
        limiter: HostLimiter,
        robots: RobotsCache | None,
        attempts: int = 3,
        recheck: Sequence[float] = (5.0, 15.0, 30.0),
    ) -> None:
        self.store = store
        self.limiter = limiter
        self.robots = robots
        self.attempts = attempts
        self.recheck = tuple(recheck)
        self._hosts: dict[str, _Health] = {}

    def ended(self, lease: Lease) -> TaskReport | None:
        """The report of a lease whose host is already dead, or None."""
        health = self._hosts.get(lease.host)
        if health is None or health.end is None:
            return None
        return health.end.report(lease)

    async def load(self, run_id: int, host: str) -> None:
        """A host just claimed: take over the count (or the end) an earlier holder kept."""
        if self.attempts <= 0:
            return
        stored = await self.store.get_run_host(run_id, host)
        if stored is None or (stored.failures == 0 and stored.ended_as is None):
            return
        health = self._hosts.setdefault(host, _Health(first_failure_at=self.store.now()))
        health.failures = max(health.failures, stored.failures)
        if stored.ended_as is not None:
            reason = stored.ended_reason or stored.ended_as
            health.end = HostEnd(HostStatus(stored.ended_as), reason)

    async def failed(
        self, lease: Lease, status: HostStatus, error: str
    ) -> TaskReport | float | None:
        """A host-level failure on ``lease``: the task's report when this one made the
        host dead, else when to try the host again (the lease goes back untried). None
        when dead-host handling is off: the caller treats the failure as before."""
        if self.attempts <= 0:
            return None
        now = self.store.now()
        health = self._hosts.setdefault(lease.host, _Health(first_failure_at=now))
        if health.end is not None:
            return health.end.report(lease)
        if now < health.next_check_at:
            return health.next_check_at  # seen already: this is no new check
        if health.failures == 0:
            health.first_failure_at = now
        health.failures += 1
        if health.failures >= self.attempts:
            return await self._end(lease, health, status, error, now)
        wait = self.recheck[min(health.failures, len(self.recheck)) - 1] if self.recheck else 0.0
        health.next_check_at = now + wait
        self.limiter.pause(lease.host, health.next_check_at)
        if self.robots is not None:
            await self.robots.recheck_at(_origin(lease.url), health.next_check_at)
        await self.store.save_host_failures(lease.run_id, lease.host, failures=health.failures)
        log.info(
            "%s: host-level failure %d of %d (%s); re-check in %gs",
            lease.host, health.failures, self.attempts, error, wait,
        )  # fmt: skip
        return health.next_check_at

    async def answered(self, lease: Lease) -> None:
        """The host answered: its count starts again."""
        health = self._hosts.get(lease.host)
        if health is not None and health.failures and health.end is None:
            health.failures, health.next_check_at = 0, 0.0
            await self.store.save_host_failures(lease.run_id, lease.host, failures=0)

    async def _end(
        self, lease: Lease, health: _Health, status: HostStatus, error: str, now: float
    ) -> TaskReport:
        span = now - health.first_failure_at
        what = (
            "no connection to the host"
            if status is HostStatus.UNREACHABLE
            else "robots.txt unavailable, which disallows everything (RFC 9309),"
        )
        reason = (
            f"{status.value}: {what} at {health.failures} checks over {span:.1f}s (last: {error})"
        )
        health.end = HostEnd(status, reason)
        ended = await self.store.end_host(lease.run_id, lease.host, status=status, reason=reason)
        log.warning("%s is dead, %d pending tasks ended: %s", lease.host, ended, reason)
        return health.end.report(lease)


#: How the fetchers word "no connection at all": refused, never answered, name not
#: resolved, no route (aiohttp's connector errors; Chromium's net:: errors).
_NO_CONNECTION = (
    "cannot connect",
    "ERR_CONNECTION_REFUSED",
    "ERR_CONNECTION_TIMED_OUT",
    "ERR_NAME_NOT_RESOLVED",
    "ERR_NAME_RESOLUTION_FAILED",
    "ERR_ADDRESS_UNREACHABLE",
)


def no_connection(error: str | None) -> bool:
    """Whether a fetch error says the host could not be connected to at all."""
    return error is not None and any(marker in error for marker in _NO_CONNECTION)


def host_failure(result: FetchResult) -> bool:
    """A page fetch that could not even connect: refused, never answered, unresolved, no
    route.

    A connection that broke later (reset, truncated body) and a response that timed out
    are not counted: the host is there, and the URL's own retries handle it.
    """
    return (
        result.status == 0
        and result.outcome is FetchOutcome.UNREACHABLE
        and no_connection(result.error)
    )


def _origin(url: str) -> str:
    return url[: url.index("/", url.index("//") + 2)]
