"""The one gate every request passes before it starts (issue 32).

In order: no other worker holds the host's claim; robots.txt allows the URL; the host's
politeness slot (its concurrency, spacing, Crawl-delay, Retry-After); the claim confirmed
once the slot is in hand (it may have been let go while the request waited); and, from the
answer, the host's pace learned and kept for the fleet. Pages (each request of a page
attempt in its turn, sitesync.engine.pageturns), sitemaps and plugins' downloads
(sitesync.fetch.polite) and the browser's subresources (sitesync.fetch.browser_gate,
through the polite client) all start here; the redirect walker (sitesync.fetch.redirects)
sends each hop through it again.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from sitesync.fetch.adaptive import LearnedPace
from sitesync.fetch.base import FetchResult
from sitesync.fetch.politeness import HostLimiter, Slot, Turn
from sitesync.fetch.robots import RobotsCache
from sitesync.urls import origin_of, url_host

#: Whether this worker may send a request to a host now (no other worker holds its claim).
MayRequest = Callable[[str], Awaitable[bool]]
#: Keep a host's changed adaptive pace (the worker stores it for the fleet).
PaceKeeper = Callable[[str, LearnedPace], Awaitable[None]]
#: A check run with the slot in hand (raises to refuse), or bookkeeping once it passed.
Hook = Callable[[], None]


class HostNotHeld(Exception):
    """The host's claim passed to another worker while a request waited for its turn."""


class RequestGate:
    def __init__(
        self,
        *,
        limiter: HostLimiter,
        robots: RobotsCache | None,
        may_request: MayRequest,
        confirm: MayRequest | None = None,
        keep_pace: PaceKeeper | None = None,
    ) -> None:
        self.limiter = limiter
        self.robots = robots
        self.may_request = may_request
        #: Asked again once the request holds its slot (counted as under way on the host),
        #: right before it is sent: the claim may have been let go while it waited.
        self.confirm = confirm or may_request
        self._keep_pace = keep_pace

    async def refusal(
        self,
        url: str,
        *,
        check_robots: bool = True,
        robots_turn: Callable[[], GateTurn] | None = None,
    ) -> str | None:
        """Why ``url`` may not be requested (its host's claim, robots.txt), or None.
        ``robots_turn``: the turn robots.txt itself is fetched in, when it must be."""
        host = url_host(url)
        if not await self.may_request(host):
            return "its host is held by another worker"
        if self.robots is None or not check_robots:
            return None
        try:
            verdict = await self.robots.check(
                url, origin_of(url), gate=robots_turn or (lambda: self.turn(host))
            )
        except HostNotHeld:
            return "its host's claim passed to another worker"
        self.limiter.honour_crawl_delay(host, verdict.crawl_delay)
        return None if verdict.allowed else (verdict.reason or "robots.txt disallows it")

    def turn(self, host: str, *, before: Hook | None = None, after: Hook | None = None) -> GateTurn:
        """The host's slot, with the claim confirmed once it is in hand (``before`` runs
        first, ``after`` once the claim is confirmed); raises :class:`HostNotHeld`."""
        return GateTurn(self, host, before, after)

    async def learn(self, turn: Turn, result: FetchResult) -> None:
        """The host's adaptive pace learns from the answer; a changed pace is kept, so
        every worker of the fleet (the next holder of the host) keeps to it."""
        learned = turn.saw(result)
        if learned is not None and self._keep_pace is not None:
            await self._keep_pace(turn.host, learned)


class GateTurn:
    """:meth:`RequestGate.turn`. A class, not an ``asynccontextmanager``, for the reason
    :class:`~sitesync.fetch.politeness.Slot` is: it is entered for every request."""

    __slots__ = ("_after", "_before", "_gate", "_host", "_slot")

    def __init__(self, gate: RequestGate, host: str, before: Hook | None, after: Hook | None):
        self._gate = gate
        self._host = host
        self._before = before
        self._after = after
        self._slot: Slot = gate.limiter.slot(host)

    async def __aenter__(self) -> Turn:
        turn = await self._slot.__aenter__()
        try:
            if self._before is not None:
                self._before()
            # Counted as under way on the host from here (a refresh keeps the host): the
            # last word is the claim's, in case a refresh was letting the host go.
            if not await self._gate.confirm(self._host):
                raise HostNotHeld(self._host)
            if self._after is not None:
                self._after()
        except BaseException:
            await self._slot.__aexit__(None, None, None)
            raise
        return turn

    async def __aexit__(self, *exc_info: object) -> None:
        await self._slot.__aexit__(*exc_info)
