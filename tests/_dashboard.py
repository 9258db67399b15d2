"""What the dashboard's browser tests share: the real CLI serving it, and one headless Chromium.

The browser is the system Chromium (/usr/bin/chromium) through Playwright, launched with the
arguments the browser fetcher uses, so the tests see the browser sitesync itself drives.
``chromium`` is a fixture, offered to every test by tests/conftest.py.
"""

from __future__ import annotations

import contextlib
import queue
import re
import subprocess
import threading
import time
from collections.abc import Iterator

import pytest
from playwright.sync_api import Browser, sync_playwright

from sitesync.fetch.browser import CHROMIUM_ARGS, DEFAULT_CHROMIUM
from tests.acceptance._cli import sitesync

__all__ = ["chromium", "running_dashboard", "stop"]


@pytest.fixture
def chromium() -> Iterator[Browser]:
    """A headless Chromium for one test, closed after it.

    Not one per session: Playwright's sync API keeps its event loop marked running in the
    thread between calls, so every asyncio test the same pytest worker ran afterwards would
    fail. A launch costs 0.13-0.16 s here (the Playwright driver 0.3 s more), measured."""
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=DEFAULT_CHROMIUM, args=list(CHROMIUM_ARGS)
        )
        try:
            yield browser
        finally:
            browser.close()


@contextlib.contextmanager
def running_dashboard(*args: str, settings: dict[str, str] | None = None) -> Iterator[str]:
    """``sitesync dashboard ARGS --port 0`` as the real CLI; yields the URL it announces.
    The store it shows is created first (``sitesync migrate``): the dashboard only reads."""
    if "--db" in args:
        made = sitesync("migrate", "--db", args[args.index("--db") + 1], settings=settings)
        made.communicate(timeout=60)
        assert made.returncode == 0, "sitesync migrate failed"
    process = sitesync("dashboard", *args, "--port", "0", settings=settings)
    lines: queue.Queue[str] = queue.Queue()
    assert process.stderr is not None
    stream = process.stderr
    reader = threading.Thread(target=lambda: [lines.put(line) for line in stream], daemon=True)
    reader.start()
    try:
        yield _announced_url(process, lines)
    finally:
        stop(process, reader)


def _announced_url(dashboard: subprocess.Popen[str], lines: queue.Queue[str]) -> str:
    """The URL ``sitesync dashboard`` prints (on stderr) once it listens."""
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            line = lines.get(timeout=0.5)
        except queue.Empty:
            assert dashboard.poll() is None, "sitesync dashboard exited"
            continue
        found = re.search(r"http://127\.0\.0\.1:\d+/", line)
        if found:
            return found.group(0)
    raise AssertionError("sitesync dashboard never said where it listens")


def stop(process: subprocess.Popen[str], *readers: threading.Thread, kill: bool = False) -> None:
    """End a CLI process we started, and close its pipes once nothing reads them."""
    if process.poll() is None:
        process.kill() if kill else process.terminate()
    try:
        process.wait(timeout=10)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()
    for reader in readers:
        reader.join(timeout=5)  # it ends at EOF, now that the process is gone
    for stream in (process.stdout, process.stderr):
        if stream is not None:
            stream.close()
