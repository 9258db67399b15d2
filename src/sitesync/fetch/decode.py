"""HTML bodies as text: decoded in the encoding a browser would choose, and whether the body
was valid in it (a page that is not is recorded as ``undecodable``, its links still read).

The encoding is chosen as the HTML standard's sniffing does, in a bounded, linear number of
steps: a byte order mark; else the ``charset`` of the Content-Type, when it is a label of
the WHATWG Encoding Standard (fetch/encodings.py); else a ``<meta>`` charset in the first
1024 bytes; else UTF-8. A label outside the standard (``punycode``, ``utf-7``, ``base64``,
``unicode_escape``: Python codecs a server could otherwise pick) is ignored, as a browser
ignores it.
"""

from __future__ import annotations

import re

from sitesync.fetch.encodings import encoding_for_label, python_codec
from sitesync.fetch.text import without_surrogates

_BOMS = (
    (b"\xef\xbb\xbf", "UTF-8"),
    (b"\xfe\xff", "UTF-16BE"),
    (b"\xff\xfe", "UTF-16LE"),
)
#: How far the ``<meta>`` prescan reads (the HTML standard's 1024 bytes).
_PRESCAN_BYTES = 1024
_CHARSET_VALUE = re.compile(rb"""charset\s*=\s*["']?\s*([^\s"';>/]+)""")
# windows-1252 as the standard decodes it: the five bytes cp1252 leaves undefined are the
# C1 controls of the same number (so no byte is ever invalid in it).
_WINDOWS_1252 = {
    byte: bytes([byte]).decode("cp1252", errors="ignore") or chr(byte) for byte in range(0x80, 0xA0)
}
_X_USER_DEFINED = {byte: chr(0xF780 + byte - 0x80) for byte in range(0x80, 0x100)}


class Undecodable(str):
    """Page text decoded with replacement characters: the body is not valid in its charset."""

    __slots__ = ()


def declared_charset(content_type: str) -> str | None:
    """The ``charset`` parameter of a Content-Type, as the server wrote it."""
    for part in content_type.split(";")[1:]:
        key, _, value = part.partition("=")
        if key.strip().lower() == "charset" and value.strip():
            return value.strip().strip("\"'")
    return None


def page_encoding(body: bytes, content_type: str) -> str:
    """The WHATWG encoding a browser decodes ``body`` in (see the module's docstring)."""
    for bom, encoding in _BOMS:
        if body.startswith(bom):
            return encoding
    label = declared_charset(content_type)
    declared = encoding_for_label(label) if label else None
    return declared or meta_charset(body[:_PRESCAN_BYTES]) or "UTF-8"


def meta_charset(head: bytes) -> str | None:
    """The encoding a ``<meta charset>`` or ``<meta http-equiv content="...charset=">`` of
    ``head`` names, as the standard's prescan takes it (UTF-16 means UTF-8 there)."""
    data = head.lower()
    position = 0
    while (start := data.find(b"<meta", position)) >= 0:
        end = data.find(b">", start)
        end = len(data) if end < 0 else end
        found = _CHARSET_VALUE.search(data, start, end)
        encoding = encoding_for_label(found.group(1).decode("ascii", "replace")) if found else None
        if encoding is not None:
            if encoding in ("UTF-16BE", "UTF-16LE"):
                return "UTF-8"
            return "windows-1252" if encoding == "x-user-defined" else encoding
        position = end
    return None


def decode_html(body: bytes, content_type: str) -> str:
    """Decode as a browser would; see :func:`decode_html_checked`."""
    return decode_html_checked(body, content_type)[0]


def decode_html_checked(body: bytes, content_type: str) -> tuple[str, bool]:
    """Decode in the page's encoding (:func:`page_encoding`), and say whether the body was
    valid in it: invalid bytes become U+FFFD, never an exception. Every decoder used runs in
    time linear in the body."""
    encoding = page_encoding(body, content_type)
    for bom, named in _BOMS:
        if named == encoding and body.startswith(bom):
            body = body[len(bom) :]
    if encoding == "UTF-8":
        return _decode_utf8(body)
    if encoding == "windows-1252":
        return body.decode("latin-1").translate(_WINDOWS_1252), True
    if encoding == "x-user-defined":
        return body.decode("latin-1").translate(_X_USER_DEFINED), True
    if encoding == "replacement":  # the standard's answer to ISO-2022-KR, HZ and the like
        return ("\ufffd", False) if body else ("", True)
    codec = python_codec(encoding)
    try:
        return without_surrogates(body.decode(codec)), True
    except UnicodeDecodeError:  # not valid in it: decoded again, with replacement characters
        return without_surrogates(body.decode(codec, errors="replace")), False


def _decode_utf8(body: bytes) -> tuple[str, bool]:
    try:
        return body.decode("utf-8"), True  # never yields a surrogate
    except UnicodeDecodeError:
        return body.decode("utf-8", errors="replace"), False
