"""Which validators a page's request carries, and how a page's links are kept (issue 30)."""

from __future__ import annotations

import email.utils

from sitesync.engine.revalidation import sendable, validators_of
from sitesync.fetch.http import conditional_headers
from sitesync.fetch.httpdate import http_timestamp
from sitesync.models import Validators
from sitesync.store._revisits import pack_links, unpack_links

NOW = 1_800_000_000.0
PAST = email.utils.formatdate(NOW - 86_400, usegmt=True)
FUTURE = email.utils.formatdate(NOW + 86_400, usegmt=True)


def test_kept_validators_are_sent_as_they_came() -> None:
    asked = sendable(Validators('W/"abc"', PAST), NOW)
    assert asked.validators == Validators('W/"abc"', PAST) and asked.note is None
    assert conditional_headers(Validators('W/"abc"', PAST)) == {
        "If-None-Match": 'W/"abc"',
        "If-Modified-Since": PAST,
    }


def test_a_last_modified_in_the_future_or_not_a_date_is_not_sent() -> None:
    future = sendable(Validators(None, FUTURE), NOW)
    assert future.validators is None and "in the future" in (future.note or "")
    with_etag = sendable(Validators('"x"', "yesterday-ish"), NOW)
    assert with_etag.validators == Validators('"x"', None)
    assert "not an HTTP-date" in (with_etag.note or "")
    assert sendable(Validators(), NOW).validators is None
    assert http_timestamp("Sun, 06 Nov 1994 08:49:37 GMT") == 784111777.0
    assert http_timestamp("06 Nov 1994") is None


def test_validators_are_read_from_lowercased_headers() -> None:
    assert validators_of({"etag": '"1"', "last-modified": PAST}) == Validators('"1"', PAST)
    assert not validators_of({"etag": ""})


def test_links_round_trip_and_unreadable_ones_read_as_gone() -> None:
    links = ("http://a.test/", "http://a.test/é?q=1")
    assert unpack_links(pack_links(links)) == links
    assert unpack_links(b"not zlib") is None
    assert unpack_links(pack_links([])) == ()
