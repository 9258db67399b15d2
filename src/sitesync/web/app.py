"""The dashboard's ASGI app: JSON API, pages, static files and ``/metrics``."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from importlib import resources
from pathlib import Path

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.staticfiles import StaticFiles
from starlette.exceptions import HTTPException
from starlette.responses import JSONResponse

from sitesync.config import Settings
from sitesync.errors import IllegalTransition, RunNotFound
from sitesync.store import open_store
from sitesync.store.base import Store
from sitesync.web.auth import Guard, check_token
from sitesync.web.routes import api, pages
from sitesync.web.state import Dashboard

STATIC = Path(str(resources.files("sitesync.web").joinpath("static")))


def create_app(settings: Settings, *, store: Store | None = None) -> FastAPI:
    """The app. Without ``store`` it opens ``settings.db`` on start-up and closes it on
    shutdown; with one (tests) the caller owns it and samples with ``dashboard.sampler``."""
    check_token(settings)

    @contextlib.asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        opened = None
        if store is None:
            opened = await open_store(settings.db, migrate=False)  # the dashboard only reads
            app.state.dashboard = Dashboard.build(settings, opened)
        try:
            async with app.state.dashboard.sampler.running():
                yield
        finally:
            if opened is not None:
                await opened.close()

    app = FastAPI(
        title="sitesync dashboard API",
        summary="Runs, progress, pending work, per-host stats, errors and redirects of sitesync.",
        version="1",
        lifespan=lifespan,
        openapi_url="/api/openapi.json",
        docs_url=None,  # Swagger UI and ReDoc load from a CDN; the JSON description is enough
        redoc_url=None,
    )
    if store is not None:
        app.state.dashboard = Dashboard.build(settings, store)
    token = settings.dashboard_token
    app.middleware("http")(Guard(token.get_secret_value() if token else None))
    _add_error_handlers(app)
    app.include_router(api.router)
    app.include_router(pages.router)
    app.mount("/static", StaticFiles(directory=STATIC), name="static")
    return app


def _add_error_handlers(app: FastAPI) -> None:
    """Every error is ``{"error": "..."}`` with the right status, never a stack trace."""

    async def not_found(request: Request, exc: Exception) -> JSONResponse:
        return JSONResponse({"error": str(exc)}, status_code=404)

    async def conflict(request: Request, exc: Exception) -> JSONResponse:
        return JSONResponse({"error": str(exc)}, status_code=409)

    async def invalid(request: Request, exc: Exception) -> JSONResponse:
        assert isinstance(exc, RequestValidationError)
        where = "; ".join(
            f"{'.'.join(str(part) for part in error['loc'])}: {error['msg']}"
            for error in exc.errors()
        )
        return JSONResponse({"error": f"invalid request: {where}"}, status_code=422)

    async def http_error(request: Request, exc: Exception) -> JSONResponse:
        assert isinstance(exc, HTTPException)
        return JSONResponse(
            {"error": str(exc.detail)}, status_code=exc.status_code, headers=exc.headers
        )

    app.add_exception_handler(RunNotFound, not_found)
    app.add_exception_handler(IllegalTransition, conflict)
    app.add_exception_handler(RequestValidationError, invalid)
    app.add_exception_handler(HTTPException, http_error)
