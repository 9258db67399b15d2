"""The JSON API (``/api/...``) and ``/metrics``. Each route asks the read model for one value."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Depends, HTTPException, Path, Query, Request
from fastapi.responses import Response

from sitesync.errors import InvalidURL
from sitesync.models import ChangeReport
from sitesync.readmodel.overview import Action, Overview
from sitesync.readmodel.schema import (
    ApiError,
    RedirectChain,
    RunDetail,
    RunErrors,
    RunNavigation,
    RunSummary,
    StatusOverview,
)
from sitesync.readmodel.why import explain_url
from sitesync.web.metrics import CONTENT_TYPE, gather_run_metrics, render
from sitesync.web.state import dashboard_of

router = APIRouter()

_NOT_FOUND: dict[int | str, dict[str, Any]] = {
    404: {"model": ApiError, "description": "No run has that id."}
}
_CONFLICT: dict[int | str, dict[str, Any]] = {
    409: {"model": ApiError, "description": "The run's status forbids that transition."}
}

RunId = Annotated[int, Path(ge=1, description="The run's id.")]
Limit = Annotated[int, Query(ge=1, le=10_000, description="At most this many rows.")]


def _overview(request: Request) -> Overview:
    return dashboard_of(request).overview


OverviewDep = Annotated[Overview, Depends(_overview)]


@router.get("/api/status", tags=["runs"])
async def get_status(overview: OverviewDep) -> StatusOverview:
    """Active runs with their idle reasons, and the work left across them (from counters)."""
    return await overview.status()


@router.get("/api/runs", tags=["runs"])
async def list_runs(overview: OverviewDep, limit: Limit = 50) -> list[RunSummary]:
    """Newest runs first."""
    return await overview.runs(limit=limit)


@router.get("/api/runs/{run_id}", tags=["runs"], responses=_NOT_FOUND)
async def get_run(overview: OverviewDep, run_id: RunId) -> RunDetail:
    """One run: counters, status and reason, hosts, workers, claims, outcomes, samples."""
    return await overview.detail(run_id)


@router.get("/api/runs/{run_id}/errors", tags=["runs"], responses=_NOT_FOUND)
async def get_errors(overview: OverviewDep, run_id: RunId, limit: Limit = 1000) -> RunErrors:
    """Failed tasks grouped by outcome, with the most recent of each group."""
    return await overview.errors(run_id, limit=limit)


@router.get("/api/runs/{run_id}/redirects", tags=["runs"], responses=_NOT_FOUND)
async def get_redirects(
    overview: OverviewDep, run_id: RunId, limit: Limit = 100
) -> list[RedirectChain]:
    """Tasks whose fetch followed redirects, with every hop."""
    return await overview.redirects(run_id, limit=limit)


@router.get("/api/runs/{run_id}/navigation", tags=["runs"], responses=_NOT_FOUND)
async def get_navigation(overview: OverviewDep, run_id: RunId) -> RunNavigation:
    """The navigation sampler's records of the run: per site, up to 10 navigational URLs."""
    return await overview.navigation(run_id)


@router.get("/api/runs/{run_id}/changes", tags=["runs"], responses=_NOT_FOUND)
async def get_changes(
    overview: OverviewDep,
    run_id: RunId,
    since: Annotated[
        int | None, Query(ge=1, description="The earlier run (default: the previous scan).")
    ] = None,
) -> ChangeReport:
    """Per host: pages new, changed, unchanged (304, same content, sitemap date), gone,
    and bytes downloaded against a full fetch (``sitesync changes RUN --json``'s data)."""
    return await overview.changes(run_id, since)


@router.get("/api/runs/{run_id}/why", tags=["runs"], responses=_NOT_FOUND)
async def get_why(
    request: Request,
    run_id: RunId,
    url: Annotated[str, Query(min_length=1, description="The URL, normalized or not.")],
) -> dict[str, Any]:
    """A URL's whole story in the run, as ``sitesync why URL --run ID --json`` tells it."""
    dashboard = dashboard_of(request)
    try:
        return await explain_url(
            dashboard.store,
            url,
            run_id=run_id,
            user_agent=dashboard.settings.user_agent,
            robots_recheck_seconds=dashboard.settings.robots_recheck_seconds,
        )
    except InvalidURL as exc:
        raise HTTPException(status_code=400, detail=str(exc)) from exc


@router.post(
    "/api/runs/{run_id}/{action}", tags=["lifecycle"], responses={**_NOT_FOUND, **_CONFLICT}
)
async def act_on_run(overview: OverviewDep, run_id: RunId, action: Action) -> RunSummary:
    """pause → paused, resume → running (a stopped or failed run: queued, for a supervisor
    or ``sitesync worker``), stop → stopped, cancel → cancelled.

    Workers see the new status within ``status_poll_seconds`` (0.5 s)."""
    return await overview.act(run_id, action)


@router.get("/metrics", tags=["metrics"], response_class=Response)
async def metrics(request: Request) -> Response:
    """Prometheus text exposition, derived from the store at scrape time."""
    dashboard = dashboard_of(request)
    runs = await gather_run_metrics(
        dashboard.store,
        dashboard.samples,
        worker_ttl=dashboard.settings.claim_seconds,
        now=dashboard.overview.options.clock(),
    )
    return Response(render(runs, dashboard.latency), media_type=CONTENT_TYPE)
