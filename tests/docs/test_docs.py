"""The docs stay true: every setting and every command is documented."""

from __future__ import annotations

from pathlib import Path

from typer.main import get_command

from sitesync.cli import app
from sitesync.cli.reference import settings_reference
from sitesync.frontier.transitions import run_transitions_table, transitions_table

DOCS = Path(__file__).parents[2] / "docs"


def test_settings_reference_is_current() -> None:
    current = settings_reference() in (DOCS / "settings.md").read_text()
    assert current, "docs/settings.md is out of date: run 'make docs'"


def test_architecture_draws_the_transitions_of_the_code() -> None:
    drawn = (DOCS / "architecture.md").read_text()
    assert transitions_table() in drawn, (
        "docs/architecture.md's task table is out of date: run 'make docs'"
    )
    assert run_transitions_table() in drawn, (
        "docs/architecture.md's run table is out of date: run 'make docs'"
    )


def test_every_command_is_in_the_operator_guide() -> None:
    guide = (DOCS / "operating.md").read_text()
    group = get_command(app)
    names = list(group.commands)  # type: ignore[attr-defined]
    assert names
    for name in names:
        assert f"sitesync {name}" in guide, name


def test_json_schemas_are_current() -> None:
    from scripts.update_json_doc import FOLDER, render

    from sitesync.cli.output import SHAPES

    for command in SHAPES:
        path = FOLDER / f"{command}.schema.json"
        assert path.exists() and path.read_text() == render(command), (
            f"{path} is out of date: run 'make docs'"
        )


def test_the_exit_code_table_is_current() -> None:
    from sitesync.cli.reference import exit_codes_table

    assert exit_codes_table() in (DOCS / "operating.md").read_text(), (
        "docs/operating.md's exit codes are out of date: run 'make docs'"
    )
