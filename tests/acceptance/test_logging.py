"""Real logging (issue 31, item 3): ``-v``/``-q`` and ``log_level``, a JSON format a fleet's
log shipper reads line by line, what each line is about, and one redaction for every
logger, the dashboard's web server's included. The real CLI in subprocesses, judged from
what they wrote to standard error."""

from __future__ import annotations

import asyncio
import contextlib
import io
import json
import logging
import os
import sys
import urllib.error
import urllib.request
from collections import Counter
from collections.abc import Callable
from pathlib import Path

import pytest

from sitesync.store import open_store
from sitesync.testing import LoopbackSite, SiteSpec
from tests.acceptance._cli import communicate, crawl_args, read_run, run_in_process, sitesync

UNCONFIGURED = Path(__file__).parents[1] / "plugin_packages" / "unconfigured"
PASSWORD = "hunter2-log-secret"


def json_lines(stderr: str) -> list[dict[str, object]]:
    """Every line of ``stderr`` parsed as one JSON object (a line that is not fails)."""
    lines = [line for line in stderr.splitlines() if line.strip()]
    assert lines, "nothing was logged"
    parsed = []
    for line in lines:
        try:
            parsed.append(json.loads(line))
        except json.JSONDecodeError:
            pytest.fail(f"a line of the JSON log is not JSON: {line!r}")
    return parsed


async def _attempts_by_worker(db: str, task_ids: list[int]) -> Counter[str]:
    store = await open_store(db)
    try:
        found: Counter[str] = Counter()
        for task_id in task_ids:
            found.update(str(attempt.worker_id) for attempt in await store.list_attempts(task_id))
        return found
    finally:
        await store.close()


def with_password(db_url: str) -> str:
    """The store's name with a password in it (PostgreSQL here trusts loopback, so any
    password is accepted; SQLite has none, so the crawl's proxy setting carries one)."""
    return db_url.replace("://postgres@", f"://postgres:{PASSWORD}@", 1)


@pytest.mark.slow
def test_a_multi_process_crawls_json_log_is_one_object_a_line_naming_its_work(
    site_factory: Callable[[SiteSpec], LoopbackSite], db_url: str, tmp_path: Path
) -> None:
    site = site_factory(
        SiteSpec(hosts=4, pages_per_host=6, links_per_page=6, first_ip=81, delay=0.02)
    )
    db = with_password(db_url)
    crawl = sitesync(
        "crawl", *site.root_urls, *crawl_args(db, "--processes", "2"), "-vv",
        settings={"log_format": "json", "processes": "2"},
    )  # fmt: skip
    out, err = communicate(crawl, timeout=120)
    assert crawl.returncode == 0, err[-3000:]
    lines = json_lines(err)

    for line in lines:
        assert {"time", "level", "logger", "message"} <= set(line), line
        assert str(line["time"]).endswith("+00:00") and "T" in str(line["time"])
        assert line["level"] in {"DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL"}
    assert PASSWORD not in err and PASSWORD not in out

    attempts = [line for line in lines if str(line["message"]).startswith("attempt ")]
    fetched = {str(line["url"]) for line in attempts}
    assert fetched >= set(site.page_urls()[:1]) and len(fetched) >= 4 * 6  # every page
    for line in attempts:  # a page's line names its run, worker, host and URL
        assert line["run"] == 1 and line["worker"] and str(line["url"]).startswith("http://")
        assert str(line["url"]).split("/")[2] == line["host"]
    # One line per attempt the store recorded, naming the worker the store names.
    _, _, tasks = read_run(db)
    recorded = asyncio.run(_attempts_by_worker(db, [task.id for task in tasks]))
    logged = Counter(str(line["worker"]) for line in attempts)
    assert logged == recorded
    notices = [line for line in lines if line["logger"] == "sitesync.cli"]
    assert any("run 1: crawling" in str(line["message"]) for line in notices)


