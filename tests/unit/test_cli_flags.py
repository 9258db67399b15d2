"""Flags are what they claim: every flag an error or a doc names exists, help shows the
defaults Settings hold, and a bad value names the flag its user typed."""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Literal, get_args, get_origin

import pytest
from typer.main import get_command
from typer.testing import CliRunner

import sitesync
from sitesync.cli import app
from sitesync.cli.options import FLAGS, from_flags
from sitesync.config import Settings
from sitesync.errors import ConfigError

ROOT = Path(__file__).parents[2]
PACKAGE = Path(sitesync.__file__).parent
FLAG = re.compile(r"(?<![\w-])--[a-z][a-z0-9-]*")

#: Flags of other programs that the docs and sources name: mypy's, and Chromium's (the
#: browser fetcher builds Chromium's command line; ``python -m sitesync.testing`` has a
#: parser of its own).
FOREIGN_MODULES = ("fetch/browser", "fetch/guard_proxy", "testing/")
FOREIGN_FLAGS = {"--strict", "--no-sandbox"}


def _commands(command: Any, path: str = "sitesync") -> Iterator[tuple[str, Any]]:
    """Every command under ``command`` (typer's own click: typed loosely, walked by shape)."""
    yield path, command
    for name, sub in getattr(command, "commands", {}).items():
        yield from _commands(sub, f"{path} {name}")


def _cli_flags() -> set[str]:
    flags = {"--help"}  # click adds it to every command
    for _, command in _commands(get_command(app)):
        for param in command.params:
            if param.param_type_name == "option":
                flags.update(param.opts, param.secondary_opts)
    return flags


def _source_strings() -> Iterator[tuple[str, str]]:
    """(module, text) of every string literal in the package: messages, help, docstrings."""
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(PACKAGE).as_posix()
        if rel.startswith(FOREIGN_MODULES):
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Constant) and isinstance(node.value, str):
                yield rel, node.value


def test_the_cli_has_its_flags() -> None:
    # Guard: a walk that found nothing would make every check below pass.
    assert {"--db", "--timeout", "--robots", "--no-robots", "--max-workers"} <= _cli_flags()


def test_every_flag_the_sources_name_exists() -> None:
    real = _cli_flags()
    named = {(rel, flag) for rel, text in _source_strings() for flag in FLAG.findall(text)}
    assert len(named) > 20
    assert {(rel, flag) for rel, flag in named if flag not in real} == set()


@pytest.mark.parametrize(
    "doc", [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))], ids=lambda p: p.name
)
def test_every_flag_the_docs_name_exists(doc: Path) -> None:
    named = set(FLAG.findall(doc.read_text(encoding="utf-8")))
    assert named - _cli_flags() - _benchmark_flags() - FOREIGN_FLAGS == set()


def _choices() -> dict[str, set[str]]:
    """The values each flag of a ``Literal`` setting takes (``--fetcher``: http, ...)."""
    found: dict[str, set[str]] = {}
    for flag in FLAGS.values():
        annotation = Settings.model_fields[flag.setting].annotation
        if get_origin(annotation) is Literal:
            found[flag.name] = {str(value) for value in get_args(annotation)}
    return found


def test_every_value_the_docs_and_sources_give_a_choice_flag_is_one_of_its_choices() -> None:
    choices = _choices()
    assert {"http", "browser", "null"} == choices["--fetcher"]  # the walk found them
    given = re.compile(r"(?<![\w-])(--[a-z][a-z0-9-]*)[ =]([a-z][a-z0-9_-]*)")
    texts = [(doc.name, doc.read_text(encoding="utf-8")) for doc in _docs()]
    wrong = {
        (where, flag, value)
        for where, text in [*texts, *_source_strings()]
        for flag, value in given.findall(text)
        if flag in choices and value not in choices[flag]
    }
    assert wrong == set()


def _docs() -> list[Path]:
    return [ROOT / "README.md", ROOT / "CHANGELOG.md", *sorted((ROOT / "docs").glob("*.md"))]


def _benchmark_flags() -> set[str]:
    """The flags of the benchmark scripts (argparse), which the docs name too."""
    declared = re.compile(r"add_argument\(\s*\"(--[a-z][a-z0-9-]*)\"")
    scripts = (ROOT / "benchmarks").glob("*.py")
    return {flag for path in scripts for flag in declared.findall(path.read_text())}


def _help(*command: str) -> str:
    result = CliRunner().invoke(app, [*command, "--help"], env={"COLUMNS": "400"})
    assert result.exit_code == 0, result.output
    return " ".join(result.output.split())


@pytest.mark.parametrize("command", ["crawl", "worker", "supervise", "dashboard", "schedule"])
def test_help_shows_the_defaults_settings_hold(command: str) -> None:
    shown = _help(command)
    params = dict(_commands(get_command(app)))[f"sitesync {command}"].params
    checked = 0
    for param in params:
        flag = next((f for f in FLAGS.values() if f.name in getattr(param, "opts", ())), None)
        if flag is None:
            continue
        default = Settings.model_fields[flag.setting].default
        if isinstance(default, int | float | str) and not isinstance(default, bool) and default:
            # the flag as listed: alone, or first of its names (--total-timeout, --timeout)
            listed = f"{flag.name} " in shown or f"{flag.name}, " in shown
            assert listed and f"[default: {default}]" in shown, flag.name
            checked += 1
    assert checked >= 2


def test_no_help_hard_codes_a_default_settings_hold() -> None:
    # The old style, "[60]" at the end of a help string, drifts from Settings.
    for _, command in _commands(get_command(app)):
        for param in command.params:
            help_text = getattr(param, "help", None) or ""
            assert not re.search(r"\[[\d.]+( MiB)?\]", help_text), (param.name, help_text)


def test_db_help_says_it_takes_a_postgresql_url() -> None:
    assert "PostgreSQL URL" in _help("crawl") and "PostgreSQL URL" in _help("runs")


def test_a_bad_flag_value_names_the_flag_typed() -> None:
    with pytest.raises(
        ConfigError, match=r"total_timeout \(--total-timeout / --timeout / SITESYNC_TOTAL_TIMEOUT\)"
    ):
        from_flags(total_timeout=-1)
    with pytest.raises(
        ConfigError,
        match=r"respect_robots \(--respect-robots / --robots / SITESYNC_RESPECT_ROBOTS\)",
    ):
        from_flags(respect_robots="maybe")


def test_a_bad_environment_value_names_no_flag_the_command_lacks(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("SITESYNC_TOTAL_TIMEOUT", "-1")
    with pytest.raises(ConfigError) as info:
        from_flags(db="x.db")  # a command with --db only, such as `sitesync runs`
    assert "(SITESYNC_TOTAL_TIMEOUT)" in str(info.value)
    assert "--" not in str(info.value)
