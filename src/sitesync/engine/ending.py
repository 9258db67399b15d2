"""How a worker's crawl ends: why it ends, and whether fetches under way may finish.

The reason is set once (the first one wins) by whichever part notices first: ``stop()``
or ``leave()`` from the process, the status watcher or the feeder seeing the run leave
``running`` in the store, the feeder seeing it drained, or a side task dying.
"""

from __future__ import annotations

import asyncio
import enum
import logging
from collections.abc import Callable

from sitesync.frontier.frontier import Frontier
from sitesync.models import Run, RunStatus
from sitesync.store.base import Store

log = logging.getLogger(__name__)


class WorkerExit(enum.StrEnum):
    DRAINED = "drained"  # nothing pending or assigned: the run is complete
    STOP_REQUESTED = "stop_requested"  # stop() was called: the run is being stopped (Ctrl-C)
    LEFT = "left"  # leave() was called: this process goes, the run goes on without it
    RUN_NOT_RUNNING = "run_not_running"  # another process paused, stopped or cancelled the run


#: Statuses set elsewhere after which fetches under way may finish (paused: "in-flight ones
#: finish"; completed: nothing left to protect). Stopped, cancelled and failed runs get
#: their in-flight work back to PENDING at once.
_DRAIN_ON = frozenset({RunStatus.PAUSED, RunStatus.COMPLETED})


class Ending:
    def __init__(self) -> None:
        self.reason: WorkerExit | None = None
        self.done = asyncio.Event()
        self.failure: BaseException | None = None
        self.run_status = RunStatus.RUNNING  # as last seen in the store

    def finish(self, reason: WorkerExit) -> None:
        if self.reason is None:
            self.reason = reason
        self.done.set()

    def run_left(self, status: RunStatus) -> None:
        """Another process paused, stopped or cancelled the run (or it completed)."""
        self.run_status = status
        self.finish(WorkerExit.RUN_NOT_RUNNING)

    def failed(self, name: str, exc: BaseException) -> None:
        """A side task died: the first failure ends the worker and is raised by it."""
        if self.failure is None:
            log.error("worker task %s died: %r", name, exc)
            self.failure = exc
            self.done.set()

    def leaving(self) -> bool:
        """Whether this worker is on its way out: no new request may start."""
        return self.reason is not None

    def drains(self) -> bool:
        """Whether fetches under way may finish: a worker that leaves lets them (a page
        fetched once is not fetched again by whoever takes its host over), and so does one
        whose run was paused or completed elsewhere."""
        if self.failure is not None:
            return False
        if self.reason is WorkerExit.LEFT:
            return True
        return self.reason is WorkerExit.RUN_NOT_RUNNING and self.run_status in _DRAIN_ON


class StatusWatcher:
    """One row read per poll, apart from the heartbeat's heavier writes, so that a
    pause reaches the fetch slots within ``status_poll`` seconds."""

    def __init__(
        self,
        store: Store,
        *,
        run: Run,
        frontier: Frontier,
        poll: float,
        ending: Ending,
        on_settings: Callable[[Run], None] | None = None,
    ) -> None:
        self.store = store
        self.run_id = run.id
        self.frontier = frontier
        self.poll = poll
        self.ending = ending
        self.on_settings = on_settings
        self._settings_version = run.settings_version

    async def watch(self) -> None:
        while True:
            await asyncio.sleep(self.poll)
            run = await self.store.get_run(self.run_id)
            self.frontier.refresh(run)
            if run.settings_version != self._settings_version:
                # Changed with 'sitesync settings RUN --set': from the next request on.
                self._settings_version = run.settings_version
                if self.on_settings is not None:
                    self.on_settings(run)
            if run.status is not RunStatus.RUNNING:
                self.ending.run_left(run.status)
