"""Adaptive politeness reads the site's signals only (issue 28): one real `sitesync crawl`
process per case, against loopback servers in this process (their own interpreter, so a
busy crawler cannot slow them down). The in-process cases, and the 10 runs of the busy one,
are in tests/integration/test_pace_signals.py.

Real waits: the servers' latencies and stalls, and the crawls they slow, are what is tested.
"""

from __future__ import annotations

import asyncio
import collections
import itertools
import subprocess
import time
from pathlib import Path

import pytest

from sitesync.models import HostState, TaskState
from sitesync.store import open_store
from sitesync.testing import LoopbackSite, SiteSpec
from sitesync.testing.load import LoadedSite, TroubledSite
from tests.acceptance._cli import communicate, read_run, run_in_process, sitesync

pytestmark = pytest.mark.slow

BUSY_PLUGIN = Path(__file__).parents[1] / "plugin_packages" / "busy"
SCALE = 1 / 40  # the site and sitesync's defaults, every time in them scaled


def scaled_defaults(db: Path, **overrides: str) -> dict[str, str]:
    """sitesync's default politeness, timeouts and retries, every time in them scaled."""
    values = {
        "db": str(db), "respect_robots": "false", "sitemaps": "false", "plugins": "",
        "delay": f"{1.0 * SCALE}", "connect_timeout": f"{10.0 * SCALE}",
        "read_timeout": f"{20.0 * SCALE}", "total_timeout": f"{60.0 * SCALE}",
        "retry_backoff": f"{1.0 * SCALE}", "retry_backoff_max": f"{60.0 * SCALE}",
        "adaptive_recovery_seconds": f"{20.0 * SCALE}", "adaptive_max_delay": f"{30.0 * SCALE}",
    }  # fmt: skip
    values.update(overrides)
    return values


def host_state(db: Path, host: str) -> HostState | None:
    async def read() -> HostState | None:
        store = await open_store(str(db))
        try:
            return await store.get_host_state(host)
        finally:
            await store.close()

    return asyncio.run(read())


def crawl(root: str, settings: dict[str, str], **env: str) -> subprocess.Popen[str]:
    return sitesync("crawl", root, "--no-progress", settings=settings, env=env)


def finished(proc: subprocess.Popen[str], timeout: float = 60.0) -> None:
    out, err = communicate(proc, timeout)
    assert proc.returncode == 0, (out, err)


def test_a_crawler_busy_with_a_cpu_heavy_plugin_leaves_a_fast_sites_pace_alone(
    tmp_path: Path,
) -> None:
    db = tmp_path / "busy.db"
    settings = {"db": str(db), "concurrency": "32", "per_host_concurrency": "32", "delay": "0",
                "respect_robots": "false", "sitemaps": "false", "plugins": "busy"}  # fmt: skip
    # Each answer takes the site 0.1 s: its normal latency is then not the few milliseconds
    # a loaded test machine multiplies by five on its own, while the plugin's busy loop
    # (up to 32 x 0.02 s behind each batch of answers) still would, were it not discounted.
    spec = SiteSpec(hosts=1, pages_per_host=60, cross_host_links=False, delay=0.1)
    with LoopbackSite(spec) as site:
        proc = crawl(
            site.root_urls[0], settings, PYTHONPATH=str(BUSY_PLUGIN), BUSY_PLUGIN_SECONDS="0.02"
        )
        finished(proc)
        host = site.root_urls[0].split("/")[2]
    _, counts, _ = read_run(db)
    assert counts[TaskState.COMPLETED] == 60
    state = host_state(db, host)
    assert state is None or not state.pace_reason, state.pace_text() if state else None


def test_a_fivefold_rise_in_latency_still_slows_the_host(tmp_path: Path) -> None:
    db = tmp_path / "latency.db"
    settings = {"db": str(db), "per_host_concurrency": "1", "delay": "0.05",
                "respect_robots": "false", "sitemaps": "false", "plugins": ""}  # fmt: skip
    with LoadedSite(pages=30, limit=None, base_latency=0.05) as site:
        proc = crawl(site.root, settings)
        while len(site.answers) < 15:
            assert proc.poll() is None, communicate(proc, 1)
            time.sleep(0.01)
        site.extra_latency = 0.2  # 0.25 s: five times its normal 0.05 s
        rise = time.time()
        first: HostState | None = None
        while proc.poll() is None and first is None:
            state = host_state(db, site.host)
            first = state if state is not None and state.pace_reason else None
            time.sleep(0.02)
        finished(proc)
        answers = list(site.answers)
    assert first is not None and first.pace_since is not None
    assert (first.pace_reason or "").startswith("backing off: latency 0.2"), first.pace_reason
    # Slowed within three slow answers (the median of five), as before: those the server
    # began to answer before the crawler backed off.
    slow_before = [a for a in answers if rise <= a.wall < first.pace_since]
    assert 1 <= len(slow_before) <= 3, len(slow_before)


