"""The store interface of issue 30: the latest successful fetch of each URL, kept across
the runs of one store so that a later scan asks the site only what changed.

Writes happen in :meth:`FrontierStore.report`'s transaction, from each completed report's
``revisit`` (models/revisits.py): a full fetch replaces the URL's last fetch (validators,
content hash, size, links, and the ids of the records the report saved); a 304 confirms it
(``checked_at``, validators the 304 sent) and sights its ``resighted`` records in the run.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Protocol

from sitesync.models import LastFetch


class RevisitStore(Protocol):
    async def last_fetch(self, url: str) -> LastFetch | None:
        """The URL's latest successful fetch in the store (any run), or None; in one read,
        with what a 304 for it stands for (``earlier``: its links and its records, each
        still in the store, else None)."""
        ...

    async def last_fetches(self, urls: Sequence[str]) -> dict[str, LastFetch]:
        """:meth:`last_fetch` of each of ``urls`` the store fetched, in one read: a worker
        asks once per batch of leases, not once per page (a store round trip each)."""
        ...

    async def save_sitemap_dates(self, run_id: int, dates: Mapping[str, float]) -> None:
        """Keep the ``<lastmod>`` (epoch seconds, by normalized URL) a sitemap of the run
        gave its pages; a later date for a URL replaces an earlier one."""
        ...

    async def sitemap_lastmod(self, run_id: int, url: str) -> float | None:
        """The date a sitemap of the run gave the URL, or None (an earlier run's: never)."""
        ...

    async def last_checked(self, urls: Sequence[str]) -> dict[str, float]:
        """When each of ``urls`` the store fetched was last fetched or confirmed unchanged."""
        ...
