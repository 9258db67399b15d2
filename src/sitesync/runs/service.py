"""``sitesync worker --serve``: one long-lived process per machine that serves the fleet.

It crawls every active run of the store, up to ``serve_max_runs`` at once: running runs
are joined, queued ones started (the store's conditional start: of several services, one
moves a queued run to ``running``, the others join it on their next look), and a paused
run is taken once it is resumed. With no work it waits, and looks again every
``serve_poll_seconds``. A run whose crawl fails here (a bug, a store outage) is logged in
one line and joined again after a rest; an unreachable store is waited out the same way.

SIGTERM or SIGINT makes every worker of the service leave its run, as one ``sitesync
worker`` leaving does: fetches under way finish, the rest goes back to the run, claims
are released, and the runs go on with the other workers. Then the service exits 0.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time

from sitesync.config import Settings
from sitesync.engine.waits import wait_set
from sitesync.engine.worker import new_worker_id
from sitesync.errors import CannotJoinRun, ConfigError, StoreUnavailable
from sitesync.models import Run, RunStatus
from sitesync.runs.crawl import Signals, crawl
from sitesync.runs.request import join_settings
from sitesync.store import Store, open_store

log = logging.getLogger(__name__)

#: The longest rest after a failure: of the store, or of one run's crawl.
MAX_REST_SECONDS = 60.0


class Service:
    def __init__(self, settings: Settings, signals: Signals) -> None:
        self.settings = settings
        self.signals = signals
        self.service_id = new_worker_id()
        self._served: dict[int, asyncio.Task[None]] = {}
        self._failures: dict[int, int] = {}  # run id -> crawls of it that failed in a row
        self._rest_until: dict[int, float] = {}  # run id -> when it is joined again
        self._wake = asyncio.Event()  # a signal, or a served run that ended: look again
        self._refused: set[int] = set()  # runs whose settings this service cannot honour

    @property
    def serving(self) -> list[int]:
        return sorted(self._served)

    async def run(self) -> None:
        """Serve until a signal; then wait for every served run's worker to leave."""
        relay = asyncio.create_task(self._relay_signal())
        store: Store | None = None
        failures = 0
        try:
            while self.signals.requested is None:
                self._wake.clear()
                try:
                    store = store or await open_store(
                        self.settings.db, **self.settings.store_options()
                    )
                    await self._take_runs(store)
                    failures = 0
                except Exception as exc:  # the store is out: keep the served runs, wait
                    failures += 1
                    log.error(
                        "service %s: %s; looking again in %.0f s",
                        self.service_id, _describe(exc), self._rest(failures),
                    )  # fmt: skip
                await wait_set(self._wake, self._rest(failures))
        finally:
            relay.cancel()
            await asyncio.gather(relay, *self._served.values(), return_exceptions=True)
            if store is not None:
                with contextlib.suppress(Exception):  # an outage may be why we stop
                    await store.close()

    async def _take_runs(self, store: Store) -> None:
        room = self.settings.serve_max_runs - len(self._served)
        if room < 1:
            return
        now = time.monotonic()
        active = [
            run
            for run in await store.list_runs(limit=1000)
            if run.status in (RunStatus.RUNNING, RunStatus.QUEUED)
            and run.id not in self._served
            and self._rest_until.get(run.id, 0.0) <= now
        ]
        # Runs already under way first (others may need help), then the queue, oldest first.
        for run in sorted(active, key=lambda r: (r.status is RunStatus.QUEUED, r.id)):
            if room < 1 or self.signals.requested is not None:
                return
            settings = self._settings_for(run)
            if settings is None:
                continue
            if run.status is RunStatus.QUEUED:
                started = await store.start_queued_run(run.id, supervisor_id=self.service_id)
                if started is None:
                    continue  # another service started it: it is joined on the next look
                run = started
                log.warning("service %s: started queued run %d", self.service_id, run.id)
            task = asyncio.create_task(self._serve(run, settings), name=f"serve run {run.id}")
            self._served[run.id] = task
            room -= 1

    def _settings_for(self, run: Run) -> Settings | None:
        """The settings this service crawls ``run`` with (the run's own), or None when it
        cannot honour them: logged once, and the run is left to other processes."""
        try:
            return join_settings(self.settings, run)
        except (CannotJoinRun, ConfigError) as exc:
            if run.id not in self._refused:
                log.error("service %s: leaves run %d to others: %s", self.service_id, run.id, exc)
            self._refused.add(run.id)
            return None

    async def _serve(self, run: Run, settings: Settings) -> None:
        """Crawl one run with a store of its own, so one run's failure is its own."""
        try:
            store = await open_store(self.settings.db, **self.settings.store_options())
            try:
                ended = await crawl(store, run, settings, signals=self.signals)
            finally:
                await store.close()
        except Exception as exc:
            failures = self._failures.get(run.id, 0) + 1
            self._failures[run.id] = failures
            self._rest_until[run.id] = time.monotonic() + self._rest(failures)
            log.error(
                "service %s: crawling run %d failed (%s); joining it again in %.0f s",
                self.service_id, run.id, _describe(exc), self._rest(failures),
            )  # fmt: skip
        else:
            self._failures.pop(run.id, None)
            if ended.status.is_terminal:
                log.warning("service %s: run %d is %s", self.service_id, run.id, ended.status)
        finally:
            del self._served[run.id]
            self._wake.set()  # a slot is free

    async def _relay_signal(self) -> None:
        await self.signals.received.wait()
        self._wake.set()

    def _rest(self, failures: int) -> float:
        poll = self.settings.serve_poll_seconds
        return poll if failures == 0 else min(MAX_REST_SECONDS, poll * 2 ** (failures - 1))


async def serve(settings: Settings) -> None:
    """The service in this process until SIGTERM or SIGINT (each makes it leave)."""
    signals = Signals(frozenset())
    signals.install(asyncio.get_running_loop())
    try:
        await Service(settings, signals).run()
    finally:
        signals.uninstall()


def _describe(exc: BaseException) -> str:
    if isinstance(exc, StoreUnavailable):
        return f"store unavailable: {exc}"
    return f"{type(exc).__name__}: {exc}"
