"""Validators on a generated site's pages (issue 30): ``ETag`` and ``Last-Modified`` sent,
``If-None-Match`` and ``If-Modified-Since`` honoured with a 304, and each way a real
server gets them wrong, switched on by its :class:`~sitesync.testing.spec.SiteSpec` field."""

from __future__ import annotations

import email.utils
import hashlib
import time

from aiohttp import web

from sitesync.testing.spec import SiteSpec

#: When every page last changed, as a generated site says (a fixed time in the past).
LAST_MODIFIED = email.utils.formatdate(1_767_225_600, usegmt=True)  # 2026-01-01
_A_YEAR = 365 * 24 * 3600


class Validating:
    """Answers one site's page requests, conditional ones included."""

    def __init__(self, spec: SiteSpec) -> None:
        self.spec = spec
        self._unconditional_seen: set[tuple[int, str]] = set()

    def validators(self, body: bytes) -> dict[str, str]:
        spec = self.spec
        headers = {}
        if spec.etag or spec.weak_etag:
            tag = f'"{hashlib.sha256(body).hexdigest()[:16]}"'
            headers["ETag"] = f"W/{tag}" if spec.weak_etag else tag
        if spec.future_last_modified:
            headers["Last-Modified"] = email.utils.formatdate(time.time() + _A_YEAR, usegmt=True)
        elif spec.last_modified:
            headers["Last-Modified"] = LAST_MODIFIED
        return headers

    def respond(self, request: web.Request, host: int, body: bytes) -> web.Response:
        headers = {"Content-Type": "text/html; charset=utf-8", **self.validators(body)}
        conditional = "If-None-Match" in request.headers or "If-Modified-Since" in request.headers
        if not conditional and self.spec.spurious_304:
            first = (host, request.path) not in self._unconditional_seen
            self._unconditional_seen.add((host, request.path))
            if first:  # a 304 for a request that asked nothing: a cache gone wrong
                return web.Response(status=304, headers=_without_type(headers))
        if conditional and not self.spec.ignore_validators and self._unchanged(request, headers):
            return web.Response(status=304, headers=_without_type(headers))
        return web.Response(body=body, headers=headers)

    def _unchanged(self, request: web.Request, headers: dict[str, str]) -> bool:
        """RFC 9110 13.1: If-None-Match (weak comparison) decides when sent; else
        If-Modified-Since against Last-Modified."""
        etag = headers.get("ETag")
        asked = request.headers.get("If-None-Match")
        if asked is not None:
            if etag is None:
                return False
            tags = {_opaque(tag) for tag in asked.split(",")}
            return "*" in tags or _opaque(etag) in tags
        since = request.headers.get("If-Modified-Since")
        modified = headers.get("Last-Modified")
        if since is None or modified is None:
            return False
        try:
            return email.utils.parsedate_to_datetime(modified) <= (
                email.utils.parsedate_to_datetime(since)
            )
        except (TypeError, ValueError):
            return False


def _opaque(tag: str) -> str:
    tag = tag.strip()
    return tag[2:] if tag.startswith("W/") else tag


def _without_type(headers: dict[str, str]) -> dict[str, str]:
    return {name: value for name, value in headers.items() if name != "Content-Type"}
