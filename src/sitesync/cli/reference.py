"""docs/settings.md's table, generated from the code: every setting, whose it is (the run's
or the process's), its flag (and older aliases), the commands that take that flag, its
environment variable, its default and what it means. ``make docs`` writes it;
tests/docs checks that it is current."""

from __future__ import annotations

import inspect
import re
from collections.abc import Iterator
from typing import Any

import typer.main

from sitesync.cli.options import FILE_ONLY, FLAGS
from sitesync.config import Settings
from sitesync.errors import ExitCode
from sitesync.run_settings import kind_of

#: The log settings: every command takes -v/-q (cli/help.py), and none a flag of its own.
_LOG_FLAGS = {"log_level": "`-v` (info), `-vv` (debug), `-q` (error)", "log_format": "-"}


def _flag_cell(name: str, decls: tuple[str, ...]) -> str:
    if name in _LOG_FLAGS:
        return _LOG_FLAGS[name]
    return "-" if name in FILE_ONLY else _decls(decls)


def _taken_by(name: str, commands: list[str]) -> str:
    if name in _LOG_FLAGS:
        return "every command"
    return ", ".join(f"`{c}`" for c in commands) or "(file, environment)"


def settings_reference() -> str:
    """The Markdown table of every setting, as docs/settings.md shows it."""
    from sitesync.cli import app  # the whole CLI: the commands that take each flag

    taken_by = _commands_by_flag(typer.main.get_command(app))
    lines = [
        "| setting | of | flag | taken by | environment variable | default | meaning |",
        "| --- | --- | --- | --- | --- | --- | --- |",
    ]
    for name, info in Settings.model_fields.items():
        flag = FLAGS[name]
        commands = sorted(taken_by.get(flag.name, ()))
        default = info.default
        shown = f"`{default}`" if default != "" else '`""`'
        meaning = " ".join((info.description or "").split())
        lines.append(
            f"| `{name}` | {kind_of(name)} | {_flag_cell(name, flag.decls)} | "
            f"{_taken_by(name, commands)} | "
            f"`SITESYNC_{name.upper()}` | {shown} | {meaning} |"
        )
    return "\n".join(lines) + "\n"


def _decls(decls: tuple[str, ...]) -> str:
    canonical, *aliases = (decl.split("/")[0] for decl in decls)
    shown = f"`{canonical}`"
    return shown + (f" (also {', '.join(f'`{a}`' for a in aliases)})" if aliases else "")


def _commands_by_flag(root: Any) -> dict[str, set[str]]:
    found: dict[str, set[str]] = {}
    for path, command in _walk(root, ""):
        for param in getattr(command, "params", ()):
            for opt in getattr(param, "opts", ()):
                found.setdefault(opt, set()).add(path)
    return found


def _walk(command: Any, path: str) -> Iterator[tuple[str, Any]]:
    if path:
        yield path, command
    for name, sub in getattr(command, "commands", {}).items():
        yield from _walk(sub, f"{path} {name}".strip())


def exit_codes_table() -> str:
    """docs/operating.md's "Exit codes" table, from :class:`sitesync.errors.ExitCode`."""
    source = inspect.getsource(ExitCode)
    lines = ["| code | name | meaning |", "| --- | --- | --- |"]
    for code in ExitCode:
        found = re.search(rf"^\s+{code.name} = {code.value}\s+#\s*(.+)$", source, re.MULTILINE)
        meaning = found.group(1).strip() if found else ""
        lines.append(f"| {code.value} | `{code.name.lower()}` | {meaning} |")
    return "\n".join(lines) + "\n"
