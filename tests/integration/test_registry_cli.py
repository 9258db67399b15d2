"""The registry remembers domains across scans (issue 14 item 4), through the real CLI:
``domains list`` / ``domains show`` after three scans, and ``schedule --delete``."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest
from aiohttp import web

from sitesync.testing import LoopbackSite, SiteSpec
from tests.acceptance._cli import run_in_process

FAST = {
    "scan_scheme": "http", "delay": "0", "per_host_concurrency": "0", "max_retries": "1",
    "retry_backoff": "0.05", "total_timeout": "2", "sitemaps": "false", "respect_robots": "false",
}  # fmt: skip


@pytest.fixture(autouse=True)
def wide_tables(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "250")


def run_cli(*args: str) -> tuple[int, str, str]:
    done = run_in_process(*args, settings=FAST)
    return done.returncode, done.stdout, done.stderr


@pytest.mark.slow
def test_three_scans_are_remembered_per_domain(
    site_factory: Callable[[SiteSpec], LoopbackSite], db_url: str, tmp_path: Path
) -> None:
    site = site_factory(SiteSpec(hosts=2, pages_per_host=3, links_per_page=4,
                                 cross_host_links=False, out_of_scope_links=False,
                                 variant_links=False))  # fmt: skip
    hosts = [url.removeprefix("http://").rstrip("/") for url in site.root_urls]
    listing = tmp_path / "domains.txt"
    listing.write_text("\n".join(hosts) + "\n")
    code, _, err = run_cli("domains", "import", str(listing), "--scope", "fr", "--db", db_url)
    assert code == 0, err
    for n in range(3):
        if n == 2:  # the third scan: every root answers 500
            site.set_handler("/", _status(500))
        code, _, err = run_cli("scan", "fr", "--now", "--no-progress", "--db", db_url)
        assert code == 0, err

    code, out, err = run_cli("domains", "show", hosts[0], "--json", "--db", db_url)
    assert code == 0, err
    shown = json.loads(out)["data"]
    scans = shown["scans"]
    assert [s["run_id"] for s in scans] == [3, 2, 1]  # newest first
    assert all(s["run_status"] == "completed" and s["scope"] == "fr" for s in scans)
    assert scans[2]["pages"] >= 1 and scans[2]["errors"] == 0
    assert scans[0]["errors"] >= 1  # the root's 500
    assert shown["domain"]["host"] == hosts[0]
    # Each scan's changes on the domain (issue 30): all new, then all the same content,
    # then none seen and none called gone (the root's 500 hides whatever is behind it).
    changes = {c["run_id"]: (c["since_run_id"], c["total"]) for c in shown["changes"]}
    assert list(changes) == [3, 2, 1]
    assert changes[1][0] is None and changes[1][1]["new"] == scans[2]["pages"]
    assert changes[2][0] == 1 and changes[2][1]["unchanged_same_content"] == scans[2]["pages"]
    assert changes[2][1]["new"] == changes[2][1]["changed"] == changes[2][1]["gone"] == 0
    assert changes[3][1]["gone"] == 0 and changes[3][1]["not_reached"] == scans[2]["pages"]
    code, out, err = run_cli("domains", "show", hosts[0], "--db", db_url)
    assert code == 0 and f"changes of {hosts[0]} in its last scans" in out, err

    code, out, err = run_cli("domains", "list", "--db", db_url)
    assert code == 0, err
    for host in hosts:
        [line] = [line for line in out.splitlines() if host in line]
        assert "completed (run 3)" in line

    code, out, err = run_cli("domains", "show", "nowhere.example", "--db", db_url)
    assert code == 1 and "no domain nowhere.example" in err and "Traceback" not in err


def _status(status: int) -> Callable[[web.Request], object]:
    async def handler(request: web.Request) -> web.StreamResponse:
        return web.Response(status=status, text="down")

    return handler


def test_schedule_delete(tmp_path: Path) -> None:
    db = str(tmp_path / "s.db")
    assert run_cli("schedule", "fr", "--cadence", "0 3 * * *", "--db", db)[0] == 0
    assert run_cli("schedule", "de", "--db", db)[0] == 0
    code, out, err = run_cli("schedule", "--delete", "fr", "--db", db)
    assert code == 0 and "schedule of scope 'fr' deleted" in out, err
    code, out, _ = run_cli("schedule", "--list", "--db", db)
    assert code == 0 and "de" in out and "fr" not in out.replace("from", "")
    code, _, err = run_cli("schedule", "--delete", "fr", "--db", db)
    assert code == 1 and "scope 'fr' has no schedule" in err and "Traceback" not in err
