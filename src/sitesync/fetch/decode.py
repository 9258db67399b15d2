"""HTML bodies as text: decoded with the charset the server declared, and whether the body
was valid in it (a page that is not is recorded as ``undecodable``, its links still read).
"""

from __future__ import annotations

import codecs
import warnings

from sitesync.fetch.text import without_surrogates


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


def decode_html(body: bytes, content_type: str) -> str:
    """Decode with the declared charset; see :func:`decode_html_checked`."""
    return decode_html_checked(body, content_type)[0]


def decode_html_checked(body: bytes, content_type: str) -> tuple[str, bool]:
    """Decode with the declared charset, and say whether the body was valid in it.

    Unknown or wrong charsets degrade to UTF-8 with replacement characters instead of
    failing (links are almost always ASCII). A server names the codec: one that is no text
    encoding (``base64``, ``zlib``), or that fails whatever the errors mode (``idna``,
    ``undefined``), is treated as unknown, and lone surrogates (``unicode_escape`` makes
    them) become U+FFFD, so the text can be stored.
    """
    try:
        codec = codecs.lookup(declared_charset(content_type) or "utf-8").name
    except LookupError:
        codec = "utf-8"
    if codec == "utf-8":
        return _decode_utf8(body)
    try:
        with warnings.catch_warnings():  # unicode_escape warns of escapes it will refuse
            warnings.simplefilter("ignore", DeprecationWarning)
            return without_surrogates(body.decode(codec)), True
    except UnicodeDecodeError:
        pass  # not valid in it: decoded again, with replacement characters
    except (LookupError, ValueError):
        return _decode_utf8(body)
    try:
        return without_surrogates(body.decode(codec, errors="replace")), False
    except (LookupError, ValueError):  # a codec that refuses the errors mode (idna)
        return _decode_utf8(body)


def _decode_utf8(body: bytes) -> tuple[str, bool]:
    try:
        return body.decode("utf-8"), True  # never yields a surrogate
    except UnicodeDecodeError:
        return body.decode("utf-8", errors="replace"), False
