"""The supervisor: starts workers for queued runs, heartbeats for them, and recovers
runs whose heartbeats stopped (the watchdog).

Several supervisors may share one store: a queued run is started by whichever moves it to
``running`` first (one conditional UPDATE), and recovering a stale run is one transaction.
Worker processes are started with a parent-death signal, so a supervisor that is killed
takes its workers with it; their runs' heartbeats stop, and any supervisor's watchdog
re-queues them after ``stale_after`` (or fails them past ``max_crash_retries``).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import math
import os
import signal
import subprocess
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field

from sitesync.config import setting_default
from sitesync.engine.waits import wait_set
from sitesync.errors import IllegalTransition
from sitesync.models import RunStatus
from sitesync.runs.processes import spawn_sitesync
from sitesync.runs.scans import finish_completed_scans
from sitesync.store.base import Store

log = logging.getLogger(__name__)

#: How a worker is told its store: the variable's value is sent on its stdin, with this flag.
DB_VARIABLE = "SITESYNC_DB"
DB_FROM_STDIN = "--db-from-stdin"

#: Starts the scans whose schedules are due (see sitesync.runs.scans).
ScanStarter = Callable[[Store], Awaitable[object]]


@dataclass(frozen=True, slots=True)
class SupervisorOptions:
    workers_per_run: int = setting_default("workers_per_run")
    max_workers: int = setting_default("max_worker_processes")  # at once, over all runs
    heartbeat: float = setting_default("supervisor_heartbeat_seconds")
    watchdog: float = setting_default("watchdog_seconds")
    stale_after: float = setting_default("stale_run_seconds")
    max_crash_retries: int = setting_default("max_crash_retries")
    worker_env: dict[str, str] = field(default_factory=dict)  # SITESYNC_* for workers


class Supervisor:
    def __init__(
        self,
        store: Store,
        *,
        supervisor_id: str,
        options: SupervisorOptions,
        start_due_scans: ScanStarter | None = None,
    ) -> None:
        self.store = store
        self.supervisor_id = supervisor_id
        self.options = options
        self._start_due_scans = start_due_scans
        self._workers: dict[int, list[subprocess.Popen[bytes]]] = {}
        self._stop = asyncio.Event()
        self._last_watchdog = -math.inf  # the first round always runs the watchdog

    def stop(self) -> None:
        self._stop.set()

    async def run(self, *, once: bool = False) -> None:
        """Loop until stop(). With ``once`` (for cron): one round, then keep the workers it
        started company (heartbeats) until they exit; stop() makes them leave."""
        try:
            await self.tick()
            while not self._stop.is_set() and (self._workers or not once):
                await wait_set(self._stop, self.options.heartbeat)
                if self._stop.is_set():
                    break
                if once:
                    await self._keep_alive()
                else:
                    await self.tick()
        finally:
            await self._shutdown()

    async def tick(self) -> None:
        """One round: reap, heartbeat, watchdog, scans, starts."""
        await self._keep_alive()
        now = time.monotonic()
        if now - self._last_watchdog >= self.options.watchdog:
            self._last_watchdog = now
            await self._watchdog()
        if self._start_due_scans is not None:
            await self._start_due_scans(self.store)
        await self._start_queued()

    async def _keep_alive(self) -> None:
        """Reap exited workers; heartbeat the runs that still have some."""
        self._reap()
        for run_id in self._workers:
            await self.store.heartbeat_run(run_id)

    async def _watchdog(self) -> None:
        # Scans whose completing worker died before applying their lifecycle.
        await finish_completed_scans(self.store)
        for run in await self.store.recover_stale_runs(
            stale_after=self.options.stale_after,
            max_crash_retries=self.options.max_crash_retries,
        ):
            if run.status is RunStatus.QUEUED:
                log.warning(
                    "run %d had no heartbeat: %s (crash retries %d)",
                    run.id,
                    run.status_reason,
                    run.crash_retries,
                )
            else:
                log.error("run %d crashed and exceeded max retries: failed", run.id)

    async def _start_queued(self) -> None:
        running = sum(len(procs) for procs in self._workers.values())
        room = self.options.max_workers - running
        if room < 1:
            return
        runs = await self.store.list_runs(limit=1000)
        queued = [run for run in runs if run.status is RunStatus.QUEUED]
        for run in sorted(queued, key=lambda r: r.id):
            count = min(self.options.workers_per_run, room)
            if count < 1:
                break
            started = await self.store.start_queued_run(run.id, supervisor_id=self.supervisor_id)
            if started is None:
                continue  # another supervisor was first
            self._workers[run.id] = [self._spawn(run.id) for _ in range(count)]
            room -= count
            log.info("run %d: started %d worker(s)", run.id, count)

    def _spawn(self, run_id: int) -> subprocess.Popen[bytes]:
        env = {**os.environ, **self.options.worker_env}
        # The store's DSN may carry a password: it goes over a pipe (see runs/processes.py).
        db = env.pop(DB_VARIABLE, None)
        args = ["worker", "--run", str(run_id)]
        return spawn_sitesync([*args, DB_FROM_STDIN] if db else args, env=env, stdin_line=db)

    def _reap(self) -> None:
        for run_id, procs in list(self._workers.items()):
            alive = [p for p in procs if p.poll() is None]
            for proc in procs:
                if proc.returncode is not None and proc.returncode != 0:
                    log.warning("a worker of run %d exited with %d", run_id, proc.returncode)
            if alive:
                self._workers[run_id] = alive
            else:
                # No heartbeat from us any more: if the run did not end, the watchdog
                # (ours or another supervisor's) recovers it.
                del self._workers[run_id]

    async def _shutdown(self) -> None:
        """Make our workers leave (SIGTERM) and hand the runs they left back to the queue.

        Only a run still ``running`` whose workers all left cleanly is re-queued: a paused
        run stays paused, a stopped one stopped, and a run another worker still crawls
        stays with it. A worker that had to be killed leaves its run to the watchdog.
        """
        procs = [p for ps in self._workers.values() for p in ps]
        for proc in procs:
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
        for proc in procs:
            try:
                await asyncio.to_thread(proc.wait, 30)
            except subprocess.TimeoutExpired:
                proc.kill()
        for run_id in self._workers:
            with contextlib.suppress(IllegalTransition):  # it moved meanwhile: leave it be
                await self._requeue_if_left(run_id)
        self._workers.clear()

    async def _requeue_if_left(self, run_id: int) -> None:
        run = await self.store.get_run(run_id)
        if run.status is not RunStatus.RUNNING:
            return
        workers = await self.store.list_workers(run_id)
        if workers and all(worker.stopped_at is not None for worker in workers):
            await self.store.transition_run(
                run_id, RunStatus.QUEUED, reason="supervisor shut down; re-queued"
            )
            log.info("run %d: its workers left; re-queued", run_id)

    @property
    def worker_pids(self) -> dict[int, Sequence[int]]:
        return {run_id: [p.pid for p in procs] for run_id, procs in self._workers.items()}
