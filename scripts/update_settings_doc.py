"""Regenerate the settings table in docs/settings.md from the Settings class (`make docs`)."""

from __future__ import annotations

from pathlib import Path

from sitesync.cli.reference import settings_reference

DOC = Path(__file__).parents[1] / "docs" / "settings.md"
START = "| setting |"
END = "\nPer-run options"

text = DOC.read_text()
head, rest = text[: text.index(START)], text[text.index(START) :]
DOC.write_text(head + settings_reference() + rest[rest.index(END) :])
print(f"updated {DOC}")
