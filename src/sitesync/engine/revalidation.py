"""Conditional requests (issue 30): what a page's request carries from the store's last
fetch of its URL, what a 304 is worth, and what a success leaves for the next scan.

A 304 stands for the body the store last saw only when the request carried validators and
the store still has that body's links and records; otherwise the page is fetched again in
full, with the reason on the attempt. Validators a server gets wrong never cost a page:
a future ``Last-Modified`` is not sent, and a server that ignores them answers 200, which
is handled as any 200 (the same content is a sighting).
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace

from sitesync.fetch.base import FetchResult
from sitesync.fetch.httpdate import http_timestamp
from sitesync.models import (
    EarlierFetch,
    FetchOutcome,
    LastFetch,
    Lease,
    NewTask,
    Revisit,
    TaskReport,
    Validators,
)
from sitesync.store.base import Store

#: Prefetched last fetches kept at most (each taken when its page is asked for).
PREFETCHED_AT_MOST = 100_000

NO_VALIDATORS = "304 Not Modified to a request without validators"
GONE = "304 Not Modified, but the store no longer has the earlier fetch's links or records"


@dataclass(frozen=True, slots=True)
class Asked:
    """The validators a request carries (None: an unconditional request), and why fewer
    than the store kept, if so."""

    validators: Validators | None = None
    note: str | None = None
    earlier: EarlierFetch | None = None  # what a 304 would stand for (None: nothing)


@dataclass(frozen=True, slots=True)
class Revalidated:
    """What the conditional side of a page's fetch came to."""

    earlier: EarlierFetch | None = None  # a 304 the store stands for: the page is unchanged
    note: str | None = None  # why it was not revalidated, or was fetched again in full


class Revalidation:
    """Off (``conditional_requests = false``): nothing is read or kept, no request is
    conditional, and a 304 is still never taken for a page."""

    def __init__(self, store: Store, *, enabled: bool) -> None:
        self.store = store
        self.enabled = enabled
        # What the store kept of the leased URLs, read once per batch of leases (one store
        # round trip cost as much as the rest of a page's bookkeeping); taken by ``ask``.
        self._read: dict[str, LastFetch | None] = {}

    async def prefetch(self, leases: Sequence[Lease]) -> None:
        """Read the last fetches of a batch of leased pages at once, for their ``ask``."""
        if not self.enabled or not leases:
            return
        if len(self._read) > PREFETCHED_AT_MOST:  # leases let go unfetched left theirs
            self._read.clear()
        urls = [lease.url for lease in leases]
        found = await self.store.last_fetches(urls)
        self._read.update((url, found.get(url)) for url in urls)

    async def ask(self, url: str) -> Asked:
        if not self.enabled:
            return Asked()
        if url in self._read:  # no other worker fetches a URL this worker holds the lease of
            last = self._read.pop(url)
        else:  # a redirect's target, or a lease acquired without a prefetch
            last = await self.store.last_fetch(url)
        if last is None:
            return Asked()
        asked = sendable(last.validators, self.store.now())
        return replace(asked, earlier=last.earlier)

    @staticmethod
    def after_304(asked: Asked) -> EarlierFetch | str:
        """What a 304 to ``asked`` stands for, or why the page must be fetched in full."""
        if not asked.validators:
            return NO_VALIDATORS
        return GONE if asked.earlier is None else asked.earlier

    def full_fetch(self, result: FetchResult, links: Sequence[str]) -> Revisit | None:
        """What a successful 2xx leaves for the next scan (None when nothing is kept)."""
        if not self.enabled or result.outcome is not FetchOutcome.SUCCESS:
            return None
        if not 200 <= result.status < 300:
            return None
        return Revisit(
            url=result.final_url or result.url,
            validators=validators_of(result.headers),
            content_hash=hashlib.sha256(result.body).hexdigest(),
            body_bytes=len(result.body),
            links=tuple(links),
        )


def sendable(kept: Validators, now: float) -> Asked:
    """The kept validators a request may carry: a ``Last-Modified`` in the future (or that
    is no HTTP-date) would make the server compare with a time that never was."""
    modified = kept.last_modified
    note = None
    if modified is not None:
        when = http_timestamp(modified)
        if when is None or when > now:
            why = "not an HTTP-date" if when is None else "in the future"
            note = f"If-Modified-Since not sent: the kept Last-Modified ({modified}) is {why}"
            modified = None
    sent = Validators(kept.etag, modified)
    return Asked(sent if sent else None, note)


def validators_of(headers: Mapping[str, str]) -> Validators:
    return Validators(headers.get("etag") or None, headers.get("last-modified") or None)


def unchanged_report(
    lease: Lease,
    result: FetchResult,
    earlier: EarlierFetch,
    discovered: Sequence[NewTask],
    note: str | None,
) -> TaskReport:
    """A 304 the store stands for: a success with no body, whose records are seen again
    and whose links (``discovered``, scoped from the earlier fetch's) are admitted again."""
    final = result.final_url or lease.url
    revisit = Revisit(url=final, validators=validators_of(result.headers),
                      resighted=earlier.records)  # fmt: skip
    return TaskReport(
        lease=lease,
        ok=True,
        http_status=result.status,
        outcome=FetchOutcome.NOT_MODIFIED,
        final_url=final if final != lease.url else None,
        redirects=tuple((h.from_url, h.to_url, h.status) for h in result.redirects),
        discovered=tuple(discovered),
        revisit=revisit,
        error=note,
    )
