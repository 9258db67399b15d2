"""Named SQL queries and numbered migrations, shared by every backend.

Each backend keeps its SQL beside its code, one file per area of the store (``runs.sql``,
``frontier.sql``, ``coordination.sql``, ...), each a series of blocks that start with a
``-- name: <query_name>`` line; ``migrations/NNNN_description.sql`` holds the schema history
and ``schema.sql`` the schema it builds (read by tests only). :func:`load_namespace` reads
every area file once into the backend's one query namespace. Reading SQL from files keeps it
reviewable side by side across backends and keeps f-strings out of SQL.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from importlib import resources
from typing import LiteralString, cast

from sitesync.errors import MigrationError, SchemaTooNew, StoreError, StoreNotReady

_NAME_LINE = re.compile(r"^--\s*name:\s*(\w+)\s*$", re.MULTILINE)
_MIGRATION_FILE = re.compile(r"^(\d{4})_(\w+)\.sql$")
_SCHEMA_FILE = "schema.sql"  # the whole schema, for tests to compare with the migrations


def load_namespace(package: str) -> dict[str, LiteralString]:
    """Every named query of a backend package, from all its area files, by name.

    Names are unique across the files: a query is found by its name alone, whichever
    area's file holds it.
    """
    namespace: dict[str, LiteralString] = {}
    for entry in sorted(resources.files(package).iterdir(), key=lambda e: e.name):
        if not entry.name.endswith(".sql") or entry.name == _SCHEMA_FILE:
            continue
        queries = load_queries(package, entry.name)
        twice = namespace.keys() & queries.keys()
        if twice:
            raise StoreError(f"{package}: queries named twice: {sorted(twice)}")
        namespace.update(queries)
    return namespace


def load_queries(package: str, filename: str) -> dict[str, LiteralString]:
    """Read one named-query file of a backend package."""
    text = resources.files(package).joinpath(filename).read_text(encoding="utf-8")
    parts = _NAME_LINE.split(text)
    # split() yields [preamble, name1, body1, name2, body2, ...]
    queries: dict[str, LiteralString] = {}
    for name, body in zip(parts[1::2], parts[2::2], strict=True):
        # The SQL comes from a file shipped in the package, never from user input:
        # treating it as a literal is what makes it safe to hand to the driver.
        queries[name] = cast(LiteralString, body.strip())
    return queries


@dataclass(frozen=True, slots=True)
class Migration:
    version: int
    name: str
    sql: str


def load_migrations(package: str) -> list[Migration]:
    """Every ``migrations/NNNN_name.sql`` of a backend package, in version order."""
    folder = resources.files(package).joinpath("migrations")
    found: list[Migration] = []
    for entry in folder.iterdir():
        match = _MIGRATION_FILE.match(entry.name)
        if match is None:
            continue
        found.append(
            Migration(int(match.group(1)), match.group(2), entry.read_text(encoding="utf-8"))
        )
    found.sort(key=lambda m: m.version)
    versions = [m.version for m in found]
    if versions != list(range(1, len(found) + 1)):
        raise MigrationError(f"migrations of {package} are not numbered 1..N: {versions}")
    return found


def check_current(applied: Iterable[int], known: list[Migration], where: str) -> None:
    """For a command that only reads: ``SchemaTooNew`` as :func:`refuse_newer`, and
    ``StoreNotReady`` when the store lacks migrations this sitesync has (it is never
    migrated by reading: ``sitesync migrate`` does that)."""
    applied = set(applied)
    refuse_newer(applied, known, where)
    ours = known[-1].version if known else 0
    if max(applied, default=0) < ours:
        raise StoreNotReady(
            f"store {where} has schema version {max(applied, default=0)}, older than this "
            f"sitesync's ({ours}): 'sitesync migrate --db ...' brings it up to date (a "
            "command that only reads never migrates a store)"
        )


def refuse_newer(applied: Iterable[int], known: list[Migration], where: str) -> None:
    """``SchemaTooNew`` when a newer sitesync migrated the store: this one would misread it
    (or write rows the newer one does not expect), so it is not used at all."""
    newest = max(applied, default=0)
    ours = known[-1].version if known else 0
    if newest > ours:
        raise SchemaTooNew(
            f"store {where} has schema version {newest}, newer than this sitesync knows "
            f"(schema version {ours}): upgrade sitesync to use this store"
        )
