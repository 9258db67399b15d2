"""The store's layout rules (issue 12), checked on the source so they cannot drift back.

The two backends are siblings: neither imports the other. Nothing in the store imports
inside a function except ``open_store``, which loads a backend only when it is used. Each
backend reads its SQL once, into the query namespace of its plumbing module (``_db.py``).
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

import sitesync.store
from sitesync.store._sql import load_namespace

STORE = Path(sitesync.store.__file__).parent
BACKENDS = ("sqlite", "postgres")


def _modules() -> list[Path]:
    return sorted(STORE.rglob("*.py"))


def _imported(tree: ast.AST) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module)
        elif isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
    return names


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_backend_imports_nothing_of_the_other(backend: str) -> None:
    other = next(b for b in BACKENDS if b != backend)
    offenders = [
        path.name
        for path in sorted((STORE / backend).glob("*.py"))
        if any(
            name.startswith(f"sitesync.store.{other}")
            for name in _imported(ast.parse(path.read_text()))
        )
    ]
    assert offenders == []


def test_no_import_hides_inside_a_function() -> None:
    found = []
    for path in _modules():
        for node in ast.walk(ast.parse(path.read_text())):
            if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                continue
            for inner in ast.walk(node):
                if isinstance(inner, ast.Import | ast.ImportFrom):
                    found.append(f"{path.relative_to(STORE)}::{node.name}")
    # The backend a URL names is loaded when used, and only that one (open_store,
    # pending_migrations); libpq's parser only when a --db looks like key=value.
    assert sorted(set(found)) == [
        "__init__.py::_postgres_store", "__init__.py::_sqlite_store", "__init__.py::is_postgres",
    ]  # fmt: skip


def test_each_backend_loads_its_queries_in_one_place() -> None:
    loaders = {
        str(path.relative_to(STORE))
        for path in _modules()
        for node in ast.walk(ast.parse(path.read_text()))
        if isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id in {"load_namespace", "load_queries"}
    }
    assert loaders == {"_sql.py", "sqlite/_db.py", "postgres/_db.py"}


@pytest.mark.parametrize("backend", BACKENDS)
def test_both_backends_name_their_common_queries_alike(backend: str) -> None:
    # The calls of store/_plain.py find their query by name on either backend.
    other = next(b for b in BACKENDS if b != backend)
    mine, theirs = (set(load_namespace(f"sitesync.store.{b}")) for b in (backend, other))
    used = {
        node.args[0].value
        for node in ast.walk(ast.parse((STORE / "_plain.py").read_text()))
        if isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr in {"rows", "execute"}
        and node.args
        and isinstance(node.args[0], ast.Constant)
    }
    assert used, "no query names found in store/_plain.py"
    assert used <= mine & theirs


def test_postgres_sends_text_and_bytea_arrays_in_binary() -> None:
    # docs/decisions.md: psycopg's text-format array dumper quotes each element in Python
    # (33 ms for one report batch's JSON documents, 0.15 ms in binary).
    text_format = re.compile(r"%\((\w+)\)s::(text|bytea)\[\]")
    offenders = [
        f"{path.name}: {match.group(0)}"
        for path in sorted((STORE / "postgres").glob("*.sql"))
        for match in text_format.finditer(path.read_text())
    ]
    assert offenders == []
