"""The stale lifecycle of a scanned domain (SPEC S2), decided alike by both stores.

When a scan's run ends, each root it crawled says whether its site answered; a domain whose
root did not is stale, and out of the active scan set after a second such scan in a row.
Plain Python, no database: ``tests/unit/test_store_rules.py`` checks it, and each backend's
``registry.py`` writes what it decides.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from sitesync.models import ScanSummary

#: Outcomes that mean the site did not answer at all (SPEC H2).
UNREACHABLE_OUTCOMES = frozenset({"unreachable", "timeout"})


def root_reachable(
    state: str, outcome: str | None, http_status: int | None, site_blocked: bool
) -> bool:
    """Whether a finished root task shows its site answering.

    A root that failed as ``unreachable`` or ``timeout``, or failed with no HTTP response at
    all (robots.txt unreachable until the retries ran out), did not answer. A robots.txt
    that answered and disallows the whole site (the run marked the host ``blocked``) is an
    answer, and so is any HTTP status, an error page included.
    """
    if state != "failed":
        return True
    if outcome in UNREACHABLE_OUTCOMES:
        return False
    return http_status is not None or site_blocked


def lifecycle_changes(
    run_id: int, rows: Iterable[Mapping[str, Any]], now: float
) -> tuple[ScanSummary, list[dict[str, Any]]]:
    """The stale lifecycle (SPEC S2) for the roots a scan finished: what it did, and the
    parameters of ``update_domain_lifecycle`` for each domain.

    Reachable: stale and streak reset. First unreachable scan: stale, streak 1, still
    active. Second consecutive (streak 2 or more): out of the active scan set.
    """
    seen: dict[str, tuple[bool, int, bool]] = {}  # host -> (active, streak, reachable)
    for row in rows:
        host = row["host"]
        reachable = root_reachable(
            row["state"], row["outcome"], row["http_status"], bool(row["site_blocked"])
        )
        if host in seen:  # several roots (seeds) on one host: any answer counts
            reachable = reachable or seen[host][2]
        seen[host] = (bool(row["active"]), int(row["unreachable_streak"]), reachable)
    ok: list[str] = []
    stale: list[str] = []
    deactivated: list[str] = []
    updates: list[dict[str, Any]] = []
    for host, (active, streak, reachable) in seen.items():
        if reachable:
            ok.append(host)
            streak, is_stale = 0, False
        else:
            streak, is_stale = streak + 1, True
            if streak == 1:
                stale.append(host)
            elif active:
                deactivated.append(host)
            active = active and streak < 2
        updates.append({"host": host, "active": active, "stale": is_stale, "streak": streak,
                        "run_id": run_id, "now": now})  # fmt: skip
    summary = ScanSummary(
        run_id=run_id,
        reachable=tuple(ok),
        newly_stale=tuple(stale),
        deactivated=tuple(deactivated),
    )
    return summary, updates
