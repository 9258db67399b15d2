"""Every command's ``--help`` reads well at 80 columns, piped (issue 31, item 5): no flag
name cut short, every paragraph wrapped by the width rather than by the source, defaults
shown, options in panels."""

from __future__ import annotations

import itertools
import re

import pytest
import typer.main

from sitesync.cli import app
from sitesync.cli.help import PANELS
from tests.acceptance._cli import run_in_process

WIDTH = 80
#: Click wraps help text two columns short of the terminal's width.
WRAP = WIDTH - 2


def command_paths() -> list[list[str]]:
    """Every command and group of the CLI, as the words that name it."""
    found: list[list[str]] = []

    def walk(command: object, path: list[str]) -> None:
        found.append(path)
        for name, sub in sorted(getattr(command, "commands", {}).items()):
            walk(sub, [*path, name])

    walk(typer.main.get_command(app), [])
    return found


def help_of(path: list[str]) -> str:
    done = run_in_process(*path, "--help", env={"COLUMNS": str(WIDTH)})
    assert done.returncode == 0, done.stderr
    return done.stdout


def wrapped_needlessly(lines: list[str]) -> list[str]:
    """Lines of one text block broken although the next word would have fitted: the
    source's line breaks kept instead of wrapping by the width."""
    found = []
    for line, following in itertools.pairwise(lines):
        if not line.strip() or not following.strip():
            continue
        indent = len(following) - len(following.lstrip())
        if indent != len(line) - len(line.lstrip()) or following.strip().startswith("-"):
            continue  # another column or another option: not a continuation
        first = following.split()[0]
        if len(line.rstrip()) + 1 + len(first) <= WRAP:
            found.append(f"{line.rstrip()!r} / {first!r}")
    return found


@pytest.mark.parametrize("path", command_paths(), ids=lambda p: " ".join(p) or "sitesync")
def test_help_fits_80_columns_and_reads_as_sentences(path: list[str]) -> None:
    text = help_of(path)
    lines = text.splitlines()
    assert "…" not in text  # no cut names or words
    assert not re.search(r"-\n\s+[a-z]", text)  # nor a name broken at a hyphen
    assert "<bool>" not in text
    assert all(len(line) <= WIDTH for line in lines), max(lines, key=len)
    description = text.split("\n\n", 1)[1].split("\n\n" if path else "Options", 1)[0]
    assert wrapped_needlessly(description.splitlines()) == []
    # every option of every panel shows its flag in full at the start of its line
    for flag in re.findall(r"^  (--[a-z][a-z0-9-]+)", text, re.MULTILINE):
        assert f"  {flag}" in text


def test_the_crawl_help_groups_its_options_in_panels_with_defaults() -> None:
    text = help_of(["crawl"])
    shown = re.findall(r"^([A-Z][A-Za-z ]+):$", text, re.MULTILINE)
    assert shown == [panel for panel in PANELS if panel in shown]  # in PANELS order
    for panel in ("What to crawl", "Politeness", "Limits", "Network", "Fleet", "Internals"):
        assert f"\n{panel}:\n" in text
    assert "--per-host-concurrency" in text and "[default: 1]" in text
    assert "--max-pages N" in text and "no limit" in text
    # internals come last, after the options a user sets every day
    assert text.index("Internals:") > text.index("Politeness:") > text.index("What to crawl:")


def test_shell_completion_is_available() -> None:
    text = help_of([])
    assert "--install-completion" in text and "--show-completion" in text
