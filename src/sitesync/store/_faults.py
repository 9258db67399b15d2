"""Transient store faults: waiting out a lost connection, a restart or a held lock.

Each backend runs every store call through :meth:`FaultBudget.run` with its own rule for
what is transient (a dropped PostgreSQL connection, an administrator shutdown, a SQLite
database that stays locked). Such an attempt is retried whole with exponential backoff
until it succeeds or the budget (``store_retry_seconds``) is spent; then
``StoreUnavailable`` is raised. Replaying a whole transaction is safe because every write
of the stores is fenced (lease tokens) or idempotent, even when the first attempt did
commit and only its acknowledgement was lost.

Once the budget has run out, later calls get one attempt each and no more waiting: a
worker shutting down after ``StoreUnavailable`` tries its clean-up once, not once per
budget. The first call that succeeds again restores the normal behaviour.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Awaitable, Callable
from typing import TypeVar

import tenacity

from sitesync.config import setting_default
from sitesync.errors import StoreUnavailable

log = logging.getLogger(__name__)

T = TypeVar("T")

#: Default of ``store_retry_seconds``.
DEFAULT_RETRY_SECONDS: float = setting_default("store_retry_seconds")
_FIRST_WAIT = 0.05
_LONGEST_WAIT = 5.0


class FaultBudget:
    """How long one store waits out transient faults, and whether it already gave up."""

    def __init__(
        self,
        where: str,
        is_transient: Callable[[BaseException], bool],
        *,
        seconds: float = DEFAULT_RETRY_SECONDS,
    ) -> None:
        self.where = where
        self.seconds = seconds
        self._is_transient = is_transient
        self._spent = False

    async def run(self, attempt: Callable[[], Awaitable[T]]) -> T:
        """``attempt()``, called again after each transient fault within the budget."""
        try:
            result = await attempt()
        except Exception as exc:
            if not self._is_transient(exc):
                raise
            if self._spent:
                raise self._unavailable(exc) from exc
            return await self._retry(attempt, exc)
        self._spent = False
        return result

    async def _retry(self, attempt: Callable[[], Awaitable[T]], first: Exception) -> T:
        log.warning(
            "store %s: %s; retrying for up to %gs (store_retry_seconds)",
            self.where,
            _line(first),
            self.seconds,
        )
        started = time.monotonic()
        retrying = tenacity.AsyncRetrying(
            retry=tenacity.retry_if_exception(self._is_transient),
            stop=tenacity.stop_after_delay(self.seconds),
            wait=tenacity.wait_exponential_jitter(
                multiplier=_FIRST_WAIT, max=_LONGEST_WAIT, jitter=_FIRST_WAIT
            ),
            reraise=True,
        )

        async def once() -> T:  # a coroutine function, whatever ``attempt`` is
            return await attempt()

        try:
            result: T = await retrying(once)
        except Exception as exc:
            if not self._is_transient(exc):
                raise
            self._spent = True
            raise self._unavailable(exc) from exc
        log.warning("store %s available again after %.1fs", self.where, time.monotonic() - started)
        return result

    def _unavailable(self, exc: BaseException) -> StoreUnavailable:
        return StoreUnavailable(
            f"store {self.where} unavailable for more than {self.seconds:g}s "
            f"(store_retry_seconds): {_line(exc)}"
        )


def _line(exc: BaseException) -> str:
    return " ".join(str(exc).split()) or type(exc).__name__
