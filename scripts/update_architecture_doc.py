"""Regenerate the task and run transition tables in docs/architecture.md from
sitesync.frontier.transitions."""

from __future__ import annotations

from pathlib import Path

from sitesync.frontier.transitions import run_transitions_table, transitions_table

DOC = Path(__file__).parents[1] / "docs" / "architecture.md"
END = "\n\n"

text = DOC.read_text()
for table in (transitions_table(), run_transitions_table()):
    start = table.splitlines()[0]  # each table's header line is its own
    head, rest = text[: text.index(start)], text[text.index(start) :]
    text = head + table.rstrip("\n") + rest[rest.index(END) :]
DOC.write_text(text)
print(f"updated {DOC}")
