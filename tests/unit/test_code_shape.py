"""The size rule of the house style, checked on every run.

No module in src/sitesync over 400 lines and no function or method over 50 lines, except the
entries of ALLOWED below. An entry that no longer exceeds its limit (or no longer exists) fails
the test too, so the list only shrinks and always says what is still oversized: whoever splits
a file removes its entry in the same commit. Add an entry only for one cohesive thing that is
clearer whole, with a reason that says why.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import sitesync

MAX_MODULE_LINES = 400
MAX_FUNCTION_LINES = 50

PACKAGE = Path(sitesync.__file__).parent

SPLITTING = "TODO issue 12: being split"

# Key: a module path relative to src/sitesync, or "path::qualname" for a function (nested
# functions are named "outer.<locals>.inner", methods "Class.method").
ALLOWED: dict[str, str] = {
    "config.py": (
        "one cohesive thing: the one Settings class, every setting with its documentation in"
        " a flat list that docs/settings.md and --help are generated from; split by area, a"
        " reader would hunt for a setting across files. Everything else moved out (builders:"
        " engine/wiring.py; cadence, networks, user agent: their own modules)"
    ),
}


def _functions(node: ast.AST, prefix: str) -> Iterator[tuple[str, int]]:
    """(qualname, lines) of every function below node, nested ones included."""
    for child in ast.iter_child_nodes(node):
        if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef):
            name = prefix + child.name
            assert child.end_lineno is not None
            yield name, child.end_lineno - child.lineno + 1
            yield from _functions(child, name + ".<locals>.")
        elif isinstance(child, ast.ClassDef):
            yield from _functions(child, prefix + child.name + ".")
        else:
            yield from _functions(child, prefix)


def _measure() -> dict[str, tuple[int, int]]:
    """Every module and function in the package: key -> (lines, limit)."""
    sizes: dict[str, tuple[int, int]] = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(PACKAGE).as_posix()
        source = path.read_text(encoding="utf-8")
        sizes[rel] = (len(source.splitlines()), MAX_MODULE_LINES)
        for qualname, lines in _functions(ast.parse(source, filename=rel), ""):
            sizes[f"{rel}::{qualname}"] = (lines, MAX_FUNCTION_LINES)
    return sizes


def test_scan_sees_the_package() -> None:
    # Guard against a scan that silently finds nothing (a moved package would pass everything).
    sizes = _measure()
    assert "urls.py" in sizes
    assert "urls.py::normalize_url" in sizes


def test_no_module_or_function_over_its_limit_unless_allowed() -> None:
    over = {
        key: f"{lines} lines (limit {limit})"
        for key, (lines, limit) in _measure().items()
        if lines > limit and key not in ALLOWED
    }
    assert not over, f"split these or justify them in ALLOWED: {over}"


def test_every_allowed_entry_is_still_over_its_limit() -> None:
    sizes = _measure()
    stale = {
        key: f"{sizes[key][0]} lines (limit {sizes[key][1]})" if key in sizes else "gone"
        for key in ALLOWED
        if key not in sizes or sizes[key][0] <= sizes[key][1]
    }
    assert not stale, f"remove these from ALLOWED, they fit now: {stale}"


def test_every_allowed_entry_gives_a_reason() -> None:
    assert all(reason.strip() for reason in ALLOWED.values())


def test_functions_are_named_and_measured_like_the_allowlist_keys() -> None:
    source = (
        "class A:\n"
        "    def m(self):\n"
        "        def inner():\n"
        "            pass\n"
        "\n"
        "async def f():\n"
        "    pass\n"
    )
    assert dict(_functions(ast.parse(source), "")) == {
        "A.m": 3,
        "A.m.<locals>.inner": 2,
        "f": 2,
    }
