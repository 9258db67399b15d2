"""A URL's whole story in one run (``sitesync why``, ``/api/runs/{id}/why``).

Everything comes from the store: the run's own rules (its stored config), the robots.txt
its workers kept per host, the task with where it was found, its attempt history and the
records its page produced. A URL that was never admitted is evaluated against the run's
rules, and the run's ``links`` records say whether (and where) any page linked to it.
"""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

from sitesync.errors import RunNotFound
from sitesync.fetch.robots import REFUSED, explain_robots
from sitesync.frontier.frontier import Frontier
from sitesync.models import Run, Task
from sitesync.store.base import Store
from sitesync.urls import normalize_url, url_host

#: Runs looked through, newest first, for one holding the URL when no run is named.
RUNS_SEARCHED = 50

#: How long a robots.txt answer is kept (fetch/robots.py): its expiry minus this is when it
#: was fetched. 2xx and 4xx answers are kept a day; 5xx and no answer, robots_recheck_seconds.
ROBOTS_TTL = 24 * 3600.0


async def explain_url(
    store: Store,
    url: str,
    *,
    run_id: int | None = None,
    user_agent: str = "sitesync",
    robots_recheck_seconds: float = 300.0,
) -> dict[str, Any]:
    """The story of ``url`` (as given) in run ``run_id``, or the newest run that has it.

    Raises ``InvalidURL`` for a URL that cannot be crawled, ``RunNotFound`` for an unknown
    run or a store without runs.
    """
    normalized = normalize_url(url.strip())
    run, task = await _run_and_task(store, normalized, run_id)
    host = url_host(normalized)
    frontier = Frontier(store, run)
    story: dict[str, Any] = {
        "url": url,
        "normalized": normalized,
        "run_id": run.id,
        "run_status": run.status.value,
        "admitted": task is not None,
    }
    linked_from = [] if task is not None else await store.pages_linking_to(run.id, normalized)
    depth = await _depth(store, run, normalized, task, linked_from)
    in_scope, rule = frontier.scope.explain(normalized, host, depth)
    story["scope"] = {"in_scope": in_scope, "rule": rule}
    story["robots"] = await _robots(store, normalized, host, user_agent, robots_recheck_seconds)
    if task is None:
        story["found"] = {"linked_from": linked_from, "depth": depth}
        story["verdict"] = _never_admitted(run, in_scope, rule, linked_from, story["robots"])
        story["attempts"] = []
        story["records"] = []
        return story
    story["found"] = _found(task, frontier.seeds)
    story["task"] = _task(task)
    story["attempts"] = [
        {**asdict(a), "duration": a.duration} for a in await store.list_attempts(task.id)
    ]
    story["records"] = await _records(store, run.id, task.id)
    story["verdict"] = _final(task)
    return story


async def _run_and_task(store: Store, url: str, run_id: int | None) -> tuple[Run, Task | None]:
    if run_id is not None:
        run = await store.get_run(run_id)
        return run, await store.get_task(run.id, url)
    runs = await store.list_runs(limit=RUNS_SEARCHED)
    if not runs:
        raise RunNotFound("no run in this store yet: crawl first (sitesync crawl URL)")
    for run in runs:
        task = await store.get_task(run.id, url)
        if task is not None:
            return run, task
    return runs[0], None


async def _depth(
    store: Store, run: Run, url: str, task: Task | None, linked_from: list[str]
) -> int | None:
    """The URL's depth: its task's, or one more than the shallowest page linking to it."""
    if task is not None:
        return task.depth
    depths = []
    for page in linked_from:
        linking = await store.get_task(run.id, page)
        if linking is not None:
            depths.append(linking.depth + 1)
    return min(depths) if depths else None


