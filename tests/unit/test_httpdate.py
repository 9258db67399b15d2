"""HTTP-dates read fast agree with the standard library on every input (issue 30)."""

from __future__ import annotations

import email.utils
from datetime import UTC, datetime

from hypothesis import example, given
from hypothesis import strategies as st

from sitesync.fetch.httpdate import http_timestamp

WEEKDAYS = ("Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun")
MONTHS = ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec")


def standard(value: str) -> float | None:
    """What sitesync read before the fast path: the standard library's reading."""
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError):
        return None
    return None if when.tzinfo is None else when.timestamp()


@st.composite
def fixdate_like(draw: st.DrawFn) -> str:
    """IMF-fixdates, right and subtly wrong: odd days, years before 1000, 24:00, leap seconds,
    other zones, and digits that are not ASCII."""
    weekday = draw(st.sampled_from(WEEKDAYS))
    day = draw(st.integers(0, 32))
    month = draw(st.sampled_from((*MONTHS, "Foo", "jan")))
    year = draw(st.integers(0, 9999))
    hour, minute = draw(st.integers(0, 25)), draw(st.integers(0, 61))
    second = draw(st.integers(0, 61))
    zone = draw(st.sampled_from(("GMT", "UTC", "+0200", "-0000", "gmt")))
    digits = draw(st.sampled_from(("{:02d}", "{:d}", "{:03d}")))
    value = (f"{weekday}, {digits.format(day)} {month} {year:04d} "
             f"{hour:02d}:{minute:02d}:{second:02d} {zone}")  # fmt: skip
    if draw(st.booleans()):
        value = value.replace("1", "\N{ARABIC-INDIC DIGIT ONE}", 1)
    return value


@given(fixdate_like())
@example("Sun, 06 Nov 0050 08:49:37 GMT")  # the standard library reads 2050
@example("Thu, 29 Feb 2024 23:59:60 GMT")  # no leap seconds either way
def test_fast_reading_equals_the_standard_librarys(value: str) -> None:
    assert http_timestamp(value) == standard(value)


@given(st.datetimes(min_value=datetime(1000, 1, 1), max_value=datetime(9999, 12, 31)))
def test_every_date_a_server_sends_reads_back(moment: datetime) -> None:
    moment = moment.replace(microsecond=0, tzinfo=UTC)
    sent = email.utils.format_datetime(moment, usegmt=True)
    assert http_timestamp(sent) == moment.timestamp()


def test_other_forms_are_still_read_and_nonsense_is_not() -> None:
    assert http_timestamp("Sunday, 06-Nov-94 08:49:37 GMT") == 784111777.0  # RFC 850
    assert http_timestamp("Sun Nov  6 08:49:37 1994") is None  # asctime: no zone, as before
    assert http_timestamp("Sun, 06 Nov 1994 08:49:37 +0000") == 784111777.0
    assert http_timestamp("Sun, 31 Feb 1994 08:49:37 GMT") is None
    assert http_timestamp("yesterday") is None
    assert http_timestamp("") is None
