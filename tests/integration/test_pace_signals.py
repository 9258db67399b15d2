"""Adaptive politeness reads the site's signals only (issue 28), against real loopback servers.

- A crawler busy with its own work (a CPU-heavy plugin) does not slow a fast site down; a
  site whose own latency rises fivefold is slowed as soon as before.
- A few URLs that stall on a healthy site cost those URLs their retries, not the host its
  pace; timeouts across the host's URLs still slow it.
- One URL's retries wait no less than the gap before them.

The real-process runs of the same cases are in tests/acceptance/test_pace_signals_cli.py.
Real waits here are the servers' (a stall, a latency): their timing is what is tested.
"""

from __future__ import annotations

import asyncio
import collections
import itertools
import json
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from sitesync.config import Settings, load_settings
from sitesync.fetch.adaptive import PaceSettings
from sitesync.fetch.http import HttpFetcher
from sitesync.fetch.politeness import HostLimiter
from sitesync.models import HostState, Run
from sitesync.runs.crawl import crawl
from sitesync.runs.request import CrawlRequest, prepare_run
from sitesync.store.sqlite.store import SqliteStore
from sitesync.testing import OPEN_LOOPBACK
from sitesync.testing.load import LoadedSite, TroubledSite
from sitesync.urls import url_host
from tests.integration.test_adaptive_politeness import answered, watching

BUSY_PLUGIN = Path(__file__).parents[1] / "plugin_packages" / "busy"
#: The issue's site, and sitesync's defaults, at 1/40 of their time: the shape is the same
#: (1 s delay, 20 s read and 60 s total timeouts, headers after 40 s, a byte a second).
SCALE = 1 / 40


def scaled_defaults(db: str, **overrides: object) -> Settings:
    """sitesync's default politeness, timeouts and retries, every time in them scaled."""
    values: dict[str, object] = {
        "db": db, "respect_robots": False, "sitemaps": False, "plugins": (),
        "delay": 1.0 * SCALE, "connect_timeout": 10.0 * SCALE, "read_timeout": 20.0 * SCALE,
        "total_timeout": 60.0 * SCALE, "retry_backoff": 1.0 * SCALE,
        "retry_backoff_max": 60.0 * SCALE, "adaptive_recovery_seconds": 20.0 * SCALE,
        "adaptive_max_delay": 30.0 * SCALE,
    }  # fmt: skip
    values.update(overrides)
    return load_settings(**values)


async def crawl_watched(settings: Settings, root: str) -> tuple[Run, list[HostState], float]:
    """Crawl ``root``; the run, every pace the store held for its host, and the seconds."""
    store = await SqliteStore.open(settings.db)
    try:
        run, settings = await prepare_run(store, CrawlRequest(seeds=(root,)), settings)
        started = time.monotonic()
        async with watching(store, url_host(root)) as seen:
            final = await crawl(store, run, settings)
        return final, [s for s in seen if s.pace_reason], time.monotonic() - started
    finally:
        await store.close()


async def hog(stop: asyncio.Event) -> None:
    """Keep the event loop busy in 30 ms slices, as a CPU-heavy plugin does."""
    while not stop.is_set():
        until = time.perf_counter() + 0.03
        while time.perf_counter() < until:
            pass
        await asyncio.sleep(0)


# -- the crawler's own load is not the site's ------------------------------------------------


async def test_the_time_to_first_byte_says_how_much_of_it_the_loop_was_busy() -> None:
    with LoadedSite(pages=10, limit=None, base_latency=0.1) as site:
        async with HttpFetcher(network=OPEN_LOOPBACK) as fetcher:
            calm = await fetcher.fetch(site.root)
            stop = asyncio.Event()
            hogs = [asyncio.create_task(hog(stop)) for _ in range(3)]
            try:
                busy = await fetcher.fetch(f"{site.root}p/1")
            finally:
                stop.set()
                await asyncio.gather(*hogs)
    assert calm.status == busy.status == 200
    # The server holds each answer 0.1 s: the site's own time, with the loop idle.
    assert calm.first_byte is not None and calm.first_byte >= 0.1
    assert calm.first_byte_busy < 0.05
    # With the loop kept busy, most of the wait was the loop's: it says so.
    assert busy.first_byte is not None and busy.first_byte_busy >= 0.75 * busy.first_byte


@pytest.fixture
def fast_site() -> Iterator[str]:
    """A fast site of 40 pages in a process of its own: a server thread in the test's process
    would share the interpreter with the busy plugin, and be slowed by it for real."""
    command = [sys.executable, "-m", "sitesync.testing", "--hosts", "1", "--pages-per-host",
               "40", "--no-log"]  # fmt: skip
    with subprocess.Popen(command, stdout=subprocess.PIPE, text=True) as proc:
        try:
            assert proc.stdout is not None
            yield json.loads(proc.stdout.readline())["root_urls"][0]
        finally:
            proc.terminate()


