"""Versioned AssetRecords on PostgreSQL (the RecordStore part of the PostgreSQL store)."""

from __future__ import annotations

from typing import Any

from sitesync.models import TaskReport


class PostgresRecords:
    """Mixed into :class:`PostgresStore`; runs inside its transactions."""

    async def _save_records(self, conn: Any, run_id: int, report: TaskReport, now: float) -> None:
        """Write the report's records in the report's own transaction."""
        raise NotImplementedError("record persistence is not implemented yet")
