"""Where the passwords are in a text that may hold PostgreSQL connection strings.

libpq takes a password in more ways than a pattern can follow: in a URI's user information
(``postgresql://u:secret@h/db``) or its query (``?password=``, ``?sslpassword=``, with names
and values percent-encoded: ``?pass%77ord=`` is ``password``), and in a key/value string
(``password=secret``, ``password = 'a \\' b'``, ``password=a\\ b``: quoted, and escaped with a
backslash). So the text is read as libpq reads it: each candidate connection string in it (a
URI, or a run of ``key=value`` words around a password keyword) is lexed with libpq's rules,
which gives the *span* of each password in the text, and the candidate is given to libpq's
own parser (:func:`psycopg.conninfo.conninfo_to_dict`) when it is a whole connection string,
which gives each password's *value* exactly as libpq would use it.

Free text ends a candidate where libpq would not (a URI at whitespace, an unquoted value at
whitespace): text after a connection string is not part of it. Keywords are matched without
regard to case, although libpq's are case-sensitive: masking too much is harmless.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from urllib.parse import unquote

PASSWORD_KEYS = frozenset({"password", "sslpassword"})

# The start of any URI (userinfo of an http:// proxy URL is a secret too).
_URI = re.compile(r"(?<![\w+.-])[a-zA-Z][a-zA-Z0-9+.-]*://")
# A password keyword of a key/value string, not part of a longer word or of a URI query.
_KEYWORD = re.compile(r"(?<![\w%?&])(?:ssl)?password\s*=\s*", re.IGNORECASE)
# A query parameter anywhere (a request line's path, a URI cut short): its name may be
# percent-encoded, so every name is decoded and compared.
_QUERY_NAME = re.compile(r"[?&](?P<name>[^=&#\s]{1,64})=")
# libpq is asked about the first few candidates of a text, and about a whole text only when
# it is short enough to be a connection string: a line of thousands of ``password=`` words
# costs microseconds a word, not a libpq call each (the lexing masks them all regardless).
_MAX_ASKED = 32
_MAX_ASKED_CHARS = 64 * 1024
_URI_END = frozenset(" \t\r\n\"'<>`")


@dataclass(frozen=True)
class Found:
    """One password in the text: its span there (raw, as written) and its value (as libpq
    would use it: percent-decoded, unquoted, unescaped)."""

    start: int
    end: int
    value: str


def passwords_in(text: str) -> list[Found]:
    """Every password of every connection string in ``text``, in order of position."""
    found = [*_in_uris(text), *_in_queries(text), *_in_keywords(text)]
    found += _confirmed_by_libpq(text, found)
    return sorted(found, key=lambda f: (f.start, -f.end))


def _in_uris(text: str) -> Iterator[Found]:
    for _, after_scheme, end in _uri_spans(text):
        yield from _in_uri(text, after_scheme, end)


def _uri_spans(text: str) -> Iterator[tuple[int, int, int]]:
    """(start, after ``://``, end) of each URI, none inside another (linear in the text)."""
    done = 0
    for match in _URI.finditer(text):
        if match.start() >= done:
            done = _uri_end(text, match.end())
            yield match.start(), match.end(), done


def _in_uri(text: str, start: int, end: int) -> Iterator[Found]:
    """The password of the user information and those of the query of the URI whose part
    after ``scheme://`` is ``text[start:end]``."""
    # libpq: the user information runs to an '@' met before any '/' (not stopping at '?').
    slash, at = text.find("/", start, end), text.find("@", start, end)
    if at != -1 and (slash == -1 or at < slash):
        colon = text.find(":", start, at)
        if colon != -1:
            yield Found(colon + 1, at, unquote(text[colon + 1 : at]))
    query = text.find("?", at + 1 if at != -1 else start, end)
    if query == -1:
        return
    position = query + 1
    for part in text[query + 1 : end].split("&"):
        name, equals, value = part.partition("=")
        if equals and unquote(name).strip().lower() in PASSWORD_KEYS:
            value_start = position + len(name) + 1
            yield Found(value_start, value_start + len(value), unquote(value))
        position += len(part) + 1


def _in_queries(text: str) -> Iterator[Found]:
    done = 0
    for match in _QUERY_NAME.finditer(text):
        if match.start() >= done and unquote(match.group("name")).lower() in PASSWORD_KEYS:
            done = match.end()
            while done < len(text) and text[done] not in _URI_END and text[done] not in "&#":
                done += 1
            yield Found(match.end(), done, unquote(text[match.end() : done]))


def _in_keywords(text: str) -> Iterator[Found]:
    for match in _KEYWORD.finditer(text):
        start = match.end()
        end, value = lex_value(text, start)
        if end > start:
            yield Found(start, end, value)


def lex_value(text: str, start: int) -> tuple[int, str]:
    """(end, value) of the key/value string's value at ``text[start:]``, by libpq's rules
    (``conninfo_parse``): quoted, it runs to the unescaped closing quote (to the end of the
    text when there is none); unquoted, to whitespace; a backslash escapes the next character
    in either."""
    quoted = start < len(text) and text[start] == "'"
    position = start + 1 if quoted else start
    value: list[str] = []
    while position < len(text):
        char = text[position]
        if char == "\\" and position + 1 < len(text):
            value.append(text[position + 1])
            position += 2
            continue
        if (quoted and char == "'") or (not quoted and char.isspace()):
            return position + (1 if quoted else 0), "".join(value)
        value.append(char)
        position += 1
    return position, "".join(value)


def _confirmed_by_libpq(text: str, found: list[Found]) -> list[Found]:
    """The passwords libpq itself reads from each candidate that is a whole connection
    string (the text, each URI, each ``password=...`` word), found by value within it: for
    any form the lexing above would miss. Only asked when the lexing found a password."""
    if not found:
        return []
    extra: list[Found] = []
    for start, end in sorted(_candidates(text))[:_MAX_ASKED]:
        for value in libpq_passwords(text[start:end]):
            extra += _occurrences(text, value, start, end)
    return extra


def _candidates(text: str) -> set[tuple[int, int]]:
    spans = {(0, len(text))} if len(text) <= _MAX_ASKED_CHARS else set()
    for start, _, end in _uri_spans(text):
        spans.add((start, end))
    for match in _KEYWORD.finditer(text):
        spans.add((match.start(), lex_value(text, match.end())[0]))
    return spans


def _uri_end(text: str, start: int) -> int:
    end = start
    while end < len(text) and text[end] not in _URI_END:
        end += 1
    return end


def libpq_passwords(dsn: str) -> set[str]:
    """The passwords libpq reads from ``dsn`` (none if it is not a connection string)."""
    if "=" not in dsn and "://" not in dsn:
        return set()
    try:  # imported here: a SQLite user never loads the PostgreSQL driver
        from psycopg import Error
        from psycopg.conninfo import conninfo_to_dict
    except ImportError:  # pragma: no cover - psycopg is a dependency
        return set()
    try:
        params = conninfo_to_dict(dsn)
    except (Error, ValueError, TypeError):
        return set()
    return {str(params[key]) for key in PASSWORD_KEYS if params.get(key)}


def _occurrences(text: str, value: str, start: int, end: int) -> Iterator[Found]:
    position = text.find(value, start, end)
    while position != -1:
        yield Found(position, position + len(value), value)
        position = text.find(value, position + len(value), end)
