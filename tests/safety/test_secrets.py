"""A password in the store's DSN is never shown: every command, its logs, the workers that
``supervise`` spawns (command line and environment), the dashboard, its API and /metrics.

The machine's PostgreSQL trusts local connections, so any password connects: each test
puts a fresh one in the DSN, in both forms a URL can carry it, and looks for it everywhere.
"""

from __future__ import annotations

import os
import re
import secrets
import signal
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import psutil
import pytest

from sitesync.redact import redact, secrets_in
from sitesync.testing import LoopbackSite, SiteSpec
from tests.acceptance._cli import KEPT, run_in_process

FORMS = ["userinfo", "query"]


def with_password(dsn: str, password: str, schema: str, form: str) -> str:
    """``dsn`` carrying ``password`` (as ``user:password@`` or ``?password=``) and using
    the test's own schema."""
    parts = urlsplit(dsn)
    netloc, query = parts.netloc, [f"options=-csearch_path%3D{schema}"]
    if form == "userinfo":
        user, _, host = netloc.rpartition("@")
        netloc = f"{user or 'postgres'}:{password}@{host}"
    else:
        query.append(f"password={password}")
    query = [*filter(None, [parts.query]), *query]
    return urlunsplit((parts.scheme, netloc, parts.path, "&".join(query), ""))


class Seen:
    """Everything the commands showed, searched for the password at the end."""

    def __init__(self, password: str, tmp_path: Path) -> None:
        self.password = password
        self.tmp_path = tmp_path
        self.texts: dict[str, str] = {}

    def add(self, where: str, text: str | bytes) -> None:
        self.texts[where] = text.decode(errors="replace") if isinstance(text, bytes) else text

    def run(self, *args: str, expect: int | None = 0) -> subprocess.CompletedProcess[str]:
        result = subprocess.run(
            [sys.executable, "-m", "sitesync", *args],
            capture_output=True,
            text=True,
            timeout=90,
            env=_env(),
            check=False,
        )
        self.add(" ".join(args[:2]), result.stdout + result.stderr)
        if expect is not None:
            assert result.returncode == expect, (args, result.stdout, result.stderr)
        return result

    def run_here(self, *args: str) -> subprocess.CompletedProcess[str]:
        """A command that only reads the store, run in this process (``run_in_process``):
        what it prints, its log lines included, is looked at as :meth:`run`'s is."""
        result = run_in_process(*args, env={"COLUMNS": "300"})
        self.add(" ".join(args[:2]), result.stdout + result.stderr)
        assert result.returncode == 0, (args, result.stdout, result.stderr)
        return result

    def start(
        self, name: str, *args: str, env: dict[str, str] | None = None
    ) -> subprocess.Popen[str]:
        with (self.tmp_path / f"{name}.log").open("w") as out:  # the child keeps its copy
            return subprocess.Popen(
                [sys.executable, "-m", "sitesync", *args],
                stdout=out,
                stderr=subprocess.STDOUT,
                text=True,
                env={**_env(), **(env or {})},
            )

    def collect(self, name: str) -> str:
        text = (self.tmp_path / f"{name}.log").read_text()
        self.add(name, text)
        return text

    def assert_clean(self) -> None:
        assert self.texts, "nothing was looked at"
        leaks = [where for where, text in self.texts.items() if self.password in text]
        assert leaks == [], f"the password was shown by: {leaks}"


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("SITESYNC_") or k in KEPT}
    return {**env, "COLUMNS": "300"}


def wait_for(condition: Callable[[], object], timeout: float, what: str) -> object:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = condition()
        if found:
            return found
        time.sleep(0.1)
    raise AssertionError(f"timed out waiting for {what}")


def stop(process: subprocess.Popen[str]) -> None:
    if process.poll() is None:
        process.send_signal(signal.SIGTERM)
    try:
        process.wait(timeout=40)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


@pytest.fixture(params=FORMS)
def secret_db(
    request: pytest.FixtureRequest, postgres_dsn: str, postgres_schema: str, tmp_path: Path
) -> tuple[str, Seen]:
    """A DSN of the test's schema carrying a fresh password (in each form), and what will
    have been seen of it."""
    password = f"Pw-{secrets.token_hex(8)}"
    db = with_password(postgres_dsn, password, postgres_schema, request.param)
    assert password in db
    return db, Seen(password, tmp_path)


FAST = ["--no-progress", "--no-robots", "--no-sitemaps", "--delay", "0"]


def small_site(site_factory: Callable[[SiteSpec], LoopbackSite], **spec: float) -> LoopbackSite:
    shape: dict[str, float] = {"hosts": 1, "pages_per_host": 8, "links_per_page": 4}
    return site_factory(SiteSpec(page_bytes=500, **{**shape, **spec}))  # type: ignore[arg-type]


