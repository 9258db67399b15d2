"""A worker's upkeep: its leases renewed, the run signed alive, its fair share of hosts
refreshed, and the leases of this machine's dead workers freed."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable

from sitesync.engine.claims import ClaimKeeper
from sitesync.engine.liveness import ProcessIdentity, is_gone
from sitesync.engine.options import WorkerOptions
from sitesync.engine.waits import wait_set
from sitesync.models import WorkerInfo
from sitesync.store.base import Store

log = logging.getLogger(__name__)

#: Longest wait before a worker looks at its fair share of hosts again.
CLAIM_REFRESH_SECONDS = 2.0
#: How often a worker reads who else works on its run (a few rows). While another worker
#: shares the run (or when one joined or left), its claims are refreshed then instead of
#: at the next CLAIM_REFRESH_SECONDS.
MEMBERSHIP_CHECK_SECONDS = 0.5


class Upkeep:
    def __init__(
        self,
        store: Store,
        *,
        run_id: int,
        worker_id: str,
        identity: ProcessIdentity,
        options: WorkerOptions,
        claims: ClaimKeeper,
        on_hosts_changed: Callable[[], None],
    ) -> None:
        self.store = store
        self.run_id = run_id
        self.worker_id = worker_id
        self.identity = identity
        self.options = options
        self.claims = claims
        self._on_hosts_changed = on_hosts_changed
        self._look = asyncio.Event()  # set: refresh the claims now, not at the next check

    def look_now(self) -> None:
        """Refresh the claims at once: a host beyond the share has nothing in flight any
        more, and may go to a worker waiting for it now rather than at the next check."""
        self._look.set()

    async def heartbeat(self) -> None:
        while True:
            await asyncio.sleep(self.options.heartbeat)
            await self.store.renew_leases(
                self.run_id, worker_id=self.worker_id, lease_seconds=self.options.lease_seconds
            )
            await self.store.heartbeat_run(self.run_id)

    async def rebalance_claims(self) -> None:
        """Claims are refreshed more often than leases are renewed, so that hosts pass
        quickly to workers that join (or leave) a run.

        A worker that joins a busy run finds every host held; it gets its share only once
        the holders see it and drop their surplus. Holders look for joiners every
        MEMBERSHIP_CHECK_SECONDS, so that hand-over takes about a second, not two refresh
        intervals (four workers started together reached their shares 3.4 s after the
        first; see benchmarks/README.md).

        Shares also shrink as hosts run dry, and they run dry at different times: a worker
        whose hosts are done sits idle until the others see that they hold more than their
        share now and hand hosts over. Waiting for the next CLAIM_REFRESH_SECONDS for that
        left one of a crawl's two processes idle for up to two seconds at the end of every
        crawl (issue 33), so while the run has other workers each look refreshes (one
        short transaction); a worker alone on its run refreshes only every interval."""
        interval = min(self.options.heartbeat, CLAIM_REFRESH_SECONDS)
        step = min(interval, MEMBERSHIP_CHECK_SECONDS)
        members: frozenset[str] | None = None
        waited = 0.0
        while True:
            asked = await wait_set(self._look, step)
            self._look.clear()
            waited += step
            workers = await self.store.list_workers(self.run_id)
            now_members = frozenset(w.worker_id for w in workers if w.stopped_at is None)
            alone = len(now_members - {self.worker_id}) == 0
            quiet = now_members == members and alone and not self.claims.surplus
            if waited < interval and quiet and not asked:
                continue
            members, waited = now_members, 0.0
            await self.release_gone_workers(workers)
            await self.claims.refresh()
            self._on_hosts_changed()

    async def release_gone_workers(self, workers: list[WorkerInfo] | None = None) -> None:
        """Workers of this run on this machine whose process is provably gone give up
        their leases and claims now; those elsewhere are recovered at expiry."""
        if workers is None:
            workers = await self.store.list_workers(self.run_id)
        for worker in workers:
            if is_gone(worker, self.identity):
                ended = await self.store.release_gone_worker(self.run_id, worker)
                log.warning(
                    "worker %s (pid %d) is gone: %d of its tasks and its hosts are free again",
                    worker.worker_id, worker.pid, ended,
                )  # fmt: skip
