"""The dashboard page. It is a shell: its script fills it from the JSON API every 2 s."""

from __future__ import annotations

from importlib import resources
from pathlib import Path

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse
from fastapi.templating import Jinja2Templates

from sitesync.redact import redact
from sitesync.web.state import dashboard_of

router = APIRouter()
templates = Jinja2Templates(
    directory=Path(str(resources.files("sitesync.web").joinpath("templates")))
)


@router.get("/", response_class=HTMLResponse, include_in_schema=False)
async def dashboard_page(request: Request) -> HTMLResponse:
    settings = dashboard_of(request).settings
    return templates.TemplateResponse(
        request,
        "dashboard.html",
        {"db": redact(settings.db), "refresh_ms": 2000},
    )
