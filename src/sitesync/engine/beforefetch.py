"""What ends a page attempt before any request for the page: the worker leaving, the
host's claim gone, a dead host, a long pause, robots.txt, or the scan's sitemap dating the
page before its last check. Checked in that order, each cheaper than the next.
"""

from __future__ import annotations

from sitesync.engine.claims import ClaimKeeper
from sitesync.engine.deadhosts import DeadHosts, no_connection
from sitesync.engine.deferral import Deferral
from sitesync.engine.pageturns import Halted, PageTurns
from sitesync.engine.pluginstep import PluginStep
from sitesync.engine.retrywait import RetryWaits
from sitesync.engine.sitemapdates import SitemapDates
from sitesync.fetch.base import FetchOutcome
from sitesync.fetch.gate import RequestGate
from sitesync.models import HostStatus, Lease, TaskReport
from sitesync.store.base import Store
from sitesync.urls import origin_of

#: A host paused for longer than this gets its tasks deferred rather than waited for.
DEFER_AFTER_SECONDS = 1.0


class BeforeFetch:
    def __init__(
        self,
        *,
        store: Store,
        claims: ClaimKeeper,
        gate: RequestGate,
        turns: PageTurns,
        waits: RetryWaits,
        plugin_step: PluginStep,
        dead_hosts: DeadHosts | None,
        sitemap_dates: SitemapDates,
    ) -> None:
        self.store = store
        self.claims = claims
        # The gate's host limiter and robots.txt: a pause and a verdict end an attempt early.
        self.limiter, self.robots = gate.limiter, gate.robots
        self.turns = turns  # robots.txt is fetched in the page's own turn
        self.waits = waits
        self.plugin_step = plugin_step
        self.dead_hosts = dead_hosts
        self.sitemap_dates = sitemap_dates

    async def ended(self, lease: Lease) -> TaskReport | Deferral | None:
        """What ends the attempt before any request for the page (None: fetch it)."""
        return await self._checks(lease) or await self.sitemap_dates.skipped(lease)

    async def _checks(self, lease: Lease) -> TaskReport | Deferral | None:
        if self.turns.halted():
            raise Halted
        if not self.claims.holds(lease.host):
            # Our claim on the host is gone or too close to expiry for a whole fetch:
            # whoever holds it next fetches this URL.
            return Deferral(lease, self.store.now())
        ended = self.dead_hosts.ended(lease) if self.dead_hosts is not None else None
        if ended is not None:  # a dead host: this task ends like the rest of its tasks
            return await self.plugin_step.for_root(lease, None, ended)
        paused_until = self.limiter.paused_until(lease.host)
        if paused_until > self.store.now() + DEFER_AFTER_SECONDS:
            return Deferral(lease, paused_until)
        if self.robots is None:
            return None
        blocked = await self._robots_verdict(lease)
        if blocked is None or isinstance(blocked, Deferral):
            return blocked
        if lease.depth == 0 and blocked.give_up:  # the whole site says no
            await self.store.set_host_status(lease.run_id, lease.host, HostStatus.BLOCKED)
        return await self.plugin_step.for_root(lease, None, blocked)  # plugins may say why

    async def _robots_verdict(self, lease: Lease) -> TaskReport | Deferral | None:
        assert self.robots is not None
        verdict = await self.robots.check(
            lease.url, origin_of(lease.url), gate=lambda: self.turns.turn(lease.host, lease)
        )
        self.limiter.honour_crawl_delay(lease.host, verdict.crawl_delay)
        if verdict.allowed:
            return None
        error = f"blocked: {verdict.reason}"
        if verdict.retry_at is not None and self.dead_hosts is not None:
            # robots.txt unavailable: a re-check of the host soon, or the host is dead.
            refused = verdict.status == 0 and no_connection(verdict.reason)
            dead = HostStatus.UNREACHABLE if refused else HostStatus.BLOCKED
            handled = await self.dead_hosts.failed(lease, dead, error)
            if isinstance(handled, float):
                return Deferral(lease, handled)
            if handled is not None:
                return handled
        if verdict.retry_at is not None:  # robots.txt unreachable: not a verdict on the URL
            delay = max(
                verdict.retry_at - self.store.now(), self.waits.policy.delay(lease.attempt_count)
            )
            return TaskReport(lease=lease, ok=False, error=error, retry_delay=delay,
                              outcome=FetchOutcome.BLOCKED)  # fmt: skip
        return TaskReport(lease=lease, ok=False, error=error, give_up=True,
                          outcome=FetchOutcome.BLOCKED)  # fmt: skip
