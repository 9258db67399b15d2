"""Every way libpq takes a password, through every command against a store that cannot be
reached, in both log formats and at debug level: the password shows nowhere.

The store is at 127.0.0.1:1, where nothing listens: each command fails on its first
connection, which is the path that prints errors (and, at -vv, tracebacks).
"""

from __future__ import annotations

import json
import logging
import os
import re
import secrets
import signal
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
import warnings
from pathlib import Path
from urllib.parse import quote, urlsplit, urlunsplit

import psycopg
import pytest
from psycopg import sql

from sitesync import logs
from sitesync.redact import redact, secrets_in
from tests.acceptance._cli import KEPT, run_in_process

PASSWORD = "Sup3r Secret"  # with a space: quoted and escaped forms differ


def forms(password: str) -> dict[str, tuple[str, str]]:
    """name: (DSN, the password as written in it)."""
    token = password.replace(" ", "")
    escaped = password.replace(" ", "\\ ")
    spaced = password.replace(" ", "%20")
    encoded = token[:3] + "%zz" + token[3:]  # not valid percent-encoding: libpq refuses it
    return {
        "uri-userinfo": (f"postgresql://u:{encoded}@127.0.0.1:1/db", encoded),
        "uri-password": (f"postgresql://u@127.0.0.1:1/db?password={token}", token),
        "uri-sslpassword": (f"postgresql://u@127.0.0.1:1/db?sslpassword={token}", token),
        "uri-encoded-name": (f"postgresql://u@127.0.0.1:1/db?pass%77ord={token}", token),
        "uri-encoded-value": (f"postgresql://u@127.0.0.1:1/db?password={spaced}", spaced),
        "kv-password": (f"host=127.0.0.1 port=1 dbname=db password={token}", token),
        "kv-sslpassword": (f"host=127.0.0.1 port=1 sslpassword={token} dbname=db", token),
        "kv-quoted": (f"host=127.0.0.1 port=1 password='{password}' dbname=db", password),
        "kv-escaped": (f"host=127.0.0.1 port=1 password={escaped}", escaped),
        "kv-spaced": (f"host=127.0.0.1 port = 1 password = '{password}'", password),
    }


def commands(tmp_path: Path) -> list[list[str]]:
    return [
        ["status"], ["runs"], ["show", "1"], ["settings", "1"], ["migrate"], ["db", "upgrade"],
        ["pause", "1"], ["resume", "1"], ["stop", "1"], ["records", "1"],
        ["export", "1", "-o", str(tmp_path / "out.jsonl")], ["why", "1", "http://127.0.0.1:9/"],
        ["crawl", "http://127.0.0.1:9/", "--no-progress"], ["worker", "--run", "1"],
        ["supervise"], ["dashboard", "--port", "0"], ["claims"],
    ]  # fmt: skip


@pytest.mark.parametrize("log_format", ["text", "json"])
@pytest.mark.parametrize("form", list(forms("x y")))
def test_no_command_shows_a_password_in_any_form(
    form: str, log_format: str, tmp_path: Path
) -> None:
    password = f"{secrets.token_hex(3)} {PASSWORD}"
    dsn, written = forms(password)[form]
    assert written in dsn
    shown: list[str] = []
    for args in commands(tmp_path):
        result = run_in_process(
            "-vv", *args, "--db", dsn, settings={"log_format": log_format}, cwd=tmp_path
        )
        assert result.returncode != 0, (args, result.stdout, result.stderr)
        shown.append(f"{args[0]}: {result.stdout}{result.stderr}")
    everything = "\n".join(shown)
    for secret in {written, password, password.replace(" ", ""), *secrets_in(dsn)}:
        assert secret not in everything, f"{form} ({log_format}) shows {secret!r}"
    assert "127.0.0.1" in everything  # the store is named, without its password
    assert not [p.name for p in tmp_path.iterdir() if "=" in p.name]  # no DSN as a file name


@pytest.mark.parametrize(
    ("text", "hidden"),
    [
        ("postgresql://u@h/db?sslpassword=Secret-8", "Secret-8"),
        ("host=h sslpassword=Secret-9 port=1", "Secret-9"),
        ("postgresql://u@h/db?pass%77ord=Secret-10&x=1", "Secret-10"),
        ("postgresql://u@h/db?%70assword=Secret-11", "Secret-11"),
        (r"host=h password=Sup3r\ Secret-12 dbname=d", "Secret-12"),
        (r"host=h password='it\'s Secret-13' dbname=d", "Secret-13"),
        ("host=h password = Secret-14", "Secret-14"),
        ("no store at host=h password='Secret 15': refused", "Secret 15"),
        ("GET /?x=1&password=Secret-16 HTTP/1.1", "Secret-16"),
        ("postgresql://u:Secret?17@h/db", "Secret?17"),  # libpq: userinfo runs to '@'
    ],
)
def test_redact_reads_passwords_as_libpq_does(text: str, hidden: str) -> None:
    shown = redact(text)
    assert "***" in shown
    assert hidden not in shown and "Secret" not in shown, shown


