"""Regenerate docs/json/*.schema.json, the JSON Schema of every command's ``--json``
document, from sitesync.cli.output (`make docs`; tests/docs checks they are current)."""

from __future__ import annotations

import json
from pathlib import Path

from sitesync.cli.output import SHAPES, json_schema

FOLDER = Path(__file__).parents[1] / "docs" / "json"


def render(command: str) -> str:
    return json.dumps(json_schema(command), indent=2, sort_keys=True) + "\n"


def main() -> None:
    FOLDER.mkdir(exist_ok=True)
    for command in SHAPES:
        (FOLDER / f"{command}.schema.json").write_text(render(command))
    print(f"updated {FOLDER}")


if __name__ == "__main__":
    main()