def test_three_stalling_urls_on_a_healthy_site_cost_it_no_time(tmp_path: Path) -> None:
    """The issue's site with the defaults (scaled), adaptive pacing on and off, two crawls at
    once so that the machine's load weighs on both alike."""
    with (
        TroubledSite(scale=SCALE, ip="127.0.0.4") as on,
        TroubledSite(scale=SCALE, ip="127.0.0.5") as off,
    ):
        started = time.monotonic()
        procs = {
            "on": crawl(on.root, scaled_defaults(tmp_path / "on.db")),
            "off": crawl(
                off.root, scaled_defaults(tmp_path / "off.db", adaptive_politeness="false")
            ),
        }
        seconds: dict[str, float] = {}
        paces: set[str] = set()  # every pace the adaptive crawl stored while it ran
        while len(seconds) < 2:
            for name, proc in procs.items():
                if name not in seconds and proc.poll() is not None:
                    seconds[name] = time.monotonic() - started
            assert time.monotonic() - started < 120, "the crawls did not finish on their own"
            # (once the crawl has asked: its store is created and migrated by then)
            if "on" not in seconds and on.answers:
                during = host_state(tmp_path / "on.db", on.host)
                if during is not None and during.pace_reason:
                    paces.add(during.pace_text() or during.pace_reason)
            time.sleep(0.05)
        for proc in procs.values():
            finished(proc)
    for name, site in (("on", on), ("off", off)):
        _, counts, _ = read_run(tmp_path / f"{name}.db")
        assert (counts[TaskState.COMPLETED], counts[TaskState.FAILED]) == (150, 3), name
        asked = collections.Counter(a.path for a in site.answers)
        assert len(asked) == 153 and [asked[f"/t/{t}"] for t in site.troubles] == [3, 3, 3]
    state = host_state(tmp_path / "on.db", on.host)
    assert state is None or not state.pace_reason, state.pace_text() if state else None
    assert paces == set()  # never slowed, not even for a while
    # Time: a back-off after the timeouts cost 62 % (benchmarks/README.md, issue 28); two
    # crawls side by side on a loaded machine differ by up to a fifth on their own (16 %
    # seen under the whole suite with the CPUs busy elsewhere), so the bar is 30 %.
    assert seconds["on"] <= 1.3 * seconds["off"] + 0.5, seconds
    # What the operator sees: the three URLs failed on their timeouts, the host unslowed.
    shown = run_in_process(
        "show", "1", settings={"db": str(tmp_path / "on.db")}, env={"COLUMNS": "250"}
    )
    assert shown.returncode == 0 and shown.stdout.count("timeout") >= 3, shown.stdout
    assert "backing off" not in shown.stdout


def test_a_urls_retries_wait_longer_each_time(tmp_path: Path) -> None:
    """A URL asks for 1 s once (503, Retry-After), then answers 500: before, its next retry
    came after the policy's 0.1 s; now no gap is shorter than the one before it."""
    db = tmp_path / "retry.db"
    with TroubledSite(pages=3, troubles=("failing",), retry_after=1) as site:
        finished(crawl(site.root, scaled_defaults(db, retry_backoff="0.05")))
        failing = [a for a in site.answers if a.path == "/t/failing"]
    assert [a.status for a in failing] == [503, 500, 500]
    gaps = [b.started - a.started for a, b in itertools.pairwise(failing)]
    assert gaps[0] >= 1.0 and gaps[1] >= gaps[0] - 0.05, gaps
    why = run_in_process("why", f"{site.root}t/failing", settings={"db": str(db)})
    assert why.returncode == 0 and why.stdout.count("attempt ") == 3, why.stdout
