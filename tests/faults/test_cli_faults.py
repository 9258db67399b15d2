"""What the CLI shows when what it reads is hostile or wrong: always text, always one line.

The real CLI runs in subprocesses against real stores; the stored strings are written
through the store's own interface, as a worker would write what a server sent.
"""

from __future__ import annotations

import asyncio
import os
import sqlite3
import subprocess
from pathlib import Path

import psycopg
import pytest

from sitesync.models import AssetRecord, RunConfig, RunStatus, TaskReport
from sitesync.store import open_store
from sitesync.store._sql import load_migrations
from tests.acceptance._cli import run_in_process
from tests.contract.test_frontier_store import task

#: Rich markup (a closing tag with no opening one crashed ``show``), an emoji code and a link.
HOSTILE = "boom [/bold] [red]x[/red] :x: [link=http://e.test]y[/link]"
SEED = "http://a.test/[/bold]"
#: Terminal control sequences: clear the screen, retitle the window.
CONTROL = "\x1b[2J\x1b]0;pwned\x07"


def cli(
    *args: str, cwd: Path | None = None, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """The CLI in this process: what is tested is what it prints (wide, as a terminal of
    400 columns would show it)."""
    return run_in_process(*args, cwd=cwd, env={"COLUMNS": "400", **(env or {})})


def one_line_error(result: subprocess.CompletedProcess[str], *parts: str) -> str:
    """The run failed with exit 1 and one line on stderr starting ``error:``; that line."""
    assert result.returncode == 1, (result.returncode, result.stdout, result.stderr)
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), result.stderr
    assert "Traceback" not in result.stderr
    for part in parts:
        assert part in lines[0], (part, lines[0])
    return lines[0]


def hostile_store(db: Path) -> None:
    """Run 1 running with a failed URL whose error is markup; run 2 failed for a markup
    reason; a record whose URL and kind hold markup."""

    async def go() -> None:
        store = await open_store(str(db))
        try:
            run = await store.create_run(RunConfig(seeds=(SEED,), max_retries=1))
            await store.transition_run(run.id, RunStatus.RUNNING)
            await store.mark_seeded(run.id)
            await store.add_tasks(run.id, [task(1), task(2)])
            first, second = await store.acquire(run.id, worker_id="w", limit=2, lease_seconds=60)
            record = AssetRecord(key=f"page:{SEED}", kind="page", url=SEED, content_hash="h")
            await store.report(
                run.id,
                [
                    TaskReport(lease=first, ok=False, error=HOSTILE, give_up=True),
                    TaskReport(lease=second, ok=True, http_status=200, records=(record,)),
                ],
            )
            other = await store.create_run(RunConfig(seeds=(SEED,)))
            await store.transition_run(other.id, RunStatus.RUNNING)
            await store.transition_run(other.id, RunStatus.FAILED, reason=HOSTILE + CONTROL)
        finally:
            await store.close()

    asyncio.run(go())


def test_stored_markup_is_shown_as_text_by_every_command(tmp_path: Path) -> None:
    db = tmp_path / "hostile.db"
    hostile_store(db)
    shown = {
        "show 1": cli("show", "1", "--db", str(db)),
        "show 2": cli("show", "2", "--db", str(db)),
        "runs": cli("runs", "--db", str(db)),
        "status": cli("status", "--db", str(db)),
        "history": cli("history", f"page:{SEED}", "--db", str(db)),
        "records": cli("records", "1", "--db", str(db)),
        "export": cli("export", "1", "--db", str(db), "--output", str(tmp_path / "x.jsonl")),
    }
    for name, result in shown.items():
        assert result.returncode == 0, (name, result.stderr)
        assert "Traceback" not in result.stderr and "MarkupError" not in result.stderr, name
    # The failed URL's error, the run's reason and the seed, character for character.
    assert HOSTILE in shown["show 1"].stdout
    assert HOSTILE in shown["show 2"].stdout
    assert SEED in shown["show 1"].stdout and SEED in shown["runs"].stdout
    assert SEED in shown["status"].stdout
    assert f"history of page:{SEED}" in shown["history"].stdout
    everything = "".join(r.stdout + r.stderr for r in shown.values())
    assert "❌" not in everything  # :x: stayed text
    # Control characters are shown escaped, never sent to the terminal.
    assert "\x1b" not in everything and "\x07" not in everything
    assert "\\x1b[2J\\x1b]0;pwned\\x07" in shown["show 2"].stdout


