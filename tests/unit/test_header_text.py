"""Header values and redirect targets with any bytes are kept as text (RFC 9110 obs-text).

aiohttp decodes header bytes as UTF-8 with ``surrogateescape``; ``header_text`` must turn
whatever that gives into text every store can write, losing nothing it can keep.
"""

from __future__ import annotations

import json

from hypothesis import given
from hypothesis import strategies as st

from sitesync.fetch.decode import decode_html
from sitesync.fetch.text import header_text

# What a header value can hold on the wire: any byte but CR and LF (NUL is refused below).
wire_bytes = st.binary(max_size=64).map(lambda b: b.replace(b"\r", b"").replace(b"\n", b""))


def as_aiohttp_gives(raw: bytes) -> str:
    return raw.decode("utf-8", "surrogateescape")


@given(wire_bytes)
def test_any_header_bytes_become_text_that_encodes(raw: bytes) -> None:
    text = header_text(as_aiohttp_gives(raw))
    text.encode("utf-8")  # what SQLite and psycopg do with it: must not raise
    json.dumps(text, ensure_ascii=False).encode("utf-8")
    assert "\x00" not in text  # PostgreSQL refuses NUL in text


@given(wire_bytes)
def test_valid_utf8_is_kept_as_decoded(raw: bytes) -> None:
    try:
        expected = raw.decode("utf-8")
    except UnicodeDecodeError:
        return
    assert header_text(as_aiohttp_gives(raw)) == expected.replace("\x00", "\ufffd")


@given(st.binary(max_size=64))
def test_bytes_that_are_not_utf8_are_read_as_latin1_without_loss(raw: bytes) -> None:
    decoded = as_aiohttp_gives(raw)
    escaped = [n for n, char in enumerate(decoded) if 0xDC80 <= ord(char) <= 0xDCFF]
    text = header_text(decoded)
    assert len(text) == len(decoded)  # one character for each escaped byte: nothing dropped
    for n in escaped:  # each byte that was not UTF-8 is its ISO-8859-1 character
        assert text[n] == chr(ord(decoded[n]) - 0xDC00)


@given(st.text(alphabet=st.characters(max_codepoint=127, blacklist_characters="\x00")))
def test_ascii_is_returned_unchanged(value: str) -> None:
    assert header_text(value) is value


def test_latin1_and_mixed_values() -> None:
    assert header_text(as_aiohttp_gives(b"caf\xe9")) == "café"
    assert header_text(as_aiohttp_gives(b"\xc3\xa9t\xe9")) == "été"  # UTF-8, then a Latin-1 byte
    assert header_text(as_aiohttp_gives(b"/x\xff")) == "/xÿ"
    assert header_text("a\ud800b") == "a\ufffdb"  # a surrogate no byte decodes to
    assert header_text("a\x00b") == "a\ufffdb"


#: Charsets a server may name: web ones, and Python codecs that are no text encoding, fail
#: whatever the errors mode, or make lone surrogates.
CHARSETS = [
    "utf-8", "UTF8", "latin-1", "windows-1252", "shift_jis", "utf-16", "utf-7", "nonsense",
    "base64", "zlib", "hex", "rot13", "uu", "bz2", "idna", "punycode", "undefined",
    "unicode_escape", "raw_unicode_escape",
]  # fmt: skip


@given(st.binary(max_size=64), st.sampled_from(CHARSETS))
def test_a_body_decodes_to_storable_text_whatever_charset_is_named(body: bytes, cs: str) -> None:
    text = decode_html(body, f"text/html; charset={cs}")
    text.encode("utf-8")
