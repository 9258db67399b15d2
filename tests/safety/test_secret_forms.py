"""Every way libpq takes a password, through every command against a store that cannot be
reached, in both log formats and at debug level: the password shows nowhere.

The store is at 127.0.0.1:1, where nothing listens: each command fails on its first
connection, which is the path that prints errors (and, at -vv, tracebacks).
"""

from __future__ import annotations

import secrets
from pathlib import Path

import pytest

from sitesync.redact import redact, secrets_in
from tests.acceptance._cli import run_in_process

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
