"""A scan's change report (issue 30): per domain, what its pages did since an earlier scan,
and what the scan downloaded against what fetching every page in full would have cost."""

from __future__ import annotations

from dataclasses import dataclass, fields


@dataclass(frozen=True, slots=True)
class HostChanges:
    """One host's pages in a scan, against the earlier scan (``ChangeReport.since_run_id``).

    Every page the scan saw is exactly one of new, changed or unchanged (by how it was
    known unchanged: a 304, the same content in a 200, or a sitemap date); pages the earlier
    scan saw and this one did not are ``gone`` (a tombstone written since) or
    ``not_reached`` (not judged gone: an error, a page cap, a stopped scan).
    """

    host: str
    new: int = 0
    changed: int = 0
    unchanged_not_modified: int = 0  # a 304 Not Modified
    unchanged_same_content: int = 0  # fetched in full, the same bytes
    unchanged_per_sitemap: int = 0  # skipped: the sitemap's <lastmod> predates the last fetch
    gone: int = 0
    not_reached: int = 0
    requests: int = 0  # attempts at the host's tasks (each one request, redirects aside)
    bytes_downloaded: int = 0  # bodies the scan downloaded
    bytes_full_fetch: int = 0  # the same, plus the bodies the 304s and skips stood for

    @property
    def unchanged(self) -> int:
        return (
            self.unchanged_not_modified + self.unchanged_same_content + self.unchanged_per_sitemap
        )

    @property
    def pages(self) -> int:
        """Pages the scan saw."""
        return self.new + self.changed + self.unchanged


COUNTS = tuple(f.name for f in fields(HostChanges) if f.name != "host")


@dataclass(frozen=True, slots=True)
class ChangeReport:
    """``sitesync changes RUN``: ``since_run_id`` None when the run had no earlier scan
    (every page it saw is new)."""

    run_id: int
    since_run_id: int | None
    hosts: tuple[HostChanges, ...]  # by host name
    total: HostChanges  # the sums (host "*")


def summed(hosts: tuple[HostChanges, ...]) -> HostChanges:
    return HostChanges("*", **{name: sum(getattr(h, name) for h in hosts) for name in COUNTS})
