"""What a page's answer says about its host, whatever it says about the page: no answer at
all counts towards the host being dead (and may end the attempt), an answer clears that
count, and a Retry-After pauses the host, for this worker and, through the store, for the
next holder of the host.
"""

from __future__ import annotations

from sitesync.engine.deadhosts import DeadHosts, host_failure
from sitesync.engine.deferral import Deferral
from sitesync.engine.pageread import describe
from sitesync.engine.pluginstep import PluginStep
from sitesync.fetch.base import FetchResult
from sitesync.fetch.politeness import HostLimiter
from sitesync.models import HostStatus, Lease, TaskReport
from sitesync.store.base import Store


class HostSignals:
    def __init__(
        self,
        *,
        store: Store,
        limiter: HostLimiter,
        dead_hosts: DeadHosts | None,
        plugin_step: PluginStep,
        max_retry_after: float,
    ) -> None:
        self.store = store
        self.limiter = limiter
        self.dead_hosts = dead_hosts
        self.plugin_step = plugin_step  # a root that ends with its dead host: plugins see it
        self.max_retry_after = max_retry_after  # a longer Retry-After is cut to this

    async def heard(self, lease: Lease, result: FetchResult) -> TaskReport | Deferral | None:
        """The host's part of ``result`` taken in; how the attempt ends if the host is dead
        or re-checked later (None: the answer goes on to become the page's report)."""
        if self.dead_hosts is not None:
            if host_failure(result):
                handled = await self.dead_hosts.failed(
                    lease, HostStatus.UNREACHABLE, describe(result)
                )
                if isinstance(handled, float):
                    return Deferral(lease, handled)
                if handled is not None:
                    return await self.plugin_step.for_root(lease, result, handled)
            elif result.status > 0:
                await self.dead_hosts.answered(lease)
        if result.retry_after is not None:
            until = self.store.now() + min(result.retry_after, self.max_retry_after)
            self.limiter.pause(lease.host, until)
            # Stored, so the next holder of this host honours it too.
            await self.store.save_host_pause(lease.host, until=until)
        return None
