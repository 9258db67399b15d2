"""Per-host politeness: concurrency, spacing between requests, and back-off.

A request starts ``delay`` after the previous one started and after the previous one ended.

The spacing of a host is the larger of the configured delay and the host's robots.txt
Crawl-delay. A host that answered 429/503 with Retry-After is paused until then: nothing
starts on it before, and the worker defers that host's tasks instead of holding slots.

On top of that, each host's delay and concurrency adapt to its answers (:mod:`sitesync.fetch.
adaptive`): the caller of :meth:`HostLimiter.slot` tells the :class:`Turn` it got what the
host answered. The adapted delay is never below the configured delay or the Crawl-delay.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field

from sitesync.fetch.adaptive import HostPace, LearnedPace, PaceSettings
from sitesync.fetch.base import FetchOutcome, FetchResult


@dataclass(slots=True)
class _Host:
    pace: HostPace
    # Monotonic time the last request started. The next one is due ``delay`` later, computed
    # when it asks: a Crawl-delay learned from robots.txt (itself the previous request) then
    # spaces the very next request, not only the ones after it.
    last_start: float = float("-inf")
    # Monotonic time the last request ended: the delay also runs from there, so a host gets
    # ``delay`` of quiet after each answer however long the answer took (and the spacing
    # holds as the server sees it, not only as sent).
    last_end: float = float("-inf")
    paused_until: float = 0.0  # wall clock (comparable with the store's eligibility times)
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    in_flight: int = 0
    ended: asyncio.Event = field(default_factory=asyncio.Event)  # set when a request ends

    @property
    def delay(self) -> float:
        return self.pace.delay()

    def due(self) -> float:
        """Monotonic time the next request may start."""
        return max(self.last_start, self.last_end) + self.delay

    def full(self) -> bool:
        cap = self.pace.concurrency()
        return cap > 0 and self.in_flight >= cap


@dataclass(slots=True)
class Turn:
    """One request's turn at a host: tell it what the host answered."""

    host: str
    started: float  # wall clock, for the pace
    _pace: HostPace | None

    def answered(
        self,
        *,
        status: int,
        elapsed: float,
        timed_out: bool = False,
        url: str | None = None,
        busy: float = 0.0,
    ) -> LearnedPace | None:
        """Let the host's pace learn from the answer; returns the pace to store (shared
        with the fleet) when it changed enough, else None. See
        :meth:`~sitesync.fetch.adaptive.HostPace.answered` for ``url`` and ``busy``."""
        if self._pace is None:
            return None
        return self._pace.answered(
            started=self.started, status=status, elapsed=elapsed, timed_out=timed_out,
            url=url, busy=busy,
        )  # fmt: skip

    def saw(self, result: FetchResult) -> LearnedPace | None:
        """:meth:`answered`, from a fetch result: its time to the first byte where the
        fetcher measured it (else the whole request's), and the URL that was asked."""
        timed_out = result.outcome is FetchOutcome.TIMEOUT
        if result.first_byte is not None:
            elapsed, busy = result.first_byte, result.first_byte_busy
        else:
            elapsed, busy = result.elapsed, 0.0
        return self.answered(
            status=result.status, elapsed=elapsed, timed_out=timed_out, url=result.url,
            busy=busy,
        )  # fmt: skip


