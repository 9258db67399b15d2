"""Recurring scans of registered domains through the real CLI and real stores (SPEC S1, S2)."""

from __future__ import annotations

import asyncio
import os
import re
import subprocess
import sys
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

import pytest

from sitesync.config import Settings
from sitesync.models import Domain, Run, RunStatus
from sitesync.runs.crawl import crawl
from sitesync.runs.request import CrawlRequest, prepare_run
from sitesync.runs.scans import schedule_scan, start_due_scans
from sitesync.store import open_store
from sitesync.testing import LoopbackSite, SiteSpec
from tests.acceptance._cli import KEPT, communicate, run_in_process

pytestmark = pytest.mark.slow

# The real CLI entry point behind a start barrier: each process imports sitesync, says it
# is ready (a file), and waits for the others, so they all issue their command at once.
AT_THE_SAME_TIME = """
import pathlib, sys, time
from sitesync.cli import main
barrier, me, count = pathlib.Path(sys.argv[1]), sys.argv[2], int(sys.argv[3])
(barrier / me).touch()
while len(list(barrier.iterdir())) < count:
    time.sleep(0.001)
sys.argv = ["sitesync", *sys.argv[4:]]
main()
"""

# Fast, polite-enough settings for loopback sites (robots.txt stays on: an unreachable
# host then fails its root as "robots.txt unreachable", the subtle case of the rule).
FAST = {
    "scan_scheme": "http", "delay": "0", "per_host_concurrency": "0", "max_retries": "2",
    "retry_backoff": "0.05", "robots_recheck_seconds": "0.2", "total_timeout": "2",
    "connect_timeout": "1", "claim_seconds": "4", "heartbeat_seconds": "0.3",
    "sitemaps": "false", "plugins": "", "dead_host_recheck_seconds": "0.2",
}  # fmt: skip


@pytest.fixture(autouse=True)
def wide_tables(monkeypatch: pytest.MonkeyPatch) -> None:
    """The CLI's tables with one row per line, whatever the host names' lengths."""
    monkeypatch.setenv("COLUMNS", "250")


def run_cli(*args: str, settings: dict[str, str] | None = None) -> tuple[int, str, str]:
    """The CLI in this process (the several-process case starts its own processes)."""
    done = run_in_process(*args, settings=settings)
    return done.returncode, done.stdout, done.stderr


def import_domains(db: str, tmp_path: Path, scope: str, hosts: list[str]) -> None:
    listing = tmp_path / f"{scope}.txt"
    listing.write_text("\n".join(hosts) + "\n")
    code, out, err = run_cli("domains", "import", str(listing), "--scope", scope, "--db", db)
    assert code == 0, err
    assert f"imported {len(hosts)} domains" in out


def test_scans_started_at_once_from_several_processes_create_one_run(
    db_url: str, tmp_path: Path
) -> None:
    import_domains(db_url, tmp_path, "fr", ["a.example", "b.example"])
    barrier = tmp_path / "barrier"
    barrier.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith("SITESYNC_") or k in KEPT}
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", AT_THE_SAME_TIME, str(barrier), str(n), "3",
             "scan", "fr", "--db", db_url],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
        )
        for n in range(3)
    ]  # fmt: skip
    results = [(*communicate(proc, timeout=60), proc.returncode) for proc in procs]
    winners = [out for out, _, code in results if code == 0]
    losers = [err for _, err, code in results if code == 3]
    assert len(winners) == 1 and len(losers) == 2, results
    run_id = int(re.search(r"run (\d+): scan of scope 'fr' queued", winners[0]).group(1))  # type: ignore[union-attr]
    for err in losers:
        assert f"scope fr already has an active run: {run_id}" in err

    runs = asyncio.run(_runs(db_url))
    assert [(r.id, r.status, r.scope) for r in runs] == [(run_id, RunStatus.QUEUED, "fr")]
    assert set(runs[0].config.seeds) == {"https://a.example/", "https://b.example/"}


async def _runs(db: str) -> list[Run]:
    store = await open_store(db)
    try:
        return await store.list_runs()
    finally:
        await store.close()


def month(n: int) -> float:
    return datetime(2026, n, 1, 3, 0, tzinfo=UTC).timestamp()


async def _scheduled_scan(db: str, now: float) -> tuple[Run, dict[str, Domain]]:
    """What the supervisor does when a month comes round, then a worker crawling the run."""
    settings = Settings(db=db, **FAST)  # type: ignore[arg-type]
    store = await open_store(db)
    try:
        [queued] = await start_due_scans(store, settings, now=now)
        run, settings = await prepare_run(store, CrawlRequest(resume_run_id=queued.id), settings)
        ended = await crawl(store, run, settings)
        return ended, {d.host: d for d in await store.list_domains(scope="fr")}
    finally:
        await store.close()


async def _schedule(db: str, now: float) -> None:
    store = await open_store(db)
    try:
        await schedule_scan(store, "fr", "0 3 1 * *", now=now)
    finally:
        await store.close()


