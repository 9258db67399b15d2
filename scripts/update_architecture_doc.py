"""Regenerate the task-transition table in docs/architecture.md from sitesync.transitions."""

from __future__ import annotations

from pathlib import Path

from sitesync.transitions import transitions_table

DOC = Path(__file__).parents[1] / "docs" / "architecture.md"
START = "| from | event |"
END = "\n\n"

text = DOC.read_text()
head, rest = text[: text.index(START)], text[text.index(START) :]
DOC.write_text(head + transitions_table().rstrip("\n") + rest[rest.index(END) :])
print(f"updated {DOC}")
