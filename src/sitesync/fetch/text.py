"""Server-sent text made safe to keep: header values, redirect targets, error messages.

HTTP header values are bytes (RFC 9110 5.5: visible ASCII plus *obs-text*, any byte from
0x80). aiohttp decodes them as UTF-8 with ``surrogateescape``, so a Latin-1 ``caf\\xe9``
arrives as ``'caf\\udce9'``: a lone surrogate that SQLite, psycopg and ``json`` then refuse to
encode, failing a whole batch of reports. :func:`header_text` turns every escaped byte back
into the character it is in ISO-8859-1 (the charset of obs-text in practice), keeping valid
UTF-8 as decoded: nothing is lost and nothing raises downstream.
"""

from __future__ import annotations

import re

# U+DC80..U+DCFF is what surrogateescape makes of the bytes 0x80..0xFF.
_ESCAPED_BYTE = re.compile("[\udc80-\udcff]")
_ANY_SURROGATE = re.compile("[\ud800-\udfff]")
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def visible(text: str) -> str:
    """``text`` with control characters (but newline and tab) shown as ``\\xNN`` escapes:
    what a server sent, printed on a terminal or in a log, can never drive it."""
    return _CONTROL.sub(lambda match: match.group(0).encode("unicode_escape").decode(), text)


def header_text(value: str) -> str:
    """``value`` with surrogate-escaped bytes decoded as ISO-8859-1 (lossless, never raises).

    Other lone surrogates (which no byte decodes to) become U+FFFD, and so does NUL, which
    PostgreSQL refuses in text.
    """
    if value.isascii():  # the hot path: almost every header value on the web
        return value.replace("\x00", "\ufffd") if "\x00" in value else value
    value = _ESCAPED_BYTE.sub(_latin1, value)
    value = _ANY_SURROGATE.sub("\ufffd", value)
    return value.replace("\x00", "\ufffd")


def safe_text(value: str) -> str:
    """Any text (an exception message quoting server data) made encodable as UTF-8."""
    return header_text(value)


def without_surrogates(text: str) -> str:
    """``text`` with every lone surrogate replaced by U+FFFD (a codec a server named made it)."""
    return text if text.isascii() else _ANY_SURROGATE.sub("\ufffd", text)


def _latin1(match: re.Match[str]) -> str:
    return chr(ord(match.group()) - 0xDC00)


__all__ = ["header_text", "safe_text", "without_surrogates"]
