"""Sitemap dates (issue 30), the same on every backend: one named query per call
(``revisits.sql`` of each backend)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TypeVar

from sitesync.store._area import Area, Plumbing

P = TypeVar("P", bound=Plumbing)


class PlainSitemapDates(Area[P]):
    async def save_sitemap_dates(self, run_id: int, dates: Mapping[str, float]) -> None:
        if dates:
            params = {"run_id": run_id, "dates": self._db.json(dict(dates))}
            await self._db.execute("insert_sitemap_dates", params)

    async def sitemap_lastmod(self, run_id: int, url: str) -> float | None:
        rows = await self._db.rows("select_sitemap_date", {"run_id": run_id, "url": url})
        return float(rows[0]["lastmod"]) if rows else None

    async def last_checked(self, urls: Sequence[str]) -> dict[str, float]:
        if not urls:
            return {}
        rows = await self._db.rows("select_last_checked", {"urls": self._db.text_list(urls)})
        return {row["url"]: float(row["checked_at"]) for row in rows}