@pytest.mark.slow
async def test_a_crawler_busy_with_its_own_work_never_slows_a_fast_site(
    fast_site: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The issue's case: a CPU-bound crawler at per-host concurrency 32. Every response waits
    for the loop, which a stopwatch read as a latency ten times the site's normal: before
    this was fixed, each of these runs backed off ("latency 0.28 s, 10x its normal 0.03 s")."""
    monkeypatch.syspath_prepend(str(BUSY_PLUGIN))
    monkeypatch.setenv("BUSY_PLUGIN_SECONDS", "0.02")
    for n in range(10):
        settings = load_settings(
            db=str(tmp_path / f"busy{n}.db"), concurrency=32, per_host_concurrency=32, delay=0,
            respect_robots=False, sitemaps=False, plugins=("busy",),
        )  # fmt: skip
        run, paces, _ = await crawl_watched(settings, fast_site)
        assert run.counters.completed == 40, n
        assert paces == [], f"run {n + 1} of 10 slowed the host: {paces}"


async def test_a_fivefold_rise_in_the_sites_latency_backs_off_at_the_third_slow_answer() -> None:
    """As before: the median of the last five answers, so the third slow one tips it."""
    limiter = HostLimiter(
        concurrency=1, delay=0.0, adaptive=PaceSettings(max_delay=30.0, recovery_seconds=60.0)
    )
    with LoadedSite(pages=40, limit=None, base_latency=0.05) as site:
        async with HttpFetcher(network=OPEN_LOOPBACK) as fetcher:
            pages = itertools.count(1)

            async def ask() -> object:
                async with limiter.slot(site.host) as turn:
                    result = await fetcher.fetch(f"{site.root}p/{next(pages)}")
                assert result.status == 200
                return turn.saw(result)

            for _ in range(15):
                assert await ask() is None
            site.extra_latency = 0.2  # 0.25 s: five times the site's normal 0.05 s
            slow = [await ask() for _ in range(3)]
    # By the third slow answer (the third itself, on a quiet machine: one slow answer among
    # the last normal ones may tip the median a little sooner).
    assert [s for s in slow if s is not None] != []
    learned = limiter.learned(site.host)
    assert learned is not None and learned.reason.startswith("backing off: latency 0.2")


# -- one slow URL is not a slow site ---------------------------------------------------------


@pytest.mark.slow
async def test_three_stalling_urls_cost_their_retries_not_the_hosts_pace(tmp_path: Path) -> None:
    """The issue's site, crawled with the defaults (scaled): adaptive on and off at once,
    each against a site of its own, so the machine's load weighs on both alike."""
    with (
        TroubledSite(scale=SCALE, ip="127.0.0.4") as on,
        TroubledSite(scale=SCALE, ip="127.0.0.5") as off,
    ):
        (on_run, on_paces, on_seconds), (off_run, _, off_seconds) = await asyncio.gather(
            crawl_watched(scaled_defaults(str(tmp_path / "on.db")), on.root),
            crawl_watched(
                scaled_defaults(str(tmp_path / "off.db"), adaptive_politeness=False), off.root
            ),
        )
    for site, run in ((on, on_run), (off, off_run)):
        assert (run.counters.completed, run.counters.failed) == (150, 3)  # the stalls failed
        asked = collections.Counter(a.path for a in site.answers)
        assert set(asked) == {u.removeprefix(site.root[:-1]) for u in site.page_urls()}
        assert [asked[f"/t/{name}"] for name in site.troubles] == [3, 3, 3]  # their retries
    assert on_paces == []  # the host was never slowed
    assert on_seconds <= 1.1 * off_seconds + 0.3, (on_seconds, off_seconds)


@pytest.mark.slow
async def test_timeouts_across_the_hosts_urls_still_slow_it(tmp_path: Path) -> None:
    with LoadedSite(pages=30, limit=None, base_latency=0.0) as site:

        async def hang_for_a_while() -> None:
            await answered(site, 8)
            site.extra_latency = 2.0  # every answer now comes after the read timeout ...
            await answered(site, 12)
            site.extra_latency = 0.0  # ... for four URLs in a row, then the host heals

        asyncio.get_running_loop().create_task(hang_for_a_while())
        settings = scaled_defaults(
            str(tmp_path / "hang.db"), delay=0.02, read_timeout=0.3, total_timeout=1.0
        )
        run, paces, _ = await crawl_watched(settings, site.root)
    assert run.counters.completed == 30
    assert paces and paces[0].pace_reason == "backing off after timeouts"
    # The delay doubled (0.04 s: under the smallest step, 0.1 s), not to twice the spacing
    # of the hanging requests (over 0.6 s).
    assert paces[0].pace_delay == pytest.approx(0.1, abs=0.005)


# -- one URL's retries back off monotonically ------------------------------------------------


async def test_a_urls_retries_never_come_sooner_than_the_one_before(tmp_path: Path) -> None:
    """Its first answer asks for 1 s (Retry-After), then it answers 500: the policy alone
    would retry it 0.1 s later; the gap before it was a second."""
    with TroubledSite(pages=3, troubles=("failing",), retry_after=1) as site:
        settings = scaled_defaults(str(tmp_path / "retry.db"), retry_backoff=0.05)
        run, _, _ = await crawl_watched(settings, site.root)
    assert run.counters.failed == 1
    asked = [a.started for a in site.answers if a.path == "/t/failing"]
    assert [a.status for a in site.answers if a.path == "/t/failing"] == [503, 500, 500]
    gaps = [b - a for a, b in itertools.pairwise(asked)]
    assert gaps[0] >= 1.0, gaps  # Retry-After
    assert gaps[1] >= gaps[0] - 0.05, gaps  # at least the gap before (less the 500's answer)
