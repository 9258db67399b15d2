"""A small in-memory ring of counter samples per run, for the pages/s and pending chart.

The dashboard server samples every active run's counters every ``dashboard_sample_seconds``;
rates are differences between samples. Nothing is stored: a restarted dashboard starts a
new chart (the counters themselves are exact in the store).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections import deque
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass

from sitesync.errors import RunNotFound
from sitesync.models import Run
from sitesync.readmodel.schema import SamplePoint
from sitesync.store.base import Store

log = logging.getLogger(__name__)

#: Samples kept per run: 30 minutes at the default 5 s interval.
CAPACITY = 360
_MAX_RUNS = 50  # rings kept; the least recently sampled run's ring goes first
_RATE_WINDOW = 30.0  # seconds of samples the "current" pages/s averages over


@dataclass(frozen=True, slots=True)
class Sample:
    at: float
    pages_fetched: int
    pending: int
    assigned: int


class SampleBook:
    """Rings of samples, one per run."""

    def __init__(self, capacity: int = CAPACITY) -> None:
        self._capacity = capacity
        self._rings: dict[int, deque[Sample]] = {}

    def add(self, run: Run, at: float) -> None:
        ring = self._rings.pop(run.id, None) or deque(maxlen=self._capacity)
        self._rings[run.id] = ring  # re-inserted: dict order is least recently sampled first
        counters = run.counters
        ring.append(Sample(at, counters.pages_fetched, counters.pending, counters.assigned))
        while len(self._rings) > _MAX_RUNS:
            del self._rings[next(iter(self._rings))]

    def points(self, run_id: int) -> tuple[SamplePoint, ...]:
        """The run's samples, oldest first, each with the rate since the one before."""
        ring = list(self._rings.get(run_id, ()))
        points = []
        for before, sample in zip([None, *ring], ring, strict=False):
            points.append(
                SamplePoint(
                    at=sample.at,
                    pages_fetched=sample.pages_fetched,
                    pending=sample.pending,
                    in_flight=sample.assigned,
                    pages_per_second=_rate(before, sample),
                )
            )
        return tuple(points)

    def rate(self, run_id: int) -> float | None:
        """Pages/s over the last ``_RATE_WINDOW`` seconds; None with fewer than two samples."""
        ring = self._rings.get(run_id)
        if not ring or len(ring) < 2:
            return None
        last = ring[-1]
        first = next((s for s in ring if last.at - s.at <= _RATE_WINDOW), ring[-2])
        if first is last:
            first = ring[-2]
        return _rate(first, last)


def _rate(before: Sample | None, after: Sample) -> float:
    if before is None or after.at <= before.at:
        return 0.0
    return max(0.0, (after.pages_fetched - before.pages_fetched) / (after.at - before.at))


class Sampler:
    """Samples the active runs of a store into a :class:`SampleBook`, forever."""

    def __init__(
        self,
        store: Store,
        book: SampleBook,
        *,
        interval: float,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.store = store
        self.book = book
        self.interval = interval
        self._clock = clock
        self._active: set[int] = set()

    async def sample_once(self) -> None:
        runs = await self.store.list_active_runs()
        now = self._clock()
        for run in runs:
            self.book.add(run, now)
        ended, self._active = self._active - {run.id for run in runs}, {run.id for run in runs}
        # A run that just ended gets a last sample, so its chart shows how it finished.
        for run_id in ended:
            with contextlib.suppress(RunNotFound):  # deleted meanwhile: nothing to show
                self.book.add(await self.store.get_run(run_id), now)

    async def run(self) -> None:
        while True:
            try:
                await self.sample_once()
            except Exception:  # a store hiccup must not end the chart for good
                log.exception("sampling the runs' counters failed; trying again")
            await asyncio.sleep(self.interval)

    @contextlib.asynccontextmanager
    async def running(self) -> AsyncIterator[None]:
        task = asyncio.create_task(self.run(), name="dashboard-sampler")
        try:
            yield
        finally:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
