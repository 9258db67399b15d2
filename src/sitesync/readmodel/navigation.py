"""The navigation sampler's records as read back: which sampled URLs failed later in the
run (issue 14). The sample is taken from the root page before the run fetched the URLs in
it, so failures are marked where the sample is read, by the read model, not by the plugin.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from sitesync.models import Task, TaskState

#: Outcomes of a sampled URL that still make it a usable navigational URL.
_USABLE = frozenset(
    {"success", "undecodable", "not_fetched", "not_modified", "unchanged_per_sitemap"}
)


def failure_of(task: Task | None) -> str | None:
    """How a sampled URL failed in the run, or None (usable, or not tried yet)."""
    if task is None or task.state not in (TaskState.COMPLETED, TaskState.FAILED):
        return None
    answered = task.http_status is None or task.http_status < 400
    if task.state is TaskState.COMPLETED and (task.outcome or "success") in _USABLE and answered:
        return None
    status = f" (HTTP {task.http_status})" if task.http_status else ""
    return f"{task.outcome or task.state.value}{status}"


def sampled_urls(data: Mapping[str, Any]) -> list[dict[str, Any]]:
    """A sample's entries as ``{url, found_in}`` (older records hold plain URL strings)."""
    return [
        {"url": entry} if isinstance(entry, str) else dict(entry) for entry in data.get("urls", [])
    ]


def mark_failed(data: Mapping[str, Any], failures: Mapping[str, str]) -> dict[str, Any]:
    """A sample with the URLs that failed in the run marked (``failed``: how), and its
    shortfall saying how many.

    The sample is taken from the root page, before the run fetched the URLs in it; the
    failures are known only later, so they are marked where the sample is read.
    """
    urls = []
    for entry in sampled_urls(data):
        failure = failures.get(entry["url"])
        urls.append(entry if failure is None else {**entry, "failed": failure})
    marked = {**data, "urls": urls}
    failed = sum("failed" in entry for entry in urls)
    if failed:
        note = (
            f"{failed} of the {len(urls)} sampled URLs failed in this run "
            f"({len(urls) - failed} usable)"
        )
        shortfall = data.get("shortfall")
        marked["shortfall"] = f"{shortfall}; {note}" if shortfall else note
    return marked
