"""Pages that disappear (issue 30): what both backends decide alike when a scan ends.

A page is gone when the previous scan saw it and this one did not, because it now answers
404 or 410, or (a completed scan only) because nothing in the site links to it any more.
It gets a tombstone: a record version with the content hash ``GONE_HASH``
(models/records.py), written by the scan that found it, so the record's history says when
it went away. A page that comes back gets a new version (its content hash is not the
tombstone's), like any change.

"The previous scan" of a run is the latest earlier *completed* run of the same scope (a
registry scan), or, for a plain crawl, with the same seeds and the same limits (allowed
domains, include/exclude, depth, page cap): only such a run reaches the same pages.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from sitesync.models import Run, RunStatus

GONE_STATUSES = (404, 410)
#: Outcomes after which a page's links were all followed (a 304 and a sitemap skip re-admit
#: the kept ones); a host whose every task ended so in a completed scan has had every page
#: it still links to reached, so a page not reached there is no longer linked.
_FOLLOWED = frozenset({"success", "not_modified", "unchanged_per_sitemap", "redirect_not_followed"})


@dataclass(frozen=True, slots=True)
class Tombstone:
    """One page marked gone: the record's next version, written by ``run_id``."""

    record_id: int
    url: str
    version: int
    reason: str  # "http_404", "http_410" or "unreached"
    host: str
    previous_run_id: int

    def params(self, run_id: int, now: float) -> dict[str, Any]:
        """The parameters of ``mark_record_gone``, ``insert_tombstone``, ``delete_last_fetch``."""
        data = {"gone": True, "reason": self.reason, "host": self.host,
                "previous_run_id": self.previous_run_id}  # fmt: skip
        note = f"gone: {self.reason.replace('_', ' ')}"
        return {"record_id": self.record_id, "url": self.url, "version": self.version,
                "run_id": run_id, "now": now, "note": note, "data": json.dumps(data)}  # fmt: skip


def same_scan(run: Run, earlier: Run) -> bool:
    """Whether ``earlier`` crawled what ``run`` crawls (see the module's docstring)."""
    if run.scope is not None or earlier.scope is not None:
        return run.scope == earlier.scope
    a, b = run.config, earlier.config
    return (a.seeds, a.allowed_domains, a.include, a.exclude, a.max_depth, a.max_pages) == (
        b.seeds, b.allowed_domains, b.include, b.exclude, b.max_depth, b.max_pages
    )  # fmt: skip


def previous_scan(run: Run, earlier: Iterable[Run]) -> Run | None:
    """The latest of ``earlier`` (completed runs, newest first) that is ``run``'s previous scan."""
    return next((e for e in earlier if e.id < run.id and same_scan(run, e)), None)


def judges_unreached(run: Run) -> bool:
    """Only a completed run without a page cap reached every page still linked."""
    return run.status is RunStatus.COMPLETED and run.config.max_pages is None


def followed_hosts(rows: Iterable[Mapping[str, Any]]) -> set[str]:
    """Hosts of the run whose every task ended with its links followed (``select_task_ends``
    rows: host, outcome, http_status, tasks): on any other host an error may have hidden
    pages that still exist."""
    troubled: set[str] = set()
    hosts: set[str] = set()
    for row in rows:
        hosts.add(row["host"])
        followed = row["outcome"] in _FOLLOWED or row["http_status"] in GONE_STATUSES
        if not followed:
            troubled.add(row["host"])
    return hosts - troubled


def tombstones(
    run: Run, previous_run_id: int, candidates: Sequence[Mapping[str, Any]], followed: set[str]
) -> list[Tombstone]:
    """The pages of ``candidates`` (``select_gone_candidates`` rows: page records the
    previous scan saw and ``run`` did not) that are gone, and why."""
    unreached_judged = judges_unreached(run)
    gone = []
    for row in candidates:
        host = row["host"] or (urlsplit(row["url"]).hostname or "")
        status = row["http_status"]
        if status in GONE_STATUSES:
            reason = f"http_{status}"
        elif row["task_id"] is None and unreached_judged and host in followed:
            reason = "unreached"
        else:
            continue
        gone.append(Tombstone(row["record_id"], row["url"], row["latest_version"] + 1,
                              reason, host, previous_run_id))  # fmt: skip
    return gone
