"""What the routes share, kept on ``app.state.dashboard``."""

from __future__ import annotations

from dataclasses import dataclass

from prometheus_client import Histogram
from starlette.requests import Request

from sitesync.config import Settings
from sitesync.readmodel.overview import Overview, OverviewOptions
from sitesync.readmodel.samples import SampleBook, Sampler
from sitesync.store.base import Store
from sitesync.web.metrics import store_latency_histogram, timed_store


@dataclass(slots=True)
class Dashboard:
    """The (timed) store, the samples and the settings of one app."""

    store: Store
    settings: Settings
    samples: SampleBook
    latency: Histogram
    sampler: Sampler

    @classmethod
    def build(cls, settings: Settings, store: Store) -> Dashboard:
        latency = store_latency_histogram()
        timed = timed_store(store, latency)
        samples = SampleBook()
        sampler = Sampler(timed, samples, interval=settings.dashboard_sample_seconds)
        return cls(timed, settings, samples, latency, sampler)

    @property
    def overview(self) -> Overview:
        return Overview(self.store, OverviewOptions.from_settings(self.settings, self.samples))


def dashboard_of(request: Request) -> Dashboard:
    dashboard: Dashboard = request.app.state.dashboard
    return dashboard
