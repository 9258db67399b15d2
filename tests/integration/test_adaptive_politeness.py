"""Adaptive politeness against real loopback servers that struggle, and through real stores.

Each crawl runs in process against a :class:`~sitesync.testing.load.LoadedSite` with a small
configured delay and per-host concurrency 4; what the server saw (statuses, start times) and
what the store kept (the host's pace, polled during the crawl) are the evidence.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

from sitesync.cli import app
from sitesync.config import Settings, load_settings
from sitesync.fetch.adaptive import LearnedPace, PaceSettings
from sitesync.fetch.gate import RequestGate
from sitesync.fetch.http import HttpFetcher
from sitesync.fetch.polite import PoliteClient
from sitesync.fetch.politeness import HostLimiter
from sitesync.models import HostState, Run
from sitesync.readmodel.overview import Overview, OverviewOptions
from sitesync.readmodel.schema import RunSummary
from sitesync.runs.crawl import crawl
from sitesync.runs.request import CrawlRequest, prepare_run
from sitesync.store import open_store
from sitesync.store.base import Store
from sitesync.store.sqlite.store import SqliteStore
from sitesync.testing import OPEN_LOOPBACK
from sitesync.testing.load import LoadedSite
from tests.contract.test_frontier_store import running_run, task

DELAY = 0.05


def settings_for(tmp_path: Path, **overrides: object) -> Settings:
    values: dict[str, object] = {
        "db": str(tmp_path / "crawl.db"),
        "concurrency": 8,
        "per_host_concurrency": 4,
        "delay": DELAY,
        "retry_backoff": 0.2,
        "retry_backoff_max": 1.0,
        "max_retries": 10,
        "respect_robots": False,
        "sitemaps": False,
        "plugins": (),
        "adaptive_recovery_seconds": 60.0,
    }
    values.update(overrides)
    return load_settings(**values)


@pytest.fixture
def site() -> Iterator[LoadedSite]:
    with LoadedSite(pages=40, limit=None) as served:
        yield served


@contextlib.asynccontextmanager
async def watching(store: Store, host: str) -> AsyncIterator[list[HostState]]:
    """Every distinct pace the store holds for ``host`` while the block runs."""
    seen: list[HostState] = []

    async def poll() -> None:
        while True:
            state = await store.get_host_state(host)
            if state is not None and (not seen or seen[-1] != state):
                seen.append(state)
            await asyncio.sleep(0.02)

    task = asyncio.create_task(poll())
    try:
        yield seen
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
        state = await store.get_host_state(host)
        if state is not None and (not seen or seen[-1] != state):
            seen.append(state)


async def crawl_site(settings: Settings, site: LoadedSite) -> tuple[Run, list[HostState]]:
    store = await SqliteStore.open(settings.db)
    try:
        run, settings = await prepare_run(store, CrawlRequest(seeds=(site.root,)), settings)
        async with watching(store, site.host) as seen:
            final = await crawl(store, run, settings)
        return final, seen
    finally:
        await store.close()


async def answered(site: LoadedSite, count: int) -> None:
    """Until the server (in its own thread) has answered ``count`` requests."""
    while True:
        if len(site.answers) >= count:
            return
        await asyncio.sleep(0.005)


def burst(site: LoadedSite, status: int, *, after: int = 5, seconds: float = 1.0) -> None:
    """Answer ``status`` to everything for ``seconds``, from the server's ``after``-th
    answer on (once the crawler has many pages in hand)."""

    async def run() -> None:
        await answered(site, after)
        site.forced_status = status
        await asyncio.sleep(seconds)  # the server's overload lasts this long: its timing is tested
        site.forced_status = None

    asyncio.get_running_loop().create_task(run())


@pytest.mark.slow
@pytest.mark.parametrize("status", [503, 429])
async def test_a_burst_of_overload_answers_slows_the_host_down(
    site: LoadedSite, tmp_path: Path, status: int
) -> None:
    burst(site, status)  # no Retry-After: only adaptation slows the crawler down
    settings = settings_for(tmp_path / "on", adaptive_recovery_seconds=3.0)
    run, seen = await crawl_site(settings, site)
    on_refused = site.count(status)
    assert run.counters.completed == 40
    slowed = [s for s in seen if s.pace_reason == f"backing off after {status}s"]
    assert slowed and max(s.pace_delay or 0 for s in slowed) >= 4 * DELAY
    assert min(s.pace_concurrency or 4 for s in slowed) < 4

    with LoadedSite(pages=40, limit=None) as fixed:  # the same burst, adaptation off
        burst(fixed, status)
        settings = settings_for(tmp_path / "off", adaptive_politeness=False)
        await crawl_site(settings, fixed)
        off_refused = fixed.count(status)
    assert on_refused * 2 < off_refused, (on_refused, off_refused)


@pytest.mark.slow
async def test_rising_latency_slows_the_host_down_before_anything_fails(
    site: LoadedSite, tmp_path: Path
) -> None:
    async def slow_down_later() -> None:
        await answered(site, 15)
        site.extra_latency = 0.3  # the host is struggling, but still answers

    asyncio.get_running_loop().create_task(slow_down_later())
    run, seen = await crawl_site(settings_for(tmp_path, adaptive_latency_factor=3.0), site)
    assert run.counters.completed == 40
    assert site.count(503) == site.count(429) == 0
    reasons = [s.pace_reason or "" for s in seen]
    assert any(r.startswith("backing off: latency") for r in reasons), reasons
    assert any((s.pace_delay or 0) > DELAY for s in seen)
    # At the end the host has fewer requests at once than configured (one fewer per back-off).
    assert min(s.pace_concurrency or 4 for s in seen) < 4


@pytest.mark.slow
async def test_the_host_recovers_after_it_heals(site: LoadedSite, tmp_path: Path) -> None:
    site.pages = 80
    burst(site, 503, seconds=0.5)
    settings = settings_for(tmp_path, adaptive_recovery_seconds=0.5)
    run, seen = await crawl_site(settings, site)
    assert run.counters.completed == 80
    assert any(s.pace_reason == "backing off after 503s" for s in seen)
    final = seen[-1]
    assert final.pace_reason == "" and final.pace_delay == pytest.approx(DELAY)
    # Recovered for real: the last requests came faster than right after the burst.
    healed = max(a.started for a in site.answers if a.status == 503)
    ok = [a.started for a in site.answers if a.status == 200 and a.started > healed]
    first, last = ok[:5], ok[-10:]
    assert (last[-1] - last[0]) / 9 < (first[-1] - first[0]) / 4


@pytest.mark.slow
async def test_a_host_handed_to_another_worker_keeps_its_learned_delay(
    site: LoadedSite, tmp_path: Path
) -> None:
    site.pages = 20
    burst(site, 503)
    settings = settings_for(tmp_path)
    _, seen = await crawl_site(settings, site)  # the first worker learns the host's pace
    learned = seen[-1]
    assert learned.pace_reason == "backing off after 503s"
    assert learned.pace_delay is not None and learned.pace_delay >= 4 * DELAY

    site.answers.clear()
    site.pages = 10
    run, _ = await crawl_site(settings, site)  # another worker, another run, same host
    assert run.counters.completed == 10
    starts = [a.started for a in site.answers]
    gaps = [b - a for a, b in itertools.pairwise(starts[:8])]
    # Configured: 4 at once, 0.05 s apart. Learned: slower, at once, from its first request.
    assert min(gaps) >= 0.8 * learned.pace_delay * 0.5, (gaps, learned.pace_delay)
    assert sum(gaps) / len(gaps) >= 2 * DELAY
    # `sitesync show` names the host's pace (still recovering: recovery takes 60 s here).
    shown = await asyncio.to_thread(
        CliRunner().invoke, app, ["show", str(run.id), "--db", settings.db], env={"COLUMNS": "250"}
    )
    assert shown.exit_code == 0, shown.output
    assert "backing off after 503s" in shown.output


async def test_a_pace_is_kept_and_shown_by_each_store(store: Store) -> None:
    await store.save_host_pause("a.test", until=5.0)
    await store.save_host_pace(
        "a.test", delay=2.4, concurrency=1, reason="backing off after 503s", since=100.0
    )
    state = await store.get_host_state("a.test")
    assert state is not None and state.paused_until == 5.0  # the pause is left alone
    assert (state.pace_delay, state.pace_concurrency, state.pace_since) == (2.4, 1, 100.0)
    assert state.pace_text() == "host a.test: 2.4 s, backing off after 503s"
    await store.save_host_pace("a.test", delay=0.5, concurrency=4, reason="", since=200.0)
    recovered = await store.get_host_state("a.test")
    assert recovered is not None and recovered.pace_text() is None


async def slowed_run(db: str) -> int:
    store = await open_store(db)
    try:
        run_id = await running_run(store)
        await store.add_tasks(run_id, [task(n, host="slow.test") for n in range(3)])
        await store.add_tasks(run_id, [task(n, host="fine.test") for n in range(3)])
        reason = "backing off after 503s"
        await store.save_host_pace("slow.test", delay=2.4, concurrency=1, reason=reason, since=1.0)
        await store.save_host_pace("fine.test", delay=0.5, concurrency=4, reason="", since=1.0)
        await store.flush_host_stats(run_id)
        return run_id
    finally:
        await store.close()


def test_status_show_and_the_api_name_a_slowed_host(tmp_path: Path) -> None:
    db = str(tmp_path / "status.db")
    run_id = asyncio.run(slowed_run(db))
    status = CliRunner().invoke(app, ["status", "--db", db], env={"COLUMNS": "200"})
    assert status.exit_code == 0, status.output
    assert "host slow.test: 2.4 s, backing off after 503s" in status.output
    assert "fine.test" not in status.output  # recovered: nothing to say

    async def summary() -> RunSummary:
        store = await open_store(db)
        try:
            overview = Overview(store, OverviewOptions())
            return await overview.summary(await store.get_run(run_id))
        finally:
            await store.close()

    shown = asyncio.run(summary())
    assert shown.slowed_hosts == ("host slow.test: 2.4 s, backing off after 503s",)


async def test_a_plugins_request_through_the_gate_slows_the_host_too(site: LoadedSite) -> None:
    """Assets and sitemaps ask through the worker's polite client: their 503s count."""
    limiter = HostLimiter(
        concurrency=4, delay=DELAY, adaptive=PaceSettings(max_delay=30.0, recovery_seconds=60.0)
    )
    kept: list[tuple[str, LearnedPace]] = []

    async def keep(host: str, learned: LearnedPace) -> None:
        kept.append((host, learned))

    async def anyone(host: str) -> bool:
        return True

    site.forced_status = 503
    async with HttpFetcher(network=OPEN_LOOPBACK) as fetcher:
        gate = RequestGate(limiter=limiter, robots=None, may_request=anyone, keep_pace=keep)
        client = PoliteClient(fetcher, gate)
        result = await client.fetch(site.root)
        assert result.status == 503 and not kept  # one URL's 503: not yet the host's
        result = await client.fetch(f"{site.root}p/1")  # another URL's: the host's
    assert result.status == 503
    assert kept and kept[0][0] == site.host
    assert kept[0][1].reason == "backing off after 503s"
    assert limiter.concurrency_of(site.host) == 2
    assert kept[0][1].delay > 1.5 * DELAY
    assert limiter.next_start(site.host) > time.monotonic()  # the next request waits for it