def test_a_host_down_two_months_running_leaves_the_scan_set_and_one_back_is_reset(
    db_url: str,
    tmp_path: Path,
    site_factory: Callable[[SiteSpec], LoopbackSite],
) -> None:
    site = site_factory(SiteSpec(hosts=1, pages_per_host=4, links_per_page=6))
    gone = f"127.0.0.240:{site.port}"  # nothing ever listens here
    back = f"127.0.0.241:{site.port}"  # down in January, up from February
    up = site.hosts[0]
    import_domains(db_url, tmp_path, "fr", [up, f"http://{gone}/", back])
    asyncio.run(_schedule(db_url, month(1) - 60))

    january, domains = asyncio.run(_scheduled_scan(db_url, month(1)))
    assert january.status is RunStatus.COMPLETED and january.scope == "fr"
    assert (domains[up].active, domains[up].stale, domains[up].unreachable_streak) == (
        True, False, 0,
    )  # fmt: skip
    for host in (gone, back):
        assert (domains[host].active, domains[host].stale, domains[host].unreachable_streak) == (
            True, True, 1,
        )  # fmt: skip

    # "back" comes up on its address, on the port the domain was registered with.
    comeback = SiteSpec(hosts=1, pages_per_host=2, links_per_page=3, first_ip=241)
    with LoopbackSite(comeback, port=site.port):
        february_and_march(db_url, up, gone, back)


def february_and_march(db_url: str, up: str, gone: str, back: str) -> None:
    february, domains = asyncio.run(_scheduled_scan(db_url, month(2)))
    assert february.status is RunStatus.COMPLETED
    assert (domains[gone].active, domains[gone].stale, domains[gone].unreachable_streak) == (
        False, True, 2,
    )  # fmt: skip
    assert (domains[back].active, domains[back].stale, domains[back].unreachable_streak) == (
        True, False, 0,
    )  # fmt: skip
    assert {d.last_run_id for d in domains.values()} == {february.id}

    # March, started by hand through the CLI and crawled in that process: the inactive
    # host is no longer part of the scan.
    code, out, err = run_cli("scan", "fr", "--now", "--no-progress", "--db", db_url, settings=FAST)
    assert code == 0, err
    march_id = int(re.search(r"run (\d+): scan", out).group(1))  # type: ignore[union-attr]
    code, out, err = run_cli("domains", "list", "--scope", "fr", "--db", db_url)
    assert code == 0, err
    rows = {host: [line for line in out.splitlines() if host in line] for host in (up, gone, back)}
    assert all(len(found) == 1 for found in rows.values()), out
    assert "stale" in rows[gone][0] and "no" in rows[gone][0] and "stale" not in rows[back][0]
    code, out, _ = run_cli("domains", "list", "--inactive", "--db", db_url)
    assert gone in out and back not in out and up not in out
    march = asyncio.run(_runs(db_url))[0]
    assert march.id == march_id and march.status is RunStatus.COMPLETED
    assert f"http://{gone}/" not in march.config.seeds
    assert set(march.config.seeds) == {f"http://{up}/", f"http://{back}/"}


def test_domains_import_from_a_csv_and_a_plain_list_reports_bad_lines(tmp_path: Path) -> None:
    db = str(tmp_path / "registry.db")
    csv_file = tmp_path / "sites.csv"
    csv_file.write_text(
        "\ufeffName,Domain,Notes\n"
        "Shop,https://Shop.Example/catalogue,main shop\n"
        'News,news.example,"with, a comma"\n'
        "Broken,exa mple.com,typo\n"
        "Shop again,shop.example,duplicate\n"
    )
    code, out, err = run_cli("domains", "import", str(csv_file), "--scope", "fr", "--db", db)
    assert code == 0, err
    assert (
        "imported 2 domains into scope 'fr': 2 new, 0 already registered; 1 invalid line skipped"
        in out
    )
    assert "line 4:" in err and "exa mple.com" in err

    listing = tmp_path / "sites.txt"
    listing.write_text("# more sites\nnews.example\nbücher.de\n\nftp://files.example\n")
    code, out, err = run_cli("domains", "import", str(listing), "--scope", "de", "--db", db)
    assert code == 0, err
    assert "imported 2 domains into scope 'de': 1 new, 1 already registered" in out
    assert "line 5:" in err and "unsupported scheme" in err

    code, out, err = run_cli("domains", "list", "--db", db)
    assert code == 0, err
    for host in ("shop.example", "news.example", "xn--bcher-kva.de"):
        assert host in out
    code, out, _ = run_cli("domains", "list", "--scope", "fr", "--db", db)
    assert "shop.example" in out and "news.example" not in out  # it moved to 'de'

    bad = tmp_path / "bad.csv"
    bad.write_text("name,notes\nx,y\n")
    code, _, err = run_cli("domains", "import", str(bad), "--scope", "fr", "--db", db)
    assert code == 1 and "no 'domain', 'host' or 'url' column" in err


def test_schedules_are_set_listed_and_checked(tmp_path: Path) -> None:
    db = str(tmp_path / "schedules.db")
    code, out, err = run_cli("schedule", "fr", "--db", db)
    assert code == 0, err
    assert "scope 'fr' is scanned on '0 3 1 * *' (UTC); next scan" in out
    assert "no active domains yet" in err
    code, out, err = run_cli("schedule", "de", "--cadence", "30 2 * * 1", "--db", db)
    assert code == 0, err
    code, out, err = run_cli("schedule", "--list", "--db", db)
    assert code == 0, err
    assert "0 3 1 * *" in out and "30 2 * * 1" in out
    code, _, err = run_cli("schedule", "fr", "--cadence", "every month", "--db", db)
    assert code == 1 and "invalid cadence 'every month'" in err
    code, _, err = run_cli("scan", "nowhere", "--db", db)
    assert code == 1 and "scope 'nowhere' has no active domains" in err
