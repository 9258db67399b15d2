"""The dashboard against the browser attacks it can meet, in a real headless Chromium.

``sitesync dashboard`` runs as the real CLI; the browser is /usr/bin/chromium through
playwright (the ``chromium`` fixture of tests/_dashboard.py).
"""

from __future__ import annotations

import secrets
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from aiohttp import web
from playwright.sync_api import Browser

from sitesync.testing import LoopbackSite, SiteSpec
from tests._dashboard import running_dashboard
from tests.acceptance._cli import communicate, sitesync

EXPECTED_HEADERS = {
    "x-frame-options": "DENY",
    "x-content-type-options": "nosniff",
    "referrer-policy": "no-referrer",
}


@pytest.fixture
def dashboard(tmp_path: Path) -> Iterator[tuple[str, str]]:
    """A dashboard with a token on a free port; yields its URL and the token."""
    token = secrets.token_urlsafe(24)
    with running_dashboard("--db", str(tmp_path / "d.db"), "--token", token) as url:
        yield url, token


def get(url: str, headers: dict[str, str] | None = None) -> tuple[int, dict[str, str]]:
    request = urllib.request.Request(url, headers=headers or {})
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status, {k.lower(): v for k, v in response.headers.items()}
    except urllib.error.HTTPError as exc:
        return exc.code, {k.lower(): v for k, v in exc.headers.items()}


def test_the_token_is_exchanged_for_a_session_and_leaves_the_address_bar(
    dashboard: tuple[str, str], chromium: Browser
) -> None:
    url, token = dashboard
    context = chromium.new_context()
    page = context.new_page()
    console: list[str] = []
    errors: list[str] = []
    page.on("console", lambda message: console.append(message.text))
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    documents = []
    page.on(
        "response",
        lambda r: documents.append(r) if r.request.is_navigation_request() else None,
    )
    page.goto(f"{url}?token={token}")
    page.get_by_test_id("refreshed").filter(has_not_text="loading").wait_for(timeout=15_000)

    # Redirected away: the token is in neither the address bar nor the history.
    assert page.url == url
    assert [r.status for r in documents] == [303, 200]
    # The cookie is a random session id, HttpOnly and SameSite=Strict, not the token.
    [cookie] = context.cookies()
    assert cookie["value"] != token and token not in cookie["value"]
    assert len(cookie["value"]) >= 32
    assert cookie["httpOnly"] and cookie["sameSite"] == "Strict"
    assert page.evaluate("document.cookie") == ""  # no script can read it
    # The page worked under its Content-Security-Policy: no violation, no error.
    assert errors == []
    assert not [m for m in console if "Content Security Policy" in m], console
    headers = documents[-1].all_headers()
    for name, value in EXPECTED_HEADERS.items():
        assert headers[name] == value
    assert "frame-ancestors 'none'" in headers["content-security-policy"]
    assert "script-src 'self'" in headers["content-security-policy"]

    # The session works where the browser sends it, and nowhere else.
    status, _ = get(f"{url}api/status", {"Cookie": f"sitesync_dashboard_session={cookie['value']}"})
    assert status == 200
    status, _ = get(f"{url}api/status", {"Cookie": f"sitesync_dashboard_session={token}"})
    assert status == 401
    # Back in history: the address with the token was replaced, never kept.
    page.go_back()
    assert token not in page.url
    # A browser without the session is refused.
    stranger = chromium.new_context().new_page()
    assert stranger.goto(url).status == 401  # type: ignore[union-attr]


def test_another_site_cannot_frame_the_dashboard(
    dashboard: tuple[str, str],
    site_factory: Callable[[SiteSpec], LoopbackSite],
    chromium: Browser,
) -> None:
    url, token = dashboard
    page = chromium.new_page()
    page.goto(f"{url}?token={token}")  # logged in: a framed page would be usable
    page.get_by_test_id("runs").wait_for(timeout=15_000)
    # The framing page is served over HTTP from another loopback address: another origin
    # that the browser lets frame 127.0.0.1, so only the dashboard's own headers refuse it
    # (a file:// page is refused any loopback frame by the browser itself, whatever the
    # dashboard sends).
    evil = site_factory(SiteSpec(hosts=1, pages_per_host=1, first_ip=61))

    async def framing(request: web.Request) -> web.Response:
        html = f'<iframe id="f" src="{url}" width="800" height="600"></iframe>'
        return web.Response(text=html, content_type="text/html")

    evil.set_handler("/evil.html", framing)
    # Wait for the browser's decision: the dashboard's answer arrives, then the frame commits
    # a document, the dashboard's or the browser's own error page.
    with page.expect_response(lambda response: response.url == url, timeout=15_000):
        page.goto(f"{evil.root_urls[0]}evil.html")
    frame = page.locator("#f").element_handle().content_frame()
    assert frame is not None, "the iframe was not created"
    frame.wait_for_load_state("load", timeout=15_000)
    # Not even the refusal page: the browser rendered nothing of the dashboard, but its own
    # error page in its place.
    assert frame.url.startswith("chrome-error://"), frame.url
    content = frame.content()
    assert "sitesync" not in content, content[:300]


def test_every_response_carries_the_security_headers(dashboard: tuple[str, str]) -> None:
    url, token = dashboard
    bearer = {"Authorization": f"Bearer {token}"}
    for path, headers, status in [
        ("", bearer, 200),
        ("api/status", bearer, 200),
        ("metrics", bearer, 200),
        ("static/dashboard.js", bearer, 200),
        ("api/status", {}, 401),
        ("", {}, 401),
    ]:
        got, received = get(f"{url}{path}", headers)
        assert got == status, path
        for name, value in EXPECTED_HEADERS.items():
            assert received.get(name) == value, (path, name)
        assert "default-src 'self'" in received["content-security-policy"], path


def test_a_wrong_token_in_the_address_is_refused_and_not_exchanged(
    dashboard: tuple[str, str],
) -> None:
    url, _ = dashboard
    status, headers = get(f"{url}?token=not-the-token-not-the-token")
    assert status == 401 and "set-cookie" not in headers


@pytest.mark.parametrize("token", ["short", "fifteen-chars-x"])
def test_a_short_token_is_refused_at_start_up(tmp_path: Path, token: str) -> None:
    process = sitesync("dashboard", "--db", str(tmp_path / "d.db"), "--port", "0", "--token", token)
    out, err = communicate(process, timeout=60)
    assert process.returncode == 1, (out, err)
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: dashboard_token"), err
    assert "16 characters" in lines[0] and token not in lines[0]
