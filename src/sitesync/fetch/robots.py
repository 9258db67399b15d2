"""robots.txt with RFC 9309 semantics, cached per host.

- 2xx: the rules apply (parsed by ``protego``). Only the first ``max_bytes`` (512 KiB) are
  read, whatever ``max_body_bytes`` is: a longer robots.txt is parsed from its first
  512 KiB (RFC 9309 §2.5 asks for at least 500 KiB), never taken for "too large, allow all".
- 4xx (401 and 403 included, as RFC 9309 §2.3.1.3 says): no rules, everything allowed.
- 5xx, unreachable, timeout: everything disallowed until ``error_ttl`` has passed, then
  fetched again (RFC 9309 §2.3.1.4).
- Redirects are followed for at most five hops (RFC 9309 §2.3.1.2) and only within the same
  site (``www.``, subdomains): a longer chain, or a hop to another site, counts as
  "unavailable", like a 4xx (everything allowed, nothing of the target stored).

Verdicts are cached for ``ttl`` (24 h by default, the RFC's recommended maximum).
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Awaitable, Callable
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass, field

from protego import Protego

from sitesync.fetch.base import Fetcher, FetchLimits, FetchOutcome, FetchResult, RedirectHop
from sitesync.fetch.redirects import CheckHop, Refusal, walk
from sitesync.urls import same_site, url_host

#: RFC 9309 §2.3.1.2: follow at least five consecutive redirects, then it may stop.
MAX_ROBOTS_REDIRECTS = 5
#: The status kept for a robots.txt the network policy refused: never sent, so no answer
#: and no rules (everything allowed: every page request is refused the same way anyway).
REFUSED = -1
#: A robots.txt longer than this (characters) is parsed and checked on a thread: protego
#: matches every wildcard rule of the group in turn, and 35,000 ``Disallow: /*a$`` lines
#: (512 KiB) cost about 70 ms a URL. Real files are a few KiB; Google's is about 8.
HEAVY_ROBOTS_CHARS = 64 * 1024

Gate = Callable[[], AbstractAsyncContextManager[object]]
#: Called after each robots.txt fetch: (origin, status, body or None, expires_at).
Persist = Callable[[str, int, str | None, float], Awaitable[None]]


@dataclass(frozen=True, slots=True)
class RobotsVerdict:
    allowed: bool
    reason: str | None = None  # why not, for last_error
    crawl_delay: float | None = None
    retry_at: float | None = None  # disallowed because unreachable: ask again after this
    status: int | None = None  # with retry_at: the robots.txt status (0 = no answer at all)


@dataclass(slots=True)
class _Entry:
    expires_at: float
    rules: Protego | None = None  # None: allow all (4xx)
    unreachable: str | None = None  # set: disallow all until expires_at
    status: int = 0  # of the last answer
    sitemaps: tuple[str, ...] = ()
    heavy: bool = False  # rules large enough that a check goes off the loop
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)


class RobotsCache:
    def __init__(
        self,
        fetcher: Fetcher,
        *,
        user_agent: str,
        ttl: float = 24 * 3600,
        error_ttl: float = 300,
        max_bytes: int = 512 * 1024,
        persist: Persist | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self._fetcher = fetcher
        # Expiries are stored and preloaded by other workers: read on the store's clock.
        self._clock = clock
        # Match rules on the product token (the User-Agent's first word), as RFC 9309 asks.
        self._agent = user_agent.split("/", 1)[0].split()[0] if user_agent.strip() else "*"
        self.ttl = ttl
        self.error_ttl = error_ttl
        self.max_bytes = max_bytes
        self._entries: dict[str, _Entry] = {}
        self._persist = persist
        self._heavy_checks = asyncio.Lock()

    def preload(self, origin: str, *, status: int, body: str | None, expires_at: float) -> None:
        """Use a stored answer (from another worker) until it expires, instead of refetching."""
        if expires_at <= self._clock() or self.is_fresh(origin):
            return
        entry = self._entries.setdefault(origin, _Entry(expires_at=0.0))
        self._apply(entry, status, body, expires_at, error=None)

    async def check(self, url: str, origin: str, *, gate: Gate | None = None) -> RobotsVerdict:
        """May ``url`` be fetched? ``origin`` is ``scheme://host[:port]`` of the URL.

        ``gate``, when given, wraps the robots.txt request itself (the host's politeness
        slot: robots.txt is a request to the host like any other).
        """
        entry = await self._entry(origin, gate)
        if entry.heavy:  # bounded, but too long for the loop that serves every other host
            # One at a time: threads matching at once would take the GIL from the loop in
            # turn (40 concurrent checks stalled it 200 ms); one leaves it every switch.
            async with self._heavy_checks:
                return await asyncio.to_thread(self._verdict, entry, url)
        return self._verdict(entry, url)

    def _verdict(self, entry: _Entry, url: str) -> RobotsVerdict:
        if entry.unreachable is not None:
            return RobotsVerdict(
                allowed=False,
                reason=f"robots.txt unreachable ({entry.unreachable})",
                retry_at=entry.expires_at,
                status=entry.status,
            )
        if entry.rules is None:
            return RobotsVerdict(allowed=True)
        delay = entry.rules.crawl_delay(self._agent)
        if not entry.rules.can_fetch(url, self._agent):
            return RobotsVerdict(allowed=False, reason="robots.txt disallows it", crawl_delay=delay)
        return RobotsVerdict(allowed=True, crawl_delay=delay)

    async def sitemaps(self, origin: str, *, gate: Gate | None = None) -> tuple[str, ...] | None:
        """``Sitemap:`` URLs listed in the origin's robots.txt; None while robots.txt is
        unreachable (5xx, no answer), which disallows everything, sitemaps included."""
        entry = await self._entry(origin, gate)
        return None if entry.unreachable is not None else entry.sitemaps

    async def recheck_at(self, origin: str, when: float) -> None:
        """Ask an unavailable robots.txt again at ``when`` if that is sooner than its
        ``error_ttl`` (the dead-host re-check schedule decides when a host is re-checked).
        Stored too, so a worker taking the host over asks again then, not later."""
        entry = self._entries.get(origin)
        if entry is None or entry.unreachable is None or entry.expires_at <= when:
            return
        entry.expires_at = when
        if self._persist is not None:
            await self._persist(origin, entry.status, None, when)

    async def _request(self, url: str) -> FetchResult:
        """One request of a robots.txt's chain (each hop read up to ``max_bytes``)."""
        return await self._fetcher.fetch(url, read_at_most=self.max_bytes)

    def is_fresh(self, origin: str) -> bool:
        entry = self._entries.get(origin)
        return entry is not None and entry.expires_at > self._clock()

    async def _entry(self, origin: str, gate: Gate | None) -> _Entry:
        entry = self._entries.get(origin)
        if entry is None:
            entry = self._entries[origin] = _Entry(expires_at=0.0)
        if entry.expires_at > self._clock():
            return entry
        async with entry.lock:  # one fetch per origin, however many URLs wait for it
            if entry.expires_at <= self._clock():
                async with gate() if gate is not None else contextlib.nullcontext():
                    result = await walk(
                        origin + "/robots.txt",
                        self._request,
                        _robots_redirects(origin),
                        max_redirects=getattr(self._fetcher, "limits", FetchLimits()).max_redirects,
                    )
                status, body = await self._update(entry, result)
                if self._persist is not None:
                    await self._persist(origin, status, body, entry.expires_at)
        return entry

    async def _update(self, entry: _Entry, result: FetchResult) -> tuple[int, str | None]:
        """Apply a fetch; return the (status, body) worth storing for other workers."""
        ok = 200 <= result.status < 300 and result.outcome is FetchOutcome.SUCCESS
        body = result.body[: self.max_bytes].decode("utf-8", errors="replace") if ok else None
        if result.status == 0 and result.outcome is FetchOutcome.INVALID and result.redirects:
            # RFC 9309 §2.3.1.2: robots.txt behind a redirect loop or too many redirects is
            # "unavailable", like a 4xx: everything is allowed.
            result = FetchResult(url=result.url, outcome=FetchOutcome.HTTP_ERROR, status=404)
        if result.outcome is FetchOutcome.FORBIDDEN_ADDRESS:
            # Refused by the network policy (it, or a redirect of it): never sent, and no
            # answer will come, so "unavailable": no rules. Every page request is checked
            # the same way anyway. Kept as REFUSED, so that the story says what happened.
            self._apply(entry, REFUSED, None, self._clock() + self.ttl, error=result.error)
            return REFUSED, None
        unreachable = result.status >= 500 or result.status == 0
        ttl = self.error_ttl if unreachable else self.ttl
        # A 2xx whose body could not be used (too large, redirected away) allows all; no
        # answer at all (status 0) stays 0: unreachable, everything disallowed for now.
        status = result.status if ok or result.status >= 300 or unreachable else 404
        parsed = None
        if body is not None and len(body) > HEAVY_ROBOTS_CHARS:
            parsed = await asyncio.to_thread(Protego.parse, body)
        error = result.error or result.outcome
        self._apply(entry, status, body, self._clock() + ttl, error=error, parsed=parsed)
        return status, body

    def _apply(
        self,
        entry: _Entry,
        status: int,
        body: str | None,
        expires_at: float,
        error: str | None,
        parsed: Protego | None = None,
    ) -> None:
        entry.rules, entry.unreachable, entry.sitemaps = None, None, ()
        entry.expires_at, entry.status, entry.heavy = expires_at, status, False
        if status >= 500 or status == 0:
            entry.unreachable = f"HTTP {status}" if status else (error or "unreachable")
        elif 200 <= status < 300 and body is not None:
            entry.rules = parsed if parsed is not None else Protego.parse(body)
            entry.sitemaps = tuple(entry.rules.sitemaps)
            entry.heavy = len(body) > HEAVY_ROBOTS_CHARS
        # Any other answer (4xx, a body we could not use): no rules, everything allowed.