async def _robots(
    store: Store, url: str, host: str, user_agent: str, recheck: float
) -> dict[str, Any]:
    state = await store.get_host_state(host)
    if state is None or state.robots_status is None:
        return {"verdict": "unknown", "detail": "no robots.txt of this host was fetched"}
    status = state.robots_status
    expires = state.robots_expires_at
    ttl = recheck if status == 0 or status >= 500 else ROBOTS_TTL
    answer: dict[str, Any] = {
        "robots_url": f"{state.robots_origin}/robots.txt",
        "status": status,
        "fetched_at": None if expires is None else expires - ttl,
        "expires_at": expires,
    }
    if status == REFUSED:
        return {
            **answer,
            "fetched_at": None,  # never sent: nothing was fetched
            "verdict": "allowed",
            "detail": "robots.txt was never sent: the network policy refused its address "
            "(no rules; every request to the host is refused the same way)",
        }
    if status == 0 or status >= 500:
        return {
            **answer,
            "verdict": "disallowed",
            "detail": "robots.txt unreachable: all disallowed",
        }
    if not 200 <= status < 300 or state.robots_body is None:
        return {**answer, "verdict": "allowed", "detail": f"robots.txt answered {status}: no rules"}
    rule = explain_robots(state.robots_body, url, user_agent)
    return {
        **answer,
        "verdict": "allowed" if rule.allowed else "disallowed",
        "group": None if rule.group is None else f"User-agent: {rule.group}",
        "rule": rule.rule,
        "detail": "no group applies" if rule.group is None else "",
    }


def _found(task: Task, seeds: tuple[str, ...]) -> dict[str, Any]:
    if task.found_from is not None:
        how = "linked"
    elif task.url in seeds or task.depth == 0:
        how = "seed"
    else:
        how = "sitemap"  # admitted without a page: listed in a seed host's sitemap
    return {"how": how, "linked_from": task.found_on, "depth": task.depth}


def _task(task: Task) -> dict[str, Any]:
    return {
        "id": task.id,
        "state": task.state.value,
        "outcome": task.outcome,
        "http_status": task.http_status,
        "last_error": task.last_error,
        "attempt_count": task.attempt_count,
        "final_url": task.final_url,
        "redirects": [list(hop) for hop in task.redirects],
    }


async def _records(store: Store, run_id: int, task_id: int) -> list[dict[str, Any]]:
    records = []
    for seen in await store.records_of_task(run_id, task_id):
        history = await store.record_history(seen.key)
        records.append(
            {
                "key": seen.key,
                "kind": seen.kind,
                "version_seen": seen.version,
                "versions": [
                    {
                        "version": v.version,
                        "run_id": v.run_id,
                        "created_at": v.created_at,
                        "content_hash": v.content_hash,
                    }
                    for v in history
                ],
            }
        )
    return records


def _final(task: Task) -> str:
    state = task.state.value
    if task.outcome:
        return f"{state}: {task.outcome}" + (
            f" (HTTP {task.http_status})" if task.http_status else ""
        )
    return state


def _never_admitted(
    run: Run, in_scope: bool, rule: str, linked_from: list[str], robots: dict[str, Any]
) -> str:
    """Why a URL never became a task of the run, the first reason that applies."""
    if not in_scope:
        where = f" (linked from {linked_from[0]})" if linked_from else ""
        return f"never admitted: {rule}{where}"
    max_pages = run.config.max_pages
    if linked_from and max_pages is not None and run.counters.tasks_total >= max_pages:
        return (
            f"never admitted: over max_pages (the run admitted its {max_pages} tasks "
            f"before this link, found on {linked_from[0]})"
        )
    if robots.get("verdict") == "disallowed":
        reason = robots.get("rule") or robots.get("detail")
        return f"never admitted, and robots.txt disallows it ({reason})"
    if not linked_from:
        return "never admitted: never linked (no page of the run links to it, and it is no seed)"
    guess = "beyond max_links_per_page?"
    if max_pages is not None:  # budget held by admissions in flight (store/postgres/budget.py)
        guess = "beyond max_links_per_page, or turned away near max_pages?"
    return f"never admitted, though linked from {linked_from[0]} ({guess})"
