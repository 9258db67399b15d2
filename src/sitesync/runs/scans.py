"""Scans of registered scopes: starting one, and starting the due ones on their schedules.

A scan is a run of a scope's active domains (``sitesync domains import``). The store keeps
at most one active run per scope and refuses a second start with ``ScanConflict``. When a
scan completes, its stale lifecycle is applied to the scope's domains exactly once
(``RegistryStore.apply_scan_results``) by :func:`finish_completed_scans`: the worker that
completed it calls it, and so does whoever sees the run next (any worker, the supervisor's
watchdog round, the start of the scope's next scan) in case that worker died first.

Cadences are checked and stepped in :mod:`sitesync.cadence`.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from sitesync.cadence import check_cadence, next_run_after
from sitesync.errors import ConfigError, ScanConflict
from sitesync.frontier.frontier import normalize_seeds
from sitesync.models import Run, RunConfig, ScanSummary
from sitesync.run_settings import apply_recorded, snapshot
from sitesync.runs.request import plugin_names

if TYPE_CHECKING:
    from sitesync.config import Settings
    from sitesync.store.base import Store

log = logging.getLogger(__name__)


async def scan_config(store: Store, scope: str, settings: Settings) -> RunConfig:
    """What a scan of ``scope`` crawls: the root of each active domain.

    Registered domains are bare hosts; ``scan_scheme`` gives the seeds their scheme, and
    redirects from there (to https, to ``www.``) join the run's scope as they happen.
    """
    domains = await store.list_domains(scope=scope, active=True)
    if not domains:
        raise ConfigError(
            f"scope {scope!r} has no active domains: register some with "
            f"'sitesync domains import FILE --scope {scope}'"
        )
    seeds = normalize_seeds(f"{settings.scan_scheme}://{domain.host}/" for domain in domains)
    return RunConfig(
        seeds=tuple(seeds), max_depth=settings.scan_max_depth, max_retries=settings.max_retries
    )


async def start_scan(
    store: Store, scope: str, settings: Settings, *, recorded: Mapping[str, Any] | None = None
) -> Run:
    """Create the queued run of a scan of ``scope``, with ``recorded`` as its settings (a
    schedule's), or those of ``settings``; raises ``ScanConflict`` if the scope already has
    an active run (nothing is created then).

    A previous scan left unfinished is finished first, so lifecycles apply in scan order.
    """
    await finish_completed_scans(store)
    if recorded is not None:  # the schedule's: what this scan crawls, and how
        settings = apply_recorded(settings, recorded, context=f"the schedule of {scope!r}")
    else:
        recorded = snapshot(settings, plugins=plugin_names(settings))
    config = await scan_config(store, scope, settings)
    recorded = with_domain_profiles(recorded, await store.domain_profiles(scope))
    return await store.start_scan(scope, config, settings=recorded)


def with_domain_profiles(
    recorded: Mapping[str, Any], profiles: Mapping[str, Mapping[str, Any]]
) -> dict[str, Any]:
    """A scan's settings with its domains' own request profiles (``domains import``) in its
    ``sites``, so that every process of the run sends them. A domain's profile is more
    specific than a ``[sites."HOST"]`` table of sitesync.toml for the same host, so it is
    laid over it: headers and cookies merged name by name, its auth and proxy replacing."""
    if not profiles:
        return dict(recorded)
    sites = dict(recorded.get("sites") or {})
    for host, profile in profiles.items():
        site = dict(sites.get(host) or {})
        for key in ("headers", "cookies"):
            if profile.get(key):
                site[key] = {**(site.get(key) or {}), **profile[key]}
        site.update({key: profile[key] for key in ("auth", "proxy") if profile.get(key)})
        sites[host] = site
    return {**recorded, "sites": sites}


async def finish_completed_scans(store: Store) -> list[ScanSummary]:
    """Apply the stale lifecycle of every completed scan that lacks it; the summaries of
    those applied by this call. Safe to call from anywhere at any time: the store applies
    each scan once, whoever asks first."""
    applied = []
    for run_id in await store.list_unapplied_scans():
        summary = await store.apply_scan_results(run_id)
        if summary is None:  # someone else was first
            continue
        applied.append(summary)
        log.info("scan run %d: %d reachable, %d newly stale, %d deactivated", run_id,
                 len(summary.reachable), len(summary.newly_stale),
                 len(summary.deactivated))  # fmt: skip
    return applied


async def schedule_scan(
    store: Store,
    scope: str,
    cadence: str,
    *,
    now: float | None = None,
    settings: Mapping[str, Any] | None = None,
) -> float:
    """Scan ``scope`` on ``cadence`` from now on (replacing its schedule), each scan with
    ``settings`` (a snapshot: :func:`sitesync.run_settings.snapshot`); the first time due."""
    cadence = check_cadence(cadence)
    next_run_at = next_run_after(cadence, store.now() if now is None else now)
    await store.set_schedule(scope, cadence=cadence, next_run_at=next_run_at, settings=settings)
    return next_run_at


async def start_due_scans(
    store: Store, settings: Settings, *, now: float | None = None
) -> list[Run]:
    """Start a scan of every scope whose schedule is due; returns the runs created.

    Each due schedule then moves to its next time after ``now``, started or not: a scope
    still busy with a scan (``ScanConflict``) or with no active domains is logged and
    skipped until then, so a slow scan is never followed by a second one at once. The
    supervisor calls this on every loop; two supervisors calling it together start one
    scan per scope (the store's conflict check), never two at once.
    """
    now = store.now() if now is None else now  # the fleet's clock: the store's
    started: list[Run] = []
    for schedule in await store.list_schedules():
        if schedule.next_run_at > now:
            continue
        try:
            next_run_at = next_run_after(schedule.cadence, now)
        except ConfigError as exc:  # written around the CLI's check (e.g. by hand in SQL)
            log.error("schedule of scope %r: %s", schedule.scope, exc)
            continue
        run_id = None
        try:
            run = await start_scan(store, schedule.scope, settings, recorded=schedule.settings)
        except ScanConflict as exc:
            log.warning("scheduled scan of scope %r skipped: it is busy with run %d",
                        schedule.scope, exc.run_id)  # fmt: skip
        except ConfigError as exc:
            log.warning("scheduled scan of scope %r skipped: %s", schedule.scope, exc)
        else:
            log.info("scheduled scan of scope %r: run %d queued", schedule.scope, run.id)
            started.append(run)
            run_id = run.id
        await store.advance_schedule(schedule.scope, next_run_at=next_run_at, last_run_id=run_id)
    return started