def _robots_redirects(origin: str) -> CheckHop:
    """Follow at most five hops, each within the origin's site: a robots.txt never sends
    sitesync to another site, whose answer would be stored as this host's rules."""
    host = url_host(origin + "/")

    async def check(target: str, location: str, chain: tuple[RedirectHop, ...]) -> Refusal | None:
        if len(chain) <= MAX_ROBOTS_REDIRECTS and same_site(host, url_host(target)):
            return None
        return FetchOutcome.REDIRECT_NOT_FOLLOWED, f"redirect to {location} (out of scope)"

    return check


@dataclass(frozen=True, slots=True)
class RobotsRule:
    """Which robots.txt group and rule decide a URL (``sitesync why``)."""

    allowed: bool
    group: str | None  # the User-agent line of the group that applies; None: no group
    rule: str | None  # "Disallow: /private"; None: no rule matches (allowed)


def robots_product_token(user_agent: str) -> str:
    """The token robots.txt groups are matched on: the User-Agent's first word."""
    return user_agent.split("/", 1)[0].split()[0] if user_agent.strip() else "*"


def explain_robots(body: str, url: str, user_agent: str) -> RobotsRule:
    """The group and rule of ``body`` that decide ``url`` for ``user_agent``.

    protego gives only the verdict; the group and rule are read from its parsed rule set
    (longest match, allow winning a tie, as it decides). Should its internals change, the
    verdict is still given, without the rule.
    """
    rules = Protego.parse(body)
    agent = robots_product_token(user_agent)
    allowed = rules.can_fetch(url, agent)
    try:
        group = rules._get_matching_rule_set(agent)
        if group is None:
            return RobotsRule(allowed, None, None)
        from protego._utils import _quote_path

        path = _quote_path(url)
        for rule in group._rules:  # sorted by priority, as protego matches them
            if rule.value.match(path):
                name = "Disallow" if rule.field == "disallow" else "Allow"
                return RobotsRule(allowed, group.user_agent, f"{name}: {rule.value._pattern}")
        return RobotsRule(allowed, group.user_agent, None)
    except (AttributeError, ImportError, TypeError):
        return RobotsRule(allowed, None, None)
