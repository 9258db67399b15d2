from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path

import pytest

from sitesync.store.base import Store
from sitesync.store.postgres.store import PostgresStore
from sitesync.store.sqlite.store import SqliteStore
from sitesync.testing import LOOPBACK_NETWORKS, LoopbackSite, SiteSpec
from tests import _postgres

BACKENDS = ["sqlite", "postgres"]

#: Crawls refuse loopback and other non-public addresses by default (issue 11), and every test
#: site is a loopback server: the whole session opens loopback through this variable, which
#: in-process Settings read and CLI subprocesses inherit (tests/acceptance/_cli.py keeps it).
#: A fetcher built by hand takes ``network=sitesync.testing.OPEN_LOOPBACK`` instead. Tests of
#: the safe default remove it (``monkeypatch.delenv(OPEN_NETWORKS_ENV)``).
OPEN_NETWORKS_ENV = "SITESYNC_ALLOWED_NETWORKS"


#: ``sitesync crawl`` starts a helper process per core by default (issue 13, item 8); the
#: suite's expectations (one worker id, exact request orders) are of one process, so every
#: crawl of the session uses one unless a test asks for more (``--processes N``).
PROCESSES_ENV = "SITESYNC_PROCESSES"


@pytest.fixture(scope="session", autouse=True)
def open_loopback() -> Iterator[None]:
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv(OPEN_NETWORKS_ENV, ",".join(LOOPBACK_NETWORKS))
        patch.setenv(PROCESSES_ENV, "1")
        yield


@pytest.fixture(scope="session")
def postgres_dsn() -> Iterator[str]:
    """A real PostgreSQL server for the session; an error (never a skip) when there is none."""
    with contextlib.ExitStack() as stack:
        try:
            dsn = stack.enter_context(_postgres.postgres_server())
        except _postgres.PostgresUnavailable as exc:
            problem = str(exc)  # failed outside the except: one line, no chained traceback
        else:
            problem = ""
        if problem:
            pytest.fail(problem, pytrace=False)
        yield dsn


@pytest.fixture
def postgres_schema(postgres_dsn: str) -> Iterator[str]:
    """An empty schema of its own for one test."""
    with _postgres.schema(postgres_dsn) as name:
        yield name


@pytest.fixture(params=BACKENDS)
async def store(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Store]:
    """A fresh, empty store of each backend (a real database, never a fake)."""
    opened: Store
    if request.param == "sqlite":
        opened = await SqliteStore.open(tmp_path / "store.db")
    elif request.param == "postgres":
        dsn = request.getfixturevalue("postgres_dsn")
        opened = await PostgresStore.open(dsn, schema=request.getfixturevalue("postgres_schema"))
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


@pytest.fixture(params=BACKENDS)
def db_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """What a user passes as --db, for each backend: a SQLite file, or a PostgreSQL URL
    whose search_path is a schema of the test's own."""
    if request.param == "sqlite":
        return str(tmp_path / "crawl.db")
    dsn = request.getfixturevalue("postgres_dsn")
    schema = request.getfixturevalue("postgres_schema")
    separator = "&" if "?" in dsn else "?"
    return f"{dsn}{separator}options=-csearch_path%3D{schema}"
