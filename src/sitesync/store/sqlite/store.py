"""The embedded backend: one SQLite file in WAL mode, shared by any number of processes.

The store is the union of its areas (runs, frontier, records, coordination, supervision,
registry), each written against one plumbing object, :class:`SqliteDb` (see
:mod:`sitesync.store.sqlite._db` for how transactions, locks and the thread work).
Calls that are one named query on every backend (the overview among them) are written
once for both in :mod:`sitesync.store._plain`.
"""

from __future__ import annotations

import contextlib
import sqlite3
from pathlib import Path
from typing import Any
from urllib.parse import quote

from sitesync.store._changes import PlainChanges
from sitesync.store._plain import PlainOverview
from sitesync.store._sitemapdates import PlainSitemapDates
from sitesync.store.sqlite._db import SqliteDb
from sitesync.store.sqlite.coordination import SqliteCoordination
from sitesync.store.sqlite.frontier import SqliteFrontier
from sitesync.store.sqlite.gone import SqliteGone
from sitesync.store.sqlite.records import SqliteRecords
from sitesync.store.sqlite.registry import SqliteRegistry
from sitesync.store.sqlite.revisits import SqliteRevisits
from sitesync.store.sqlite.runs import SqliteRuns
from sitesync.store.sqlite.supervision import SqliteSupervision


class SqliteStore(
    SqliteRuns,
    SqliteFrontier,
    SqliteRecords,
    SqliteRevisits,
    SqliteGone,
    SqliteCoordination,
    SqliteSupervision,
    PlainOverview[SqliteDb],
    PlainChanges[SqliteDb],
    PlainSitemapDates[SqliteDb],
    SqliteRegistry,
):
    """All store interfaces on one SQLite file.

    ``options`` are :class:`SqliteDb`'s: ``busy_timeout``, ``synchronous``, ``clock`` and
    ``retry_seconds``.
    """

    def __init__(self, path: str | Path, **options: Any) -> None:
        super().__init__(SqliteDb(path, **options))
        self.path = self._db.path

    @classmethod
    async def open(cls, path: str | Path, **options: Any) -> SqliteStore:
        """Open (creating if needed) the database and bring its schema up to date."""
        store = cls(path, **options)
        try:
            await store._db.open()
        except BaseException:
            await store.close()
            raise
        return store

    @staticmethod
    def applied_migrations(path: str | Path) -> set[int]:
        """The migrations recorded in the store at ``path`` (none if it does not exist),
        read without creating or changing anything."""
        if not Path(path).is_file():
            return set()
        uri = f"file:{quote(str(path))}?mode=ro"
        with contextlib.closing(sqlite3.connect(uri, uri=True)) as conn:
            try:
                return {row[0] for row in conn.execute("SELECT version FROM schema_migrations")}
            except sqlite3.OperationalError:  # no such table: not a sitesync store (yet)
                return set()

    def now(self) -> float:
        """This machine's clock: every process of an SQLite store shares it."""
        return self._db.clock()

    async def close(self) -> None:
        """Release the connection and the thread. Idempotent."""
        await self._db.close()
