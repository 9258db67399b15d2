"""Secrets are never shown: the one function that removes them from anything printed.

A store is named by a SQLite path or a PostgreSQL URL, and a URL may carry a password
(``postgresql://user:secret@host/db``, ``...?password=secret``, or ``password=secret`` in
a key/value connection string). Everything sitesync shows (CLI output, logs, errors, the
dashboard, the API, ``/metrics``) passes through :func:`redact` when it may name a store.

:func:`redact` works in two ways, so that a password quoted by a driver's error message or
decoded by a library is caught as well as one inside a DSN:

- by shape: the password of any URL's user information, any ``password=`` query parameter
  or connection-string keyword is masked wherever it appears in the text;
- by value: the secrets of the settings this process loaded (:func:`remember_secrets`) are
  masked wherever they appear, in their raw and percent-decoded forms.
"""

from __future__ import annotations

import logging
import re
import threading
from urllib.parse import unquote

MASK = "***"

# Secrets shorter than this are masked by shape only: masking a one-letter password
# everywhere would garble every message without protecting anything.
_MIN_REMEMBERED = 4

_USERINFO = re.compile(r"(?P<head>\b[a-zA-Z][a-zA-Z0-9+.-]*://[^:/?#@\s]*):(?P<secret>[^@/?#\s]*)@")
_QUERY = re.compile(r"(?P<head>[?&]password=)(?P<secret>[^&#\s]*)", re.IGNORECASE)
_KEYWORD = re.compile(
    r"(?P<head>(?<![?&\w])password\s*=\s*)(?P<secret>'(?:[^'\\]|\\.)*'|\S+)", re.IGNORECASE
)
_SHAPES = (_USERINFO, _QUERY, _KEYWORD)

_remembered: set[str] = set()
_lock = threading.Lock()


def redact(text: str) -> str:
    """``text`` with every password it holds replaced by ``***``."""
    for shape in _SHAPES:
        text = shape.sub(_masked, text)
    with _lock:
        known = sorted(_remembered, key=len, reverse=True)
    for secret in known:
        text = text.replace(secret, MASK)
    return text


def _masked(match: re.Match[str]) -> str:
    whole, start = match.group(0), match.start()
    return whole[: match.start("secret") - start] + MASK + whole[match.end("secret") - start :]


def secrets_in(text: str) -> set[str]:
    """The passwords ``text`` (a DSN) carries, raw and percent-decoded."""
    found: set[str] = set()
    for shape in _SHAPES:
        for match in shape.finditer(text):
            secret = match.group("secret").strip("'")
            if secret:
                found.update({secret, unquote(secret)})
    return found


def remember_secrets(*dsns: str | None) -> None:
    """Mask the passwords inside these DSNs wherever they appear, from now on."""
    found: set[str] = set()
    for dsn in dsns:
        found |= secrets_in(dsn or "")
    _remember(found)


def remember_secret(value: str | None) -> None:
    """Mask this value (a token) wherever it appears, from now on."""
    _remember({value} if value else set())


def _remember(found: set[str]) -> None:
    with _lock:
        _remembered.update(secret for secret in found if len(secret) >= _MIN_REMEMBERED)


class RedactingFormatter(logging.Formatter):
    """Formats log records as ``inner`` does, then redacts them (tracebacks included)."""

    def __init__(self, inner: logging.Formatter | None = None) -> None:
        super().__init__()
        self._inner = inner or logging.Formatter()

    def format(self, record: logging.LogRecord) -> str:
        return redact(self._inner.format(record))
