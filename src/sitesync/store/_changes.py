"""A scan's change report (issue 30), read the same way on every backend: three named
queries (``changes.sql`` of each backend) summed per host."""

from __future__ import annotations

from collections import defaultdict
from typing import TypeVar

from sitesync.errors import RunNotFound
from sitesync.models import ChangeReport, HostChanges, Run
from sitesync.models.changes import summed
from sitesync.store._area import Area, Plumbing
from sitesync.store._gone import previous_scan

P = TypeVar("P", bound=Plumbing)


class PlainChanges(Area[P]):
    async def previous_scan_of(self, run_id: int) -> int | None:
        """The run's previous scan (store/_gone.py says which run that is), or None."""
        run = await self._run(run_id)
        rows = await self._db.rows(
            "select_earlier_completed_runs", {"run_id": run_id, "scope": run.scope}
        )
        previous = previous_scan(run, [self._db.decode.run(row) for row in rows])
        return None if previous is None else previous.id

    async def change_report(
        self, run_id: int, *, since_run_id: int | None = None, host: str | None = None
    ) -> ChangeReport:
        since = since_run_id if since_run_id is not None else await self.previous_scan_of(run_id)
        params = {"run_id": run_id, "since_run_id": since, "host": host}
        counts: dict[str, dict[str, int]] = defaultdict(dict)
        for row in await self._db.rows("select_page_changes", params):
            skipped = int(row["bytes_skipped"] or 0)
            names = ("new", "changed", "unchanged_not_modified", "unchanged_per_sitemap",
                     "unchanged_same_content")  # fmt: skip
            counts[row["host"]].update({name: int(row[name] or 0) for name in names})
            counts[row["host"]]["bytes_skipped"] = skipped
        if since is not None:
            for row in await self._db.rows("select_pages_missing", params):
                counts[row["host"]].update(
                    gone=int(row["gone"]), not_reached=int(row["not_reached"])
                )
        for row in await self._db.rows("select_host_transfers", params):
            downloaded = int(row["bytes_downloaded"])
            counts[row["host"]].update(requests=int(row["requests"]), bytes_downloaded=downloaded)
        hosts = tuple(_host(name, values) for name, values in sorted(counts.items()))
        return ChangeReport(run_id, since, hosts, summed(hosts))

    async def _run(self, run_id: int) -> Run:
        rows = await self._db.rows("select_run", {"run_id": run_id})
        if not rows:
            raise RunNotFound(f"no run with id {run_id}")
        return self._db.decode.run(rows[0])


def _host(name: str, values: dict[str, int]) -> HostChanges:
    skipped = values.pop("bytes_skipped", 0)
    full = values.get("bytes_downloaded", 0) + skipped
    return HostChanges(name, bytes_full_fetch=full, **values)
