"""Versioned AssetRecords on SQLite (the RecordStore part of the SQLite store)."""

from __future__ import annotations

import sqlite3

from sitesync.models import TaskReport


class SqliteRecords:
    """Mixed into :class:`SqliteStore`; runs inside its transactions and thread."""

    def _save_records(
        self, conn: sqlite3.Connection, run_id: int, report: TaskReport, now: float
    ) -> None:
        """Write the report's records in the report's own transaction."""
        raise NotImplementedError("record persistence is not implemented yet")
