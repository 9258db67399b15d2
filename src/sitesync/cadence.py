"""Scan cadences: five-field cron expressions read in UTC, so every machine of a PostgreSQL
deployment agrees on when a scan is due. Settings validate them here, with no crawl code loaded."""

from __future__ import annotations

from datetime import UTC, datetime

from croniter import CroniterBadDateError, croniter

from sitesync.errors import ConfigError


def check_cadence(cadence: str) -> str:
    """The cadence with its whitespace tidied; ``ConfigError`` naming it when it is not a
    five-field cron expression (or an alias such as ``@monthly``)."""
    text = " ".join(cadence.split())
    shaped = len(text.split()) == 5 or (text.startswith("@") and " " not in text)
    if not (shaped and croniter.is_valid(text)):
        raise ConfigError(
            f"invalid cadence {cadence!r}: expected a cron expression of 5 fields "
            "(minute hour day-of-month month day-of-week), e.g. '0 3 1 * *' = monthly"
        )
    try:
        croniter(text, datetime(2000, 1, 1, tzinfo=UTC)).get_next(float)
    except CroniterBadDateError:
        # Valid fields that name no date (31 February): a schedule that would never fire.
        raise ConfigError(
            f"cadence {cadence!r} names no date that exists: it would never fire"
        ) from None
    return text


def next_run_after(cadence: str, after: float) -> float:
    """The first time strictly after ``after`` (epoch seconds) that ``cadence`` names."""
    start = datetime.fromtimestamp(after, tz=UTC)
    return float(croniter(check_cadence(cadence), start).get_next(float))
