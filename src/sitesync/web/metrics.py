"""Prometheus metrics at ``/metrics``: derived from the store at scrape time.

Every scrape reads the active runs' counters (and one outcome aggregate per active run),
then renders them with a collector built for that scrape, beside the process's own
histogram of store call latency. Nothing is counted in memory except that latency, so two
dashboards on one store report the same numbers, and a restart loses nothing.
"""

from __future__ import annotations

import functools
import inspect
import time
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass
from typing import Any, cast

from prometheus_client import CollectorRegistry, Histogram, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from sitesync.models import OutcomeCount, Run
from sitesync.readmodel.samples import SampleBook
from sitesync.store.base import Store

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"

_LATENCY_BUCKETS = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5)


def store_latency_histogram() -> Histogram:
    """One per app (never the global registry: tests build many apps in one process)."""
    return Histogram(
        "sitesync_store_call_seconds",
        "Time of the store calls the dashboard server makes, by method.",
        ["call"],
        buckets=_LATENCY_BUCKETS,
        registry=None,
    )


class _TimedStore:
    """Wraps a store so that every coroutine method it has is timed into a histogram."""

    def __init__(self, store: Store, histogram: Histogram) -> None:
        self._store = store
        self._histogram = histogram

    def __getattr__(self, name: str) -> Any:
        attribute = getattr(self._store, name)
        if not inspect.iscoroutinefunction(attribute):
            return attribute
        observe = self._histogram.labels(call=name).observe

        @functools.wraps(attribute)
        async def timed(*args: Any, **kwargs: Any) -> Any:
            started = time.perf_counter()
            try:
                return await cast(Callable[..., Awaitable[Any]], attribute)(*args, **kwargs)
            finally:
                observe(time.perf_counter() - started)

        setattr(self, name, timed)  # built once per method
        return timed


def timed_store(store: Store, histogram: Histogram) -> Store:
    """``store``, with each call's duration observed in ``histogram`` (label ``call``)."""
    return cast(Store, _TimedStore(store, histogram))


@dataclass(frozen=True, slots=True)
class RunMetrics:
    run: Run
    pages_per_second: float
    claims_held: int
    live_workers: int
    outcomes: tuple[OutcomeCount, ...]


async def gather_run_metrics(
    store: Store, samples: SampleBook, *, worker_ttl: float, now: float
) -> list[RunMetrics]:
    """What one scrape reports about each active run."""
    gathered = []
    for run in await store.list_active_runs():
        claims = await store.list_claims(run.id)
        workers = await store.list_workers(run.id)
        live = [w for w in workers if w.stopped_at is None and now - w.last_heartbeat <= worker_ttl]
        gathered.append(
            RunMetrics(
                run=run,
                pages_per_second=samples.rate(run.id) or 0.0,
                claims_held=sum(1 for c in claims if c.expires_at > now),
                live_workers=len(live),
                outcomes=tuple(await store.count_outcomes(run.id)),
            )
        )
    return gathered


class _RunsCollector(Collector):
    """Renders one scrape's :class:`RunMetrics`."""

    def __init__(self, runs: list[RunMetrics]) -> None:
        self._runs = runs

    def collect(self) -> Iterator[Metric]:
        yield self._fetches()
        yield self._counter("sitesync_pages_fetched", "Fetch attempts that got an HTTP response.",
                            lambda m: m.run.counters.pages_fetched)  # fmt: skip
        yield self._counter("sitesync_retries", "Failed attempts sent back to pending.",
                            lambda m: m.run.counters.retries)  # fmt: skip
        gauges: list[tuple[str, str, Callable[[RunMetrics], float]]] = [
            ("sitesync_pages_per_second", "Pages/s over the last samples (30 s).",
             lambda m: m.pages_per_second),
            ("sitesync_pending_tasks", "Tasks waiting for a worker (sum() for the total).",
             lambda m: m.run.counters.pending),
            ("sitesync_in_flight_tasks", "Tasks leased to workers (assigned).",
             lambda m: m.run.counters.assigned),
            ("sitesync_claims_held", "Hosts held by a live claim.", lambda m: m.claims_held),
            ("sitesync_live_workers", "Workers with a recent heartbeat.",
             lambda m: m.live_workers),
        ]  # fmt: skip
        for name, documentation, value in gauges:
            yield self._gauge(name, documentation, value)
        status = GaugeMetricFamily(
            "sitesync_run_status", "1 for each active run, labelled with its status.",
            labels=["run_id", "status"],
        )  # fmt: skip
        for m in self._runs:
            status.add_metric([str(m.run.id), m.run.status.value], 1)
        yield status

    def _fetches(self) -> Metric:
        family = CounterMetricFamily(
            "sitesync_fetches",
            "Finished tasks of active runs by final outcome and HTTP status class.",
            labels=["run_id", "outcome", "status_class"],
        )
        for m in self._runs:
            for count in m.outcomes:
                family.add_metric([str(m.run.id), count.outcome, count.status_class], count.tasks)
        return family

    def _counter(self, name: str, doc: str, value: Callable[[RunMetrics], float]) -> Metric:
        family = CounterMetricFamily(name, doc, labels=["run_id"])
        for m in self._runs:
            family.add_metric([str(m.run.id)], value(m))
        return family

    def _gauge(self, name: str, doc: str, value: Callable[[RunMetrics], float]) -> Metric:
        family = GaugeMetricFamily(name, doc, labels=["run_id"])
        for m in self._runs:
            family.add_metric([str(m.run.id)], value(m))
        return family


def render(runs: list[RunMetrics], latency: Histogram) -> bytes:
    """The text exposition of one scrape."""
    registry = CollectorRegistry(auto_describe=False)
    registry.register(_RunsCollector(runs))
    registry.register(latency)
    return generate_latest(registry)
