"""The store interface of pages that disappear (issue 30, see :mod:`sitesync.store._gone`)."""

from __future__ import annotations

from typing import Protocol


class GoneStore(Protocol):
    async def mark_gone(self, run_id: int) -> int:
        """Give each page the run's previous scan saw and the run found gone (404/410, or,
        once completed, no longer reached on a host where every link was followed) its
        tombstone version, written by the run; how many it marked. Idempotent: a page
        already gone is not marked again. Called when the run ends, whatever its end."""
        ...