@pytest.mark.slow
def test_store_commands_do_not_show_the_password(
    secret_db: tuple[str, Seen], site_factory: Callable[[SiteSpec], LoopbackSite]
) -> None:
    db, seen = secret_db
    site = small_site(site_factory)
    seen.run("db", "upgrade", "--db", db)
    seen.run("crawl", *site.root_urls, "--db", db, *FAST)
    # The commands that only read, in this process; those that write, and the failure
    # below (whatever a process prints as it ends), as real processes.
    seen.run_here("runs", "--db", db)
    seen.run_here("show", "1", "--db", db)
    seen.run_here("status", "--db", db)
    seen.run_here("records", "1", "--db", db)
    seen.run_here("export", "1", "--db", db, "-o", str(seen.tmp_path / "out.jsonl"))
    seen.run("crawl", *site.root_urls, "--db", db, "--queue", *FAST)
    seen.run("worker", "--run", "2", "--db", db)
    # Errors: a store that cannot be reached, named with the password.
    unreachable = db.replace(urlsplit(db).netloc.rpartition("@")[2] or "x", "127.0.0.1:1", 1)
    assert seen.password in unreachable and ":1/" in unreachable
    failed = seen.run("runs", "--db", unreachable, expect=1)
    assert failed.stderr.startswith("error: ")
    seen.assert_clean()


def test_supervise_and_its_workers_do_not_show_the_password(
    secret_db: tuple[str, Seen], site_factory: Callable[[SiteSpec], LoopbackSite]
) -> None:
    """Workers are looked at while alive: /proc/PID/cmdline and /proc/PID/environ."""
    db, seen = secret_db
    slow = small_site(site_factory, pages_per_host=20, delay=0.2)
    seen.run("crawl", *slow.root_urls, "--db", db, "--queue", *FAST)
    supervisor = seen.start("supervise", "supervise", "--db", db, env={"SITESYNC_DELAY": "0"})
    try:
        workers = wait_for(lambda: _workers_of(supervisor.pid), 40, "a spawned worker")
        for proc in workers:  # type: ignore[attr-defined]
            cmdline = Path(f"/proc/{proc.pid}/cmdline").read_bytes()
            environ = Path(f"/proc/{proc.pid}/environ").read_bytes()
            assert b"worker" in cmdline and b"--db-from-stdin" in cmdline
            seen.add(f"worker {proc.pid} cmdline", cmdline)
            seen.add(f"worker {proc.pid} environ", environ)
            assert b"SITESYNC_DB=" not in environ
        # The worker got the store over its stdin: it crawls into it (it logs to our log).
        log = seen.tmp_path / "supervise.log"
        wait_for(lambda: "run 1: crawling" in log.read_text(), 40, "the worker crawling")
    finally:
        stop(supervisor)
    seen.collect("supervise")
    seen.assert_clean()


def test_the_dashboard_its_api_and_metrics_do_not_show_the_password(
    secret_db: tuple[str, Seen], site_factory: Callable[[SiteSpec], LoopbackSite]
) -> None:
    db, seen = secret_db
    site = small_site(site_factory)
    seen.run("crawl", *site.root_urls, "--db", db, *FAST)
    dashboard = seen.start("dashboard", "dashboard", "--db", db, "--port", "0")
    try:
        url = wait_for(lambda: _announced(seen.tmp_path / "dashboard.log"), 30, "the dashboard")
        for path in ("", "api/status", "api/runs", "api/runs/1", "api/runs/1/errors", "metrics"):
            with urllib.request.urlopen(f"{url}{path}", timeout=30) as response:
                body = response.read().decode()
            seen.add(f"GET /{path}", body)
        page = seen.texts["GET /"]
        assert "127.0.0.1:" in page  # the store is named, without its password
    finally:
        stop(dashboard)
    seen.collect("dashboard")
    seen.assert_clean()


def _workers_of(pid: int) -> list[psutil.Process]:
    try:
        children = psutil.Process(pid).children(recursive=True)
    except psutil.NoSuchProcess:
        raise AssertionError("supervise exited") from None
    return [p for p in children if "worker" in " ".join(_cmdline(p))]


def _cmdline(process: psutil.Process) -> list[str]:
    try:
        return process.cmdline()
    except psutil.Error:
        return []


def _announced(log: Path) -> str | None:
    found = re.search(r"http://127\.0\.0\.1:\d+/", log.read_text())
    return found.group(0) if found else None


@pytest.mark.parametrize(
    ("shown", "hidden"),
    [
        ("postgresql://u:Secret-1@h:5432/db", "Secret-1"),
        ("postgres://u:S%40cret-2@h/db?sslmode=require", "S%40cret-2"),
        ("postgresql://u@h/db?sslmode=require&password=Secret-3&x=1", "Secret-3"),
        ("postgresql://u@h/db?PASSWORD=Secret-4", "Secret-4"),
        ("host=h user=u password=Secret-5 dbname=db", "Secret-5"),
        ("host=h password='Sec ret 6' dbname=db", "Sec ret 6"),
        ("error at postgresql://u:Secret-7@h/db: refused", "Secret-7"),
    ],
)
def test_redact_masks_every_form_of_password(shown: str, hidden: str) -> None:
    assert hidden in shown
    assert hidden not in redact(shown) and "***" in redact(shown)
    assert hidden.strip("'") in secrets_in(shown) or hidden in secrets_in(shown)


def test_redact_leaves_what_holds_no_password_alone() -> None:
    for text in ("/var/lib/sitesync.db", "postgresql://u@h:5432/db", "http://127.0.0.1:8750/"):
        assert redact(text) == text
