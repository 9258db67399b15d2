"""The layers point one way: settings below the store and the crawl code, the read model
below both faces.

Checked twice: by what importing a module really loads (in a fresh interpreter), and by the
imports each module writes (an AST scan, so a lazy import inside a function counts too).
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

import sitesync

PACKAGE = Path(sitesync.__file__).parent
# The two faces (and the read model they share), and the engine under them.
FACES = ("sitesync.cli", "sitesync.web", "sitesync.readmodel")
ENGINE = (
    "sitesync.store", "sitesync.engine", "sitesync.runs", "sitesync.fetch", "sitesync.plugins",
)  # fmt: skip


def _loaded_after(statement: str) -> set[str]:
    code = f"import sys\n{statement}\nprint('\\n'.join(sorted(sys.modules)))"
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60
    )
    return set(out.stdout.split())


def _within(modules: set[str], *packages: str) -> set[str]:
    return {m for m in modules if any(m == p or m.startswith(p + ".") for p in packages)}


def test_importing_settings_loads_no_store_no_crawl_code_and_no_http_stack() -> None:
    loaded = _loaded_after("import sitesync.config")
    assert "sitesync.config" in loaded  # the probe itself works
    assert _within(loaded, "aiohttp", "selectolax", *ENGINE) == set()


def test_the_cli_starts_without_the_web_stack() -> None:
    loaded = _loaded_after("import sitesync.cli")
    assert "sitesync.readmodel.overview" in loaded  # `sitesync status` uses the read model
    assert _within(loaded, "sitesync.web", "fastapi", "starlette", "uvicorn") == set()


def test_the_cli_starts_without_the_crawl_stack() -> None:
    """``sitesync status``, ``pause`` or ``stop`` load no HTTP client: aiohttp alone was a
    third of the CLI's start-up. Only the commands that crawl load it, when they run."""
    loaded = _loaded_after("import sitesync.cli")
    assert "sitesync.cli.crawl" in loaded  # the crawl command is registered all the same
    crawl_stack = (
        "aiohttp",
        "sitesync.runs.crawl",
        "sitesync.engine.worker",
        "sitesync.fetch.http",
    )
    assert _within(loaded, *crawl_stack) == set()


def _imports(path: Path) -> set[str]:
    """Every sitesync module ``path`` imports, anywhere in it (functions and
    ``TYPE_CHECKING`` blocks included)."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module)
        elif isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
    return {name for name in found if name.startswith("sitesync")}


def _modules(under: str) -> dict[str, set[str]]:
    root = PACKAGE / under
    paths = sorted(root.rglob("*.py")) if root.is_dir() else [root]
    assert paths, under  # a moved package must not pass by being empty
    return {path.relative_to(PACKAGE).as_posix(): _imports(path) for path in paths}


# Each part of the package, and the parts above it that it must never import.
RULES: list[tuple[str, tuple[str, ...]]] = [
    ("config.py", (*ENGINE, *FACES)),
    # The state machine's table sits under the store that runs it and everything that asks it.
    ("frontier/transitions.py", (*ENGINE, *FACES, "sitesync.frontier.frontier")),
    ("store", ("sitesync.engine", "sitesync.runs", *FACES)),
    ("readmodel", ("sitesync.engine", "sitesync.runs", "sitesync.plugins", *FACES[:2])),
    # The worker engine crawls what it is given; starting and supervising runs is above it.
    ("engine", ("sitesync.runs", *FACES)),
    # Fetching and the plugins serve the engine, and know nothing of it.
    ("fetch", ("sitesync.engine", "sitesync.runs", *FACES)),
    ("plugins", ("sitesync.engine", "sitesync.runs", *FACES)),
    ("web", ("sitesync.cli",)),
]


@pytest.mark.parametrize(("under", "above"), RULES, ids=[rule[0] for rule in RULES])
def test_no_module_imports_a_layer_above_it(under: str, above: tuple[str, ...]) -> None:
    for module, imports in _modules(under).items():
        assert _within(imports, *above) == set(), module


def test_the_cli_reaches_the_web_only_to_serve_the_dashboard() -> None:
    for module, imports in _modules("cli").items():
        web = _within(imports, "sitesync.web")
        if module == "cli/dashboard.py":
            assert web == {"sitesync.web.server"}, module
        else:
            assert web == set(), module
