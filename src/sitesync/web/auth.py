"""Who may use the dashboard: loopback only without a token, the token holder with one.

- Without ``dashboard_token`` the server only binds to loopback (:func:`check_exposure`),
  and it answers only requests whose ``Host`` is a loopback name: a web page elsewhere
  cannot reach it through DNS rebinding.
- With a token, every request (pages, API, ``/metrics``, static files) needs it:
  ``Authorization: Bearer TOKEN``, or ``?token=TOKEN`` once, which sets an HttpOnly,
  SameSite=Strict cookie for the pages that follow.
- Either way, a POST whose ``Origin`` is another site is refused: the buttons change runs,
  and a form on another page must not be able to press them.
"""

from __future__ import annotations

import hmac
import ipaddress
from collections.abc import Awaitable, Callable
from urllib.parse import urlsplit

from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, Response

from sitesync.config import Settings
from sitesync.errors import ConfigError

COOKIE = "sitesync_dashboard_token"
_LOOPBACK_NAMES = {"localhost", "localhost.localdomain"}

CallNext = Callable[[Request], Awaitable[Response]]


def is_loopback(host: str) -> bool:
    host = host.strip("[]")
    if host.lower() in _LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False  # a name other than localhost: whatever it resolves to, it is not ours


def check_exposure(settings: Settings) -> None:
    """Refuse to listen beyond loopback without a token (one line, naming the settings)."""
    if settings.dashboard_token is None and not is_loopback(settings.dashboard_host):
        raise ConfigError(
            f"dashboard_host {settings.dashboard_host} is not a loopback address: set "
            "dashboard_token (--token / SITESYNC_DASHBOARD_TOKEN) to expose the dashboard"
        )


class Guard:
    """The access check, as an HTTP middleware of the app."""

    def __init__(self, token: str | None) -> None:
        self._token = token

    async def __call__(self, request: Request, call_next: CallNext) -> Response:
        if request.method == "POST" and not _same_origin(request):
            return _deny(request, 403, "cross-site request refused")
        if self._token is None:
            if not is_loopback(request.url.hostname or ""):
                return _deny(request, 403, "this dashboard answers on loopback names only")
            return await call_next(request)
        from_query = request.query_params.get("token")
        given = _bearer(request) or from_query or request.cookies.get(COOKIE)
        if not given or not hmac.compare_digest(given.encode(), self._token.encode()):
            return _deny(request, 401, "a valid dashboard token is required")
        response = await call_next(request)
        if from_query:
            response.set_cookie(COOKIE, self._token, httponly=True, samesite="strict")
        return response


def _bearer(request: Request) -> str | None:
    scheme, _, value = request.headers.get("authorization", "").partition(" ")
    return value.strip() or None if scheme.lower() == "bearer" else None


def _same_origin(request: Request) -> bool:
    origin = request.headers.get("origin")
    if origin is None:
        return True  # not a browser (curl, scripts): nothing to forge
    return urlsplit(origin).netloc == request.headers.get("host", "")


def _deny(request: Request, status: int, message: str) -> Response:
    headers = {"WWW-Authenticate": "Bearer"} if status == 401 else None
    if request.url.path.startswith(("/api", "/metrics")):
        return JSONResponse({"error": message}, status_code=status, headers=headers)
    hint = " Open the dashboard as /?token=TOKEN." if status == 401 else ""
    page = f"<!doctype html><title>sitesync</title><p>{message}.{hint}</p>"
    return HTMLResponse(page, status_code=status, headers=headers)
