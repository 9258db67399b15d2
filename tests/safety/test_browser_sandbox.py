"""The browser runs sandboxed unless the process runs as root (issue 11, item 6).

Chromium cannot run its sandbox as root, and these tests run as root: the unprivileged case
runs the real system Chromium as ``nobody`` through a wrapper (``setpriv``), launched by the
real BrowserFetcher, and reads the sandbox off the live renderer processes (seccomp-bpf in
filter mode, a PID namespace of their own).
"""

from __future__ import annotations

import asyncio
import logging
import os
import stat
from pathlib import Path

import pytest
from aiohttp import web

import sitesync.fetch.browser as browser_module
from sitesync.fetch.base import FetchOutcome
from sitesync.fetch.browser import BrowserFetcher, use_sandbox
from sitesync.testing import OPEN_LOOPBACK

NOBODY = 65534

# Runs Chromium as nobody: the profile Playwright made (as root) is handed over first.
AS_NOBODY = """#!/bin/sh
for arg in "$@"; do
  case "$arg" in --user-data-dir=*)
    dir="${{arg#--user-data-dir=}}"; chown -R {uid}:{uid} "$dir"; echo "$dir" > {record};;
  esac
done
exec setpriv --reuid={uid} --regid={uid} --clear-groups env HOME="$dir" {chromium} "$@"
"""


def test_as_root_chromium_runs_without_its_sandbox_and_a_warning_says_why(
    caplog: pytest.LogCaptureFixture,
) -> None:
    with caplog.at_level(logging.WARNING, logger="sitesync.fetch.browser"):
        assert use_sandbox(euid=1000) is True
        assert caplog.records == []
        assert use_sandbox(euid=0) is False
    [warning] = caplog.records
    assert "running as root" in warning.getMessage()
    assert "--no-sandbox" in warning.getMessage()
    assert "unprivileged user" in warning.getMessage()


def processes_of(profile: str) -> list[tuple[str, str]]:
    """(cmdline, /proc status) of every live Chromium process using ``profile``."""
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
            status = Path(f"/proc/{pid}/status").read_text()
        except OSError:
            continue  # gone meanwhile
        if f"--user-data-dir={profile}" in cmdline:
            found.append((cmdline, status))
    return found


async def watch(profile: str, seen: dict[str, str]) -> None:
    """Record every process of the browser while the page lives (renderers end with it)."""
    while True:
        seen.update(processes_of(profile))
        await asyncio.sleep(0.02)


def status_field(status: str, name: str) -> str:
    line = next(line for line in status.splitlines() if line.startswith(name + ":"))
    return line.split(":", 1)[1].split()[0]


async def test_as_an_unprivileged_user_page_javascript_runs_in_the_sandbox(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    record = tmp_path / "profile"
    wrapper = tmp_path / "chromium-as-nobody"
    wrapper.write_text(
        AS_NOBODY.format(uid=NOBODY, record=record, chromium=browser_module.DEFAULT_CHROMIUM)
    )
    wrapper.chmod(wrapper.stat().st_mode | stat.S_IXUSR)
    # This process is root; the browser it starts is not: decide as the browser's user.
    monkeypatch.setattr(browser_module.os, "geteuid", lambda: NOBODY)

    app = web.Application()
    app.router.add_get("/", page_with_script)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", 0).start()
    try:
        fetcher = BrowserFetcher(executable_path=str(wrapper), network=OPEN_LOOPBACK)
        async with fetcher:
            profile = record.read_text().strip()
            seen: dict[str, str] = {}
            watching = asyncio.ensure_future(watch(profile, seen))
            try:
                result = await fetcher.fetch(f"http://127.0.0.1:{runner.addresses[0][1]}/")
            finally:
                watching.cancel()
            processes = list(seen.items())
    finally:
        await runner.cleanup()

    assert result.outcome is FetchOutcome.SUCCESS and b">ran<" in result.body
    assert processes, "no Chromium process found"
    assert not any("--no-sandbox" in cmdline for cmdline, _ in processes)
    renderers = [status for cmdline, status in processes if "--type=renderer" in cmdline]
    assert renderers
    for status in renderers:
        assert status_field(status, "Uid") == str(NOBODY)
        assert status_field(status, "Seccomp") == "2"  # seccomp-bpf filter: the sandbox
        assert len(status_field_all(status, "NSpid")) > 1  # a PID namespace of its own


async def page_with_script(request: web.Request) -> web.Response:
    page = "<p id=p></p><script>document.getElementById('p').textContent = 'ran'</script>"
    return web.Response(text=page, content_type="text/html")


def status_field_all(status: str, name: str) -> list[str]:
    line = next(line for line in status.splitlines() if line.startswith(name + ":"))
    return line.split(":", 1)[1].split()
