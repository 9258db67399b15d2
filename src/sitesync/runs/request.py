"""What a user asked to crawl, and the run it becomes: created, resumed or joined.

Apart from the crawl itself (:mod:`sitesync.runs.crawl`) so that the commands that only
create or check a run (``crawl --queue``, ``scan``) need none of the fetch stack.
"""

from __future__ import annotations

from dataclasses import dataclass

from sitesync.config import Settings
from sitesync.errors import CannotJoinRun, ConfigError, IllegalTransition, RunNotFound
from sitesync.frontier.frontier import normalize_seeds
from sitesync.frontier.scope import Scope
from sitesync.frontier.transitions import run_may_become
from sitesync.models import Run, RunConfig, RunStatus
from sitesync.plugins.loader import discover, plugin_configs
from sitesync.run_settings import snapshot, take_on
from sitesync.store.base import Store
from sitesync.urls import set_session_params


@dataclass(frozen=True, slots=True)
class CrawlRequest:
    """What the user asked for: a new run from seeds, or a run to resume."""

    seeds: tuple[str, ...] = ()
    resume_run_id: int | None = None
    allowed_domains: tuple[str, ...] = ()
    include: tuple[str, ...] = ()
    exclude: tuple[str, ...] = ()
    max_depth: int | None = None
    max_pages: int | None = None
    join_any: bool = False  # no run named: join the oldest running (or queued) run
    join: bool = False  # a worker joining: a run that already completed is not an error
    helper: bool = False  # a helper process of a crawl: joins the run as it is, never resumes it


#: Runs a process joins as they are, without moving them.
_JOINABLE = frozenset({RunStatus.RUNNING, RunStatus.PAUSED})


async def prepare_run(
    store: Store, request: CrawlRequest, settings: Settings
) -> tuple[Run, Settings]:
    """Create the run (status running) with its settings recorded, or find the run to join
    or resume and move it back to running; the run, with the settings this process crawls
    it with: the run's own (:func:`join_settings`), checked before the run is touched."""
    if request.join_any or request.resume_run_id is not None:
        if request.join_any:
            run = await pick_runnable(store)
        else:
            assert request.resume_run_id is not None
            run = await store.get_run(request.resume_run_id)
        joined = join_settings(settings, run)
        return await _resume(store, request, run), joined
    recorded = snapshot(settings, plugins=plugin_names(settings))
    run = await store.create_run(request_config(request, settings), settings=recorded)
    return await store.transition_run(run.id, RunStatus.RUNNING), take_on(settings, run)


async def _resume(store: Store, request: CrawlRequest, run: Run) -> Run:
    if request.join_any:
        if run.status is RunStatus.RUNNING:
            return run
        return await store.transition_run(run.id, RunStatus.RUNNING)
    if (
        run.status in _JOINABLE
        or request.helper
        or (request.join and run.status is RunStatus.COMPLETED)
    ):
        # A crash left it running: its dead worker's leases expire and are reclaimed.
        # A paused run stays paused whoever joins: crawl() waits for `sitesync resume`.
        return run
    if not run_may_become(run.status, RunStatus.RUNNING):
        raise IllegalTransition(f"run {run.id} is {run.status.value} and cannot be resumed")
    return await store.transition_run(run.id, RunStatus.RUNNING, reason="resumed")


def join_settings(settings: Settings, run: Run) -> Settings:
    """The settings this process works on ``run`` with: the run's own in place of the
    process's (:func:`sitesync.run_settings.take_on`), once it is checked that this process
    can honour them. ``CannotJoinRun`` otherwise, before anything of the run is touched."""
    joined = take_on(settings, run)
    if run.settings is None:
        return joined  # created before runs kept settings: as the process has it
    try:
        plugin_configs(joined, discover(joined.plugins, strict=True, log_skips=False).loaded)
    except ConfigError as exc:
        raise CannotJoinRun(
            f"run {run.id} uses plugins this process cannot load ({exc}): install them here, "
            "or leave the run to processes that have them"
        ) from None
    if joined.fetcher == "browser":
        from sitesync.fetch.browser import check_browser

        try:
            check_browser(joined.browser_executable)
        except ConfigError as exc:
            raise CannotJoinRun(f"run {run.id} is crawled with a browser: {exc}") from None
    return joined


def plugin_names(settings: Settings) -> list[str]:
    """The plugins ``settings`` select, as loaded here: what a new run records."""
    found = discover(settings.plugins, strict=settings.strict_plugins, log_skips=False)
    return [plugin.info.name for plugin in found.loaded]


def validate_request(request: CrawlRequest, settings: Settings) -> None:
    """Raise ``ConfigError`` (or ``InvalidURL``) for anything that would end a new run at
    once, before its row exists: its seeds and include/exclude patterns, and a browser
    fetcher that cannot start here. Plugins are checked by ``discover``; a run joined or
    resumed is checked with its own settings (:func:`join_settings`)."""
    if request.join_any or request.resume_run_id is not None:
        return
    config = request_config(request, settings)
    Scope.from_config(config, frozenset())
    if settings.fetcher == "browser":
        from sitesync.fetch.browser import check_browser

        check_browser(settings.browser_executable)


def request_config(request: CrawlRequest, settings: Settings) -> RunConfig:
    """The stored configuration of a new run (seeds normalized; bad ones named)."""
    set_session_params(settings.session_params)
    return RunConfig(
        seeds=tuple(normalize_seeds(request.seeds)),
        allowed_domains=request.allowed_domains,
        include=request.include,
        exclude=request.exclude,
        max_depth=request.max_depth,
        max_pages=request.max_pages,
        max_retries=settings.max_retries,
    )


async def pick_runnable(store: Store) -> Run:
    """The oldest running run, else the oldest queued one."""
    runs = await store.list_runs(limit=1000)
    for status in (RunStatus.RUNNING, RunStatus.QUEUED):
        candidates = [run for run in runs if run.status is status]
        if candidates:
            return min(candidates, key=lambda run: run.id)
    raise RunNotFound("no running or queued run to join: start one with 'sitesync crawl URL'")
