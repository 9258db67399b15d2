from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import os
import random
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path

import pytest

from sitesync.store.base import Store
from sitesync.store.postgres.store import PostgresStore
from sitesync.store.sqlite.store import SqliteStore
from sitesync.testing import LOOPBACK_NETWORKS, LoopbackSite, SiteSpec
from tests import _postgres
from tests._clock import FakeClock
from tests._dashboard import chromium
from tests.acceptance._cli import reap

BACKENDS = ["sqlite", "postgres"]

__all__ = ["chromium"]  # a fixture (tests/_dashboard.py): one browser per pytest worker

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


def pytest_xdist_auto_num_workers(config: pytest.Config) -> int:
    """``-n auto``: two workers per core. The suite waits far more than it computes (real
    servers, real processes, leases and claims that expire): one run on this 2-core machine
    used 8.3 CPU-minutes in 18.3 minutes of wall time. More than two per core overloads a
    laptop's tests that judge a server's timing."""
    return min(8, 2 * (os.cpu_count() or 1))


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """The slow tests first: with ``-n``, a long test picked up last would run alone while
    the other workers sit idle. A stable sort keeps each group in file order."""
    items.sort(key=lambda item: item.get_closest_marker("slow") is None)


@pytest.fixture(autouse=True)
def no_cli_process_outlives_its_test() -> Iterator[None]:
    """A test that fails before waiting for the CLI processes it started would leave them
    running into the next test on that worker (and warn there, failing it): kill them."""
    yield
    reap()


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


@pytest.fixture(scope="session")
def _worker_schema(postgres_dsn: str) -> Iterator[_postgres.WorkerSchema]:
    """This pytest worker's migrated schema (tests/_postgres.py), migrated once."""
    shared = _postgres.WorkerSchema(postgres_dsn, _migrate)
    try:
        yield shared
    finally:
        shared.drop()


def _migrate(dsn: str, schema: str) -> None:
    # On a thread of its own: an async fixture (``store``) may ask for the schema from
    # inside the test's running event loop, where asyncio.run is refused.
    with concurrent.futures.ThreadPoolExecutor(1) as thread:
        thread.submit(asyncio.run, PostgresStore.migrate(dsn, schema=schema)).result()


@pytest.fixture
def postgres_schema(_worker_schema: _postgres.WorkerSchema) -> str:
    """A migrated schema with no rows, for this test alone (no other worker shares it, and
    the next test of this worker gets it emptied)."""
    return _worker_schema.fresh()


SEED_ENV = "SITESYNC_TEST_SEED"


@pytest.fixture
def rng() -> random.Random:
    """A random generator whose seed a failure shows (pytest prints a failed test's output):
    ``SITESYNC_TEST_SEED=N`` replays the same choices."""
    seed = int(os.environ.get(SEED_ENV) or random.SystemRandom().randrange(2**32))
    print(f"random choices from seed {seed}: replay with {SEED_ENV}={seed}")
    return random.Random(seed)


@pytest.fixture
def clock() -> FakeClock:
    """The ``store`` fixture's clock: a test of an expiry moves it instead of sleeping."""
    return FakeClock()


@pytest.fixture(params=BACKENDS)
async def store(
    request: pytest.FixtureRequest, tmp_path: Path, clock: FakeClock
) -> AsyncIterator[Store]:
    """A fresh, empty store of each backend (a real database, never a fake), on the test's
    ``clock``: time stands still in it until the test moves the clock."""
    opened: Store
    if request.param == "sqlite":
        opened = await SqliteStore.open(tmp_path / "store.db", clock=clock)
    elif request.param == "postgres":
        dsn = request.getfixturevalue("postgres_dsn")
        schema = request.getfixturevalue("postgres_schema")
        opened = await PostgresStore.open(dsn, schema=schema, clock=clock)
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