class HostLimiter:
    """At most ``concurrency`` requests per host at once, each starting at least ``delay``
    after the previous one started and after the previous one ended.

    ``concurrency`` 0 means no per-host cap (the benchmark's setting).
    """

    def __init__(
        self,
        *,
        concurrency: int,
        delay: float,
        max_delay: float = 60.0,
        adaptive: PaceSettings | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.concurrency = concurrency
        self.delay = delay
        self.max_delay = max_delay
        # No adaptive settings: the fixed pace (plugins' own limiters, unit tests).
        self.adaptive = adaptive or PaceSettings(enabled=False)
        self._pace = _host_pace_settings(concurrency, delay, self.adaptive)
        self._clock = clock
        self._hosts: dict[str, _Host] = {}
        self._unpaced: dict[str, int] = {}  # requests under way on hosts with no pacing

    def retune(self, *, concurrency: int, delay: float, adaptive: PaceSettings) -> None:
        """Pace every host by new settings from now on (a run's politeness changed while
        it goes on): requests waiting for their turn wait by the new delay."""
        self.concurrency, self.delay, self.adaptive = concurrency, delay, adaptive
        self._pace = _host_pace_settings(concurrency, delay, adaptive)
        for state in self._hosts.values():
            state.pace.retune(self._pace)
            state.ended.set()  # a waiter re-reads the cap and the delay

    def _host(self, host: str) -> _Host:
        state = self._hosts.get(host)
        if state is None:
            state = self._hosts[host] = _Host(HostPace(self._pace, self._clock))
        return state

    def honour_crawl_delay(self, host: str, crawl_delay: float | None) -> None:
        """Space this host's requests by its robots.txt Crawl-delay (capped at max_delay)."""
        if crawl_delay is not None:
            self._host(host).pace.floor = max(self.delay, min(crawl_delay, self.max_delay))

    def concurrency_of(self, host: str) -> int:
        """Requests the host may have at once now (0: no cap)."""
        state = self._hosts.get(host)
        return self.concurrency if state is None else state.pace.concurrency()

    def learned(self, host: str) -> LearnedPace | None:
        """The host's adapted pace, or None if it never had to back off here."""
        state = self._hosts.get(host)
        if state is None or not self.adaptive.enabled or not state.pace.current_reason():
            return None
        return state.pace.learned()

    def restore(self, host: str, learned: LearnedPace) -> None:
        """Continue from the pace another worker learned for ``host`` (from the store)."""
        self._host(host).pace.restore(learned)

    def pause(self, host: str, until: float) -> None:
        """Start nothing on ``host`` before ``until`` on the limiter's clock (the store's:
        a pause is shared with every worker through it)."""
        state = self._host(host)
        state.paused_until = max(state.paused_until, until)

    def soonest(self, hosts: Iterable[str], busy: Mapping[str, int]) -> str | None:
        """Of ``hosts``, the one with a free request slot (``busy``: requests under way or
        handed out per host) whose next request may start soonest; None if all are full.

        Asked before every fetch with every host that has work waiting: one pass over the
        limiter's own state, not two lookups through its methods per host.
        """
        best: str | None = None
        best_start = 0.0
        states = self._hosts
        for host in hosts:
            state = states.get(host)
            if state is None:  # never asked: no cap below the setting, no spacing to keep
                cap, start = self.concurrency, 0.0
            else:
                cap = state.pace.concurrency()  # adaptive: may be below the setting
                start = max(0.0, state.due())  # as next_start: -inf (never started) is 0
            if cap > 0 and busy.get(host, 0) >= cap:
                continue
            if best is None or start < best_start:
                best, best_start = host, start
        return best

    def next_start(self, host: str) -> float:
        """Monotonic time the host's next request may start (0: any time)."""
        state = self._hosts.get(host)
        return 0.0 if state is None else max(0.0, state.due())

    def paused_until(self, host: str) -> float:
        state = self._hosts.get(host)
        return 0.0 if state is None else state.paused_until

    def busy_hosts(self) -> list[str]:
        """Hosts with a request under way, or one waiting for its turn (holding the lock)."""
        paced = [
            name for name, state in self._hosts.items() if state.in_flight or state.lock.locked()
        ]
        return [*paced, *self._unpaced]

    def paused_hosts(self, *, longer_than: float = 0.0) -> list[str]:
        horizon = self._clock() + longer_than
        return [name for name, state in self._hosts.items() if state.paused_until > horizon]

    def slot(self, host: str) -> Slot:
        """``async with limiter.slot(host) as turn``: the host's turn for one request."""
        return Slot(self, host)

    async def _take_turn(self, host: str) -> tuple[Turn, _Host | None]:
        """Wait for ``host``'s next turn and count the request as under way on it; the
        host's state, or None for a host with no pacing to keep (counted apart)."""
        fixed = not self.adaptive.enabled and self.concurrency <= 0 and self.delay <= 0
        if fixed and host not in self._hosts:
            # No pacing to keep, but still counted: a claim refresh keeps a busy host.
            self._unpaced[host] = self._unpaced.get(host, 0) + 1
            return Turn(host, self._clock(), None), None
        state = self._host(host)
        # The lock makes waiters take their turns in order, each one delay apart.
        async with state.lock:
            pause = state.paused_until - self._clock()
            if pause > 0:
                await asyncio.sleep(pause)
            # Re-read after each wait: a Crawl-delay or a back-off may have lengthened the
            # spacing (or lowered the concurrency) while this request waited.
            while True:
                if state.full():
                    state.ended.clear()
                    await state.ended.wait()
                    continue
                wait = state.due() - time.monotonic()
                if wait <= 0:
                    break
                await asyncio.sleep(wait)
            state.last_start = time.monotonic()
            state.in_flight += 1
            started = state.pace.started()
        return Turn(host, started, state.pace), state

    def _end_turn(self, host: str, state: _Host | None) -> None:
        if state is None:
            left = self._unpaced.pop(host) - 1
            if left:
                self._unpaced[host] = left
            return
        state.in_flight -= 1
        state.last_end = time.monotonic()
        state.ended.set()


def _host_pace_settings(concurrency: int, delay: float, adaptive: PaceSettings) -> PaceSettings:
    """What each host's pace starts from: the configured delay and concurrency as its floor
    and cap, the adaptive settings for the rest."""
    return PaceSettings(
        enabled=adaptive.enabled,
        min_delay=delay,
        max_delay=adaptive.max_delay,
        concurrency=concurrency,
        recovery_seconds=adaptive.recovery_seconds,
        latency_factor=adaptive.latency_factor,
    )


class Slot:
    """:meth:`HostLimiter.slot`: a class rather than an ``asynccontextmanager`` because it
    is entered once for every request of a crawl, and an async generator costs about twice
    as much (a generator, a finalizer hook and a weak reference each time)."""

    __slots__ = ("_host", "_limiter", "_state")

    def __init__(self, limiter: HostLimiter, host: str) -> None:
        self._limiter = limiter
        self._host = host
        self._state: _Host | None = None

    async def __aenter__(self) -> Turn:
        turn, self._state = await self._limiter._take_turn(self._host)
        return turn

    async def __aexit__(self, *exc_info: object) -> None:
        self._limiter._end_turn(self._host, self._state)
