"""Who may use the dashboard: loopback only without a token, the token holder with one.

- Without ``dashboard_token`` the server only binds to loopback (:func:`check_exposure`),
  and it answers only requests whose ``Host`` is a loopback name: a web page elsewhere
  cannot reach it through DNS rebinding.
- With a token (at least 16 characters), every request (pages, API, ``/metrics``, static
  files) needs it: ``Authorization: Bearer TOKEN``, or ``?token=TOKEN`` once. The latter is
  exchanged for a random session id in an HttpOnly, SameSite=Strict cookie and redirected to
  the same address without the token, so the token stays out of the address bar, the
  history, ``Referer`` headers and the cookie jar. Sessions live as long as the process.
- Either way, a POST whose ``Origin`` is another site is refused: the buttons change runs,
  and a form on another page must not be able to press them.
- Every response forbids framing (clickjacking of those buttons), MIME sniffing, scripts
  and styles from anywhere but the dashboard itself, and sending its address as a referrer.
"""

from __future__ import annotations

import hmac
import ipaddress
import secrets
from collections.abc import Awaitable, Callable
from urllib.parse import urlencode, urlsplit

from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, RedirectResponse, Response

from sitesync.config import Settings
from sitesync.errors import ConfigError

COOKIE = "sitesync_dashboard_session"
MIN_TOKEN_LENGTH = 16
_MAX_SESSIONS = 10_000  # only token holders create them; the oldest go first past this

SECURITY_HEADERS = {
    "Content-Security-Policy": (
        "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
        "connect-src 'self'; object-src 'none'; base-uri 'none'; form-action 'self'; "
        "frame-ancestors 'none'"
    ),
    "X-Frame-Options": "DENY",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
}
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
    check_token(settings)


def check_token(settings: Settings) -> None:
    """Refuse a token short enough to guess (one line, naming the setting)."""
    token = settings.dashboard_token
    if token is not None and len(token.get_secret_value()) < MIN_TOKEN_LENGTH:
        raise ConfigError(
            f"dashboard_token (--token / SITESYNC_DASHBOARD_TOKEN) is shorter than "
            f"{MIN_TOKEN_LENGTH} characters: use a random one, e.g. the output of "
            "python3 -c 'import secrets; print(secrets.token_urlsafe())'"
        )


class Guard:
    """The access check and the security headers, as an HTTP middleware of the app."""

    def __init__(self, token: str | None) -> None:
        self._token = token
        self._sessions: dict[str, None] = {}  # random ids given for ?token=, oldest first

    async def __call__(self, request: Request, call_next: CallNext) -> Response:
        response = await self._checked(request, call_next)
        response.headers.update(SECURITY_HEADERS)  # denials and redirects included
        return response

    async def _checked(self, request: Request, call_next: CallNext) -> Response:
        if request.method == "POST" and not _same_origin(request):
            return _deny(request, 403, "cross-site request refused")
        if self._token is None:
            if not is_loopback(request.url.hostname or ""):
                return _deny(request, 403, "this dashboard answers on loopback names only")
            return await call_next(request)
        from_query = request.query_params.get("token")
        if from_query is not None:
            if not self._is_token(from_query):
                return _deny(request, 401, "a valid dashboard token is required")
            return self._exchange(request)
        if self._is_token(_bearer(request)) or request.cookies.get(COOKIE) in self._sessions:
            return await call_next(request)
        return _deny(request, 401, "a valid dashboard token is required")

    def _is_token(self, given: str | None) -> bool:
        assert self._token is not None
        return given is not None and hmac.compare_digest(given.encode(), self._token.encode())

    def _exchange(self, request: Request) -> Response:
        """A session cookie for the token, and the same address without the token."""
        session = secrets.token_urlsafe(32)
        self._sessions[session] = None
        while len(self._sessions) > _MAX_SESSIONS:
            del self._sessions[next(iter(self._sessions))]
        query = [(k, v) for k, v in request.query_params.multi_items() if k != "token"]
        # One leading slash: "//host" would send the browser to another site.
        target = "/" + request.url.path.lstrip("/") + (f"?{urlencode(query)}" if query else "")
        response = RedirectResponse(target, status_code=303)
        response.set_cookie(
            COOKIE,
            session,
            httponly=True,
            samesite="strict",
            secure=request.url.scheme == "https",
            path="/",
        )
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