def test_a_malformed_settings_file_is_one_line(tmp_path: Path) -> None:
    (tmp_path / "sitesync.toml").write_text("concurrency = [\n")
    one_line_error(cli("runs", cwd=tmp_path), "settings file sitesync.toml")
    named = tmp_path / "other.toml"
    named.write_bytes(b"db = \xff\n")
    one_line_error(cli("runs", env={"SITESYNC_CONFIG": str(named)}), str(named))


def test_a_cadence_that_never_fires_is_one_line(tmp_path: Path) -> None:
    db = str(tmp_path / "s.db")
    line = one_line_error(cli("schedule", "shops", "--cadence", "0 0 31 2 *", "--db", db))
    assert "'0 0 31 2 *'" in line and "never fire" in line
    setting = cli("runs", "--db", db, env={"SITESYNC_SCAN_CADENCE": "0 0 30 2 *"})
    one_line_error(setting, "scan_cadence", "never fire")
    leap = cli("schedule", "shops", "--cadence", "0 0 29 2 *", "--db", db)
    assert leap.returncode == 0, leap.stderr  # rare is fine: 29 February comes


def test_bad_export_paths_are_one_line_and_create_nothing(tmp_path: Path) -> None:
    db = tmp_path / "hostile.db"
    hostile_store(db)
    missing = tmp_path / "missing" / "dir" / "x.jsonl"
    one_line_error(cli("export", "1", "--db", str(db), "-o", str(missing)), "does not exist")
    assert not missing.parent.exists()
    one_line_error(cli("export", "1", "--db", str(db), "-o", str(tmp_path)), "is a directory")
    assert {p.name for p in tmp_path.iterdir() if not p.name.startswith("hostile.db")} == set()


def test_export_replaces_the_file_whole_and_leaves_no_temporary(tmp_path: Path) -> None:
    db = tmp_path / "hostile.db"
    hostile_store(db)
    out = tmp_path / "out" / "records.csv"
    out.parent.mkdir()
    out.write_text("the previous export\n")
    before = out.stat().st_ino
    result = cli("export", "1", "--db", str(db), "-o", str(out), "-f", "csv")
    assert result.returncode == 0, result.stderr
    assert out.read_text().startswith("key,kind,url")
    assert SEED in out.read_text()
    # A new file renamed over the old one, not the old one rewritten in place.
    assert out.stat().st_ino != before
    assert [p.name for p in out.parent.iterdir()] == ["records.csv"]
    assert out.stat().st_mode & 0o777 == 0o666 & ~_umask()
    # A run that does not exist changes nothing: the old file stays as it was.
    out.write_text("kept\n")
    one_line_error(cli("export", "99", "--db", str(db), "-o", str(out)), "99")
    assert out.read_text() == "kept\n" and [p.name for p in out.parent.iterdir()] == ["records.csv"]


def _umask() -> int:
    current = os.umask(0)
    os.umask(current)
    return current


def test_a_store_from_the_future_is_refused_naming_both_versions(db_url: str) -> None:
    ours = len(
        load_migrations("sitesync.store.postgres" if "://" in db_url else "sitesync.store.sqlite")
    )
    first = cli("migrate", "--db", db_url)
    assert first.returncode == 0, first.stderr  # created and migrated
    _record_migration(db_url, 99)
    commands = (["runs"], ["migrate"], ["migrate", "--dry-run"], ["db", "upgrade"],
                ["crawl", "http://127.0.0.1:9/", "--no-progress"])  # fmt: skip
    for args in commands:
        result = cli(*args, "--db", db_url)
        one_line_error(result, "schema version 99", f"schema version {ours}", "upgrade sitesync")
    # Nothing was written by the refused commands: no run was created.
    _forget_migration(db_url, 99)
    listed = cli("runs", "--db", db_url)
    assert listed.returncode == 0 and "no runs" in listed.stdout, listed.stdout


def _record_migration(db_url: str, version: int) -> None:
    _execute(
        db_url,
        "INSERT INTO schema_migrations (version, name, applied_at) "
        f"VALUES ({version}, 'from_the_future', 0)",
    )


def _forget_migration(db_url: str, version: int) -> None:
    _execute(db_url, f"DELETE FROM schema_migrations WHERE version = {version}")


def _execute(db_url: str, statement: str) -> None:
    if "://" not in db_url:
        with sqlite3.connect(db_url) as conn:
            conn.execute(statement)
        return
    with psycopg.connect(db_url, autocommit=True) as conn:
        conn.execute(statement.encode())


@pytest.fixture(autouse=True)
def _no_settings_file_from_the_caller(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.chdir(tmp_path)  # a sitesync.toml where pytest runs must not leak in
