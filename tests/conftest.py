from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path

import pytest

from sitesync.store.base import Store
from sitesync.store.sqlite.store import SqliteStore
from sitesync.testing import LoopbackSite, SiteSpec

BACKENDS = ["sqlite"]


@pytest.fixture(params=BACKENDS)
async def store(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Store]:
    """A fresh, empty store of each backend (a real database, never a fake)."""
    if request.param == "sqlite":
        opened = await SqliteStore.open(tmp_path / "store.db")
    else:  # pragma: no cover - new backends register here
        raise AssertionError(request.param)
    try:
        yield opened
    finally:
        await opened.close()


@pytest.fixture
def site_factory() -> Iterator[Callable[[SiteSpec], LoopbackSite]]:
    """Start LoopbackSites for a test and stop them after it."""
    started: list[LoopbackSite] = []

    def make(spec: SiteSpec) -> LoopbackSite:
        site = LoopbackSite(spec)
        site.start()
        started.append(site)
        return site

    yield make
    for site in started:
        site.stop()
