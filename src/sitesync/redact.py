"""Secrets are never shown: the one function that removes them from anything printed.

A store is named by a SQLite path or a PostgreSQL connection string, and a connection
string may carry a password in any of the ways libpq accepts one (a URI's user information,
``?password=`` or ``?sslpassword=`` with percent-encoded names and values, ``password=`` in a
key/value string, quoted or backslash-escaped). Everything sitesync shows (CLI output, logs,
errors, the dashboard, the API, ``/metrics``) passes through :func:`redact` when it may name a
store.

:func:`redact` works in two ways, so that a password quoted by a driver's error message or
decoded by a library is caught as well as one inside a DSN:

- by parsing: every connection string in the text is read as libpq reads it
  (:mod:`sitesync.conninfo_secrets`), and each password in it is masked where it is written;
- by value: the secrets of the settings this process loaded (:func:`remember_secrets`) are
  masked wherever they appear, as written, as libpq decodes them and as ``repr`` or JSON
  would escape them.
"""

from __future__ import annotations

import json
import logging
import threading

from sitesync.conninfo_secrets import libpq_passwords, passwords_in

MASK = "***"

# Secrets shorter than this are masked where written only: masking a one-letter password
# everywhere would garble every message without protecting anything.
_MIN_REMEMBERED = 4

_remembered: set[str] = set()
_lock = threading.Lock()


def redact(text: str) -> str:
    """``text`` with every password it holds replaced by ``***``."""
    text = _mask_written(text)
    with _lock:
        known = sorted(_remembered, key=len, reverse=True)
    for secret in known:
        if secret in text:
            text = text.replace(secret, MASK)
    return text


def _mask_written(text: str) -> str:
    parts: list[str] = []
    done = 0
    for found in passwords_in(text):
        if found.end <= done:
            continue  # inside a span already masked
        parts += [text[done : max(done, found.start)], MASK]
        done = found.end
    return "".join(parts) + text[done:] if parts else text


def secrets_in(text: str) -> set[str]:
    """The passwords ``text`` (a DSN) carries: as written, and as libpq reads them."""
    found: set[str] = set(libpq_passwords(text))
    for item in passwords_in(text):
        found.update({text[item.start : item.end], item.value})
    found.discard("")
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
    escaped = {form for secret in found for form in _escaped_forms(secret)}
    with _lock:
        _remembered.update(secret for secret in escaped if len(secret) >= _MIN_REMEMBERED)


def _escaped_forms(secret: str) -> set[str]:
    """The secret, and what ``repr`` (a traceback's locals, an error quoting a value) and
    JSON would write for it."""
    return {secret, repr(secret)[1:-1], json.dumps(secret)[1:-1]}


class RedactingFormatter(logging.Formatter):
    """Formats log records as ``inner`` does, then redacts them (tracebacks included)."""

    def __init__(self, inner: logging.Formatter | None = None) -> None:
        super().__init__()
        self._inner = inner or logging.Formatter()

    def format(self, record: logging.LogRecord) -> str:
        return redact(self._inner.format(record))
