"""A page attempt's turn at its host: the host's politeness slot, and the checks that must
pass once it is in hand (moved out of :mod:`sitesync.engine.page`, which uses it)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from sitesync.fetch.politeness import Turn
from sitesync.models import Lease

if TYPE_CHECKING:
    from sitesync.engine.page import PageAttempts


class PageTurn:
    """:meth:`PageAttempts._turn`: the host's politeness slot, and the checks that must pass
    once it is in hand. A class, not an ``asynccontextmanager``, for the reason
    :class:`~sitesync.fetch.politeness.Slot` is: it is entered for every request."""

    __slots__ = ("_attempts", "_host", "_lease", "_slot")

    def __init__(self, attempts: PageAttempts, host: str, lease: Lease) -> None:
        self._attempts = attempts
        self._host = host
        self._lease = lease
        self._slot = attempts.limiter.slot(host)

    async def __aenter__(self) -> Turn:
        turn = await self._slot.__aenter__()
        try:
            await self._attempts._may_start(self._host, self._lease)
        except BaseException:
            await self._slot.__aexit__(None, None, None)
            raise
        return turn

    async def __aexit__(self, *exc_info: object) -> None:
        await self._slot.__aexit__(*exc_info)
