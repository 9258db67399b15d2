"""When a crawl fetches little or nothing, its summary says why and what to do; ``why``
tells what happened on the wire (issue 31, item 10): the first crawl a new user tries, of a
local ``python3 -m http.server``, with loopback closed as it is by default."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.acceptance._cli import run_in_process
from tests.conftest import OPEN_NETWORKS_ENV


@pytest.fixture
def http_server(tmp_path: Path) -> Iterator[str]:
    """Python's own http.server on a loopback address, serving an empty directory."""
    (tmp_path / "site").mkdir()
    server = subprocess.Popen(
        [sys.executable, "-m", "http.server", "0", "--bind", "127.0.0.71",
         "--directory", str(tmp_path / "site")],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
    )  # fmt: skip
    assert server.stdout is not None
    line = server.stdout.readline()  # "Serving HTTP on 127.0.0.71 port NNNN ..."
    port = line.split(" port ")[1].split()[0]
    try:
        yield f"http://127.0.0.71:{port}/"
    finally:
        server.terminate()
        server.communicate(timeout=10)


def test_a_crawl_refused_by_the_network_policy_says_why_and_how_to_open_it(
    http_server: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(OPEN_NETWORKS_ENV)  # the default: non-public networks closed
    db = str(tmp_path / "first.db")
    done = run_in_process("crawl", http_server, "--db", db, "--no-progress",
                          env={"COLUMNS": "600"})  # fmt: skip
    assert done.returncode == 0, done.stderr  # the run completed: its one URL failed
    summary = " ".join(done.stdout.split())
    assert "why 1 URLs of run 1 failed" in summary
    assert "forbidden_address │ 1 │" in summary
    assert "--allow-network 127.0.0.0/8" in summary
    assert "closed by default" in summary and "your own network" in summary

    story = run_in_process("why", http_server, "--db", db, env={"COLUMNS": "250"}).stdout
    robots = next(line for line in story.splitlines() if line.startswith("robots"))
    assert "never sent: the network policy refused its address" in robots
    assert "answered" not in robots and "fetched" not in robots  # it did not happen

    opened = run_in_process("crawl", http_server, "--db", str(tmp_path / "opened.db"),
                            "--no-progress", "--allow-network", "127.0.0.0/8")  # fmt: skip
    assert opened.returncode == 0
    assert "│ failed │ 0 │" in " ".join(opened.stdout.split()) and "why" not in opened.stdout
