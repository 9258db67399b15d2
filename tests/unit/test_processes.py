"""A crawl's helper processes get exactly the crawl's settings (issue 13, item 8)."""

from __future__ import annotations

import os

import pytest

from sitesync.config import load_settings
from sitesync.runs.processes import process_count, settings_from_line, settings_line


def test_a_helper_reads_back_every_setting_the_crawl_had(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SITESYNC_DELAY", "0.25")  # from the environment ...
    crawl = load_settings(  # ... and from flags, of every kind of field
        db="postgresql://crawler:s3cret@db.example/catalogue",
        concurrency=7,
        plugins="page,links",
        dead_host_recheck_seconds="1,2",
        allowed_networks=["10.1.0.0/16"],
        session_params="sid",
        max_claims_per_worker=3,
        worker_id_header=True,
        processes=3,
    )
    monkeypatch.delenv("SITESYNC_DELAY")  # the helper's environment need not say it again
    helper = settings_from_line(settings_line(crawl))
    assert helper == crawl
    assert helper.delay == 0.25 and helper.plugins == ("page", "links")


def test_the_dashboard_token_stays_with_the_crawl() -> None:
    crawl = load_settings(dashboard_token="t0ken")
    assert "t0ken" not in settings_line(crawl)
    assert settings_from_line(settings_line(crawl)).dashboard_token is None


def test_zero_processes_is_one_per_core() -> None:
    assert process_count(load_settings(processes=0)) == (os.cpu_count() or 1)
    assert process_count(load_settings(processes=2)) == 2
