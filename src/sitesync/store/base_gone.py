"""The store interfaces of pages that disappear and of change reports (issue 30, see
:mod:`sitesync.store._gone` and :mod:`sitesync.store._changes`)."""

from __future__ import annotations

from typing import Protocol

from sitesync.models import ChangeReport


class GoneStore(Protocol):
    async def mark_gone(self, run_id: int) -> int:
        """Give each page the run's previous scan saw and the run found gone (404/410, or,
        once completed, no longer reached on a host where every link was followed) its
        tombstone version, written by the run; how many it marked. Idempotent: a page
        already gone is not marked again. Called when the run ends, whatever its end."""
        ...


class ChangeStore(Protocol):
    async def previous_scan_of(self, run_id: int) -> int | None:
        """The run's previous scan: the latest earlier completed run of the same scope, or
        with the same seeds and limits (store/_gone.py); None when there is none."""
        ...

    async def change_report(
        self, run_id: int, *, since_run_id: int | None = None, host: str | None = None
    ) -> ChangeReport:
        """Per host (only ``host``, if given): the run's pages new, changed, unchanged, gone
        since ``since_run_id`` (default: the run's previous scan), and the bytes the run
        downloaded against what fetching every page it saw in full would have cost."""
        ...