def test_redact_keeps_what_follows_a_password() -> None:
    assert redact(r"host=h password=a\ b dbname=d") == "host=h password=*** dbname=d"
    assert redact("postgresql://u:p@h/db?x=1") == "postgresql://u:***@h/db?x=1"


@pytest.mark.parametrize("log_format", ["text", "json"])
@pytest.mark.parametrize("form", ["uri", "key-value"])
def test_a_failing_dashboard_request_shows_no_password(
    form: str, log_format: str, postgres_dsn: str, postgres_schema: str, tmp_path: Path
) -> None:
    """uvicorn's own lines (its access log, and the traceback of a request that fails in the
    app) pass through sitesync's redacting handler, in the format asked for."""
    password = f"Pw {secrets.token_hex(6)}"
    dsn = _dsn_of(postgres_dsn, postgres_schema, password, form)
    log = tmp_path / "dashboard.log"
    env = {k: v for k, v in os.environ.items() if not k.startswith("SITESYNC_") or k in KEPT}
    with log.open("w") as out:  # the child keeps its copy
        dashboard = subprocess.Popen(
            [sys.executable, "-m", "sitesync", "-v", "dashboard", "--db", dsn, "--port", "0"],
            stdout=out, stderr=subprocess.STDOUT, env={**env, "SITESYNC_LOG_FORMAT": log_format},
        )  # fmt: skip
    try:
        url = _wait_for_url(log)
        with urllib.request.urlopen(f"{url}api/runs?password={quote(password)}") as ok:
            assert ok.status == 200
        _drop_runs(postgres_dsn, postgres_schema)  # from now on every read fails in the app
        with pytest.raises(urllib.error.HTTPError) as failed:
            urllib.request.urlopen(f"{url}api/runs?password={quote(password)}")
        assert failed.value.code == 500
        body = failed.value.read().decode()
    finally:
        dashboard.send_signal(signal.SIGTERM)
        dashboard.wait(timeout=30)
    shown = log.read_text()
    assert "Traceback" in shown and "UndefinedTable" in shown, shown  # the app's failure
    if log_format == "json":  # uvicorn's lines are sitesync's JSON objects
        uvicorn_lines = [json.loads(line) for line in shown.splitlines() if '"uvicorn.' in line]
        assert {line["logger"] for line in uvicorn_lines} >= {"uvicorn.error", "uvicorn.access"}
    for secret in (password, quote(password), password.replace(" ", "+")):
        assert secret not in shown + body, f"{secret!r} shown by the dashboard"


def _dsn_of(base: str, schema: str, password: str, form: str) -> str:
    parts = urlsplit(base)
    if form == "uri":
        host = parts.netloc.rpartition("@")[2]
        query = f"options=-csearch_path%3D{schema}&password={quote(password)}"
        return urlunsplit((parts.scheme, f"postgres@{host}", parts.path, query, ""))
    return (
        f"host={parts.hostname} port={parts.port or 5432} user={parts.username or 'postgres'}"
        f" dbname={parts.path.lstrip('/')} password='{password}'"
        f" options='-csearch_path={schema}'"
    )


def _wait_for_url(log: Path) -> str:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        found = re.search(r"http://127\.0\.0\.1:\d+/", log.read_text())
        if found:
            return found.group(0)
        time.sleep(0.1)
    raise AssertionError(f"the dashboard did not start: {log.read_text()}")


def _drop_runs(dsn: str, schema: str) -> None:
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute(sql.SQL("drop table {}.runs cascade").format(sql.Identifier(schema)))


def test_uncaught_exceptions_and_warnings_pass_through_redaction(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """What Python would print itself (an uncaught exception in a thread, in the main thread,
    an unraisable one, a warning) is written by sitesync's handler, redacted."""
    for hook in ("excepthook", "unraisablehook"):
        monkeypatch.setattr(sys, hook, getattr(sys, hook))  # restored after the test
    monkeypatch.setattr(threading, "excepthook", threading.excepthook)
    logging.captureWarnings(False)  # another test's configure may have taken them first
    logs.configure("warning", "text")
    dsn = "host=h sslpassword='Secret thread 1'"

    def fail() -> None:
        raise RuntimeError(f"cannot reach {dsn}")

    thread = threading.Thread(target=fail)
    thread.start()
    thread.join()
    try:
        fail()
    except RuntimeError:
        sys.excepthook(*sys.exc_info())
    with warnings.catch_warnings():
        warnings.simplefilter("always")  # not pytest's "error"
        warnings.warn(f"slow store {dsn}", stacklevel=1)
    logging.captureWarnings(False)
    err = capsys.readouterr().err
    assert err.count("RuntimeError: cannot reach host=h sslpassword=***") == 2, err
    assert "slow store host=h sslpassword=***" in err
    assert "Secret" not in err
