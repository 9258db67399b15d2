"""Workers whose machines' clocks disagree by minutes share a PostgreSQL run safely
(issue 13, item 3): every lease, claim and heartbeat is measured on the server's clock.

The clocks are really shifted: each skewed worker runs under libfaketime (``faketime``,
Debian's package), so ``time.time()`` in that process is minutes off, as on a machine
whose NTP is broken. SQLite is not a case here: its processes share one machine's clock.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time

import pytest

from sitesync.models import RunStatus
from sitesync.testing import LoopbackSite, SiteSpec
from tests.acceptance._cli import KEPT, communicate, read_run, sitesync
from tests.acceptance.test_crash_and_stop import assert_exact, wait_for_progress
from tests.acceptance.test_many_workers import (
    assert_host_counters_exact,
    concurrent_fetches_of_one_url,
    overlaps_between_workers,
    settings,
    wait_for_requests_from,
)

pytestmark = [pytest.mark.slow, pytest.mark.timeout(240)]

SKEWS = ("+150s", "-150s")  # one machine ahead, one behind: both longer than any lease


def skew_settings(db: str) -> dict[str, str]:
    """The fleet settings of the many-workers tests, with leases long enough (10 s, renewed
    every 0.3 s) that none expires on a busy machine: every page fetched twice is then a
    lease taken from a live worker."""
    return {**settings(db), "lease_seconds": "10"}


def skewed_worker(db: str, skew: str) -> subprocess.Popen[str]:
    """``sitesync worker --run 1`` in a process whose wall clock is ``skew`` off."""
    faketime = shutil.which("faketime")
    assert faketime, "faketime is missing: scripts/ensure-system-deps.sh installs it"
    env = {k: v for k, v in os.environ.items() if not k.startswith("SITESYNC_") or k in KEPT}
    env.update({f"SITESYNC_{k.upper()}": v for k, v in skew_settings(db).items()})
    # FAKETIME_DONT_FAKE_MONOTONIC: only the wall clock is wrong on such a machine
    env["FAKETIME_DONT_FAKE_MONOTONIC"] = "1"
    return subprocess.Popen(
        [faketime, "-f", skew, sys.executable, "-m", "sitesync", "worker", "--run", "1"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )


def test_faketime_really_shifts_a_processes_clock() -> None:
    faketime = shutil.which("faketime")
    assert faketime, "faketime is missing: scripts/ensure-system-deps.sh installs it"
    shown = subprocess.run(
        [faketime, "-f", "+150s", sys.executable, "-c", "import time; print(time.time())"],
        capture_output=True,
        text=True,
        check=True,
        env={**os.environ, "FAKETIME_DONT_FAKE_MONOTONIC": "1"},
    )
    assert float(shown.stdout) - time.time() == pytest.approx(150, abs=5)


@pytest.mark.parametrize("db_url", ["postgres"], indirect=True)
def test_workers_with_clocks_minutes_apart_steal_no_lease_share_no_host_and_finish(
    db_url: str,
) -> None:
    # The site stays slow (0.3 s an answer, 120 pages a host) until all three workers have
    # fetched, then goes fast: a fixed pace would race the skewed workers' start-up, and on
    # a loaded machine the hosts could run dry before they are in
    site = LoopbackSite(SiteSpec(hosts=6, pages_per_host=120, delay=0.3)).start()
    workers: list[subprocess.Popen[str]] = []
    try:
        started = time.monotonic()
        workers.append(
            sitesync("crawl", *site.root_urls, "--no-progress", settings=skew_settings(db_url))
        )
        wait_for_progress(db_url, 1)
        workers += [skewed_worker(db_url, skew) for skew in SKEWS]
        wait_for_requests_from(site, 3, timeout=60)
        site.set_delay(0.01)
        errs = []
        for proc in workers:
            _, err = communicate(proc, timeout=150)
            assert proc.returncode == 0, err
            errs.append(err)
        took = time.monotonic() - started

        run, _, _ = read_run(db_url)
        assert run.status is RunStatus.COMPLETED
        # no stolen lease: every page fetched once, none twice at the same time
        assert_exact(db_url, site)
        fetched = site.fetch_counts()
        assert {url: fetched[url] for url in site.page_urls() if fetched[url] != 1} == {}
        records = site.requests
        pages = [r for r in records if r.path not in ("/robots.txt", "/sitemap.xml")]
        assert concurrent_fetches_of_one_url(pages) == []
        # no overlapping host: a claim held on the server's clock is held for everyone
        assert overlaps_between_workers(records) == []
        # the skewed workers really crawled, both of them: the crawl's surplus hosts pass
        # to them (a worker id names its pid; faketime forks, so theirs are not the crawl's)
        crawl_id = f"-{workers[0].pid}-"
        assert any(crawl_id in r.worker for r in records)
        assert len({r.worker for r in records}) == 3, "\n---\n".join(errs)
        assert_host_counters_exact(db_url)
        # no stall: the slow start and 720 pages fast are seconds of work; a worker
        # that thought its claims expired (or held dead ones) would wait out claims
        assert took < 90, f"took {took:.0f}s"
    finally:
        for proc in workers:
            if proc.poll() is None:
                proc.kill()
                proc.communicate()
        site.stop()
