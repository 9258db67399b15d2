"""The suite's throwaway PostgreSQL (tests/_postgres.py): a session killed before its
clean-up leaves a server running; the next session stops and deletes it."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import psycopg
import pytest

from tests import _postgres

REPO = Path(__file__).resolve().parents[2]

ABANDONED = """
import time
from tests import _postgres
with _postgres.throwaway_server() as dsn:
    print(dsn, flush=True)
    time.sleep(600)
"""


def test_a_killed_sessions_server_is_stopped_and_deleted_by_the_next_one() -> None:
    session = subprocess.Popen(
        [sys.executable, "-c", ABANDONED], stdout=subprocess.PIPE, text=True, cwd=REPO
    )
    try:
        assert session.stdout is not None
        dsn = session.stdout.readline().strip()
        assert dsn, "the throwaway server did not start"
        psycopg.connect(dsn, connect_timeout=5).close()
        [root] = [
            owner.parent
            for owner in Path(_postgres.tempfile.gettempdir()).glob("sitesync-pg-*/owner.pid")
            if owner.read_text() == str(session.pid)
        ]
    finally:
        session.kill()  # as a CI timeout would: its ``finally`` never runs
        session.wait()
        if session.stdout is not None:
            session.stdout.close()
    psycopg.connect(dsn, connect_timeout=5).close()  # left running

    pg_ctl, as_user = _postgres._binary("pg_ctl"), _postgres._unprivileged_prefix()
    assert root in _postgres.reap_abandoned_servers(pg_ctl, as_user)
    assert not root.exists()
    with pytest.raises(psycopg.OperationalError):
        psycopg.connect(dsn, connect_timeout=5)