def test_log_levels_from_flags_and_settings(
    site_factory: Callable[[SiteSpec], LoopbackSite],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    site = site_factory(SiteSpec(hosts=1, pages_per_host=2, links_per_page=2, first_ip=85))
    # The plugin is installed for the crawls this test starts (an installed layout).
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(UNCONFIGURED), *sys.path]))

    def crawl(name: str, *flags: str, settings: dict[str, str] | None = None) -> str:
        proc = sitesync(
            "crawl", site.root_urls[0], *crawl_args(tmp_path / f"{name}.db"),
            "--plugins", "page,keyed", *flags, settings=settings,
        )  # fmt: skip
        _, err = communicate(proc, timeout=60)
        assert proc.returncode == 0, err
        return err

    # The info line a plugin that sits a run out is promised (docs/plugins.md).
    opted_out = "plugin keyed is not configured for this run: needs an API key"
    assert opted_out not in crawl("default")  # warning and above only
    assert opted_out in crawl("verbose", "-v")
    assert opted_out in crawl("setting", settings={"log_level": "info"})
    debug = crawl("debug", "-vv")
    assert "attempt 1: HTTP 200" in debug and "run=1" in debug and "url=http://" in debug
    assert "attempt 1:" not in crawl("quiet", "-q", settings={"log_level": "debug"})


def test_a_wrong_log_setting_is_one_line(tmp_path: Path) -> None:
    done = run_in_process("runs", "--db", str(tmp_path / "x.db"),
                          settings={"log_format": "yaml"})  # fmt: skip
    assert done.returncode == 1
    assert done.stderr.count("\n") == 1 and "log_format" in done.stderr


def test_the_dashboards_web_server_logs_through_the_same_json_and_redaction(
    tmp_path: Path,
) -> None:
    db = str(tmp_path / "dash.db")
    assert run_in_process("migrate", "--db", db).returncode == 0
    dashboard = sitesync(
        "dashboard", "--db", db, "--port", "0", "-v",
        settings={"log_format": "json", "dashboard_token": PASSWORD},
    )  # fmt: skip
    try:
        assert dashboard.stdout is not None
        url = ""
        while not url:  # "dashboard on http://127.0.0.1:PORT/ ..."
            line = dashboard.stderr.readline() if dashboard.stderr else ""
            assert line, "the dashboard exited before it listened"
            message = str(json.loads(line)["message"])
            if "http://" in message:
                url = "http://" + message.split("http://")[1].split()[0].rstrip("/")
        # The token in the address, as a browser's first visit sends it: the access log
        # line quotes the address, and must not quote the token.
        request = urllib.request.Request(f"{url}/api/runs?token={PASSWORD}")
        request.add_header("Authorization", f"Bearer {PASSWORD}")
        with contextlib.suppress(urllib.error.HTTPError):
            urllib.request.urlopen(request, timeout=10).close()
    finally:
        dashboard.terminate()
        _, err = communicate(dashboard, timeout=30)
    lines = json_lines(err)
    access = [line for line in lines if str(line["logger"]).startswith("uvicorn")]
    assert any("/api/runs" in str(line["message"]) for line in access), lines
    assert PASSWORD not in err


def test_text_lines_name_their_work_too() -> None:
    from sitesync import logs

    logs.configure("info", "text")
    try:
        with contextlib.redirect_stderr(io.StringIO()) as buffer:  # read at each line
            with logs.about(run=7, worker="w-1", host="a.example", url="http://a.example/"):
                logging.getLogger("sitesync.test").info("with %s", "password=abc12345")
            logging.getLogger("sitesync.test").info("outside")
    finally:
        logs.configure("warning", "text")
    inside, outside = buffer.getvalue().splitlines()
    assert inside.endswith("run=7 worker=w-1 host=a.example url=http://a.example/")
    assert "INFO sitesync.test: with password=***" in inside
    assert outside.endswith("INFO sitesync.test: outside")  # the context ended with its work
