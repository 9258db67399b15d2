"""Adaptive politeness: one host's delay and concurrency, from the host's own answers.

A pure controller (no I/O, an injectable wall clock) that :class:`~sitesync.fetch.politeness.
HostLimiter` asks before each request and tells after each answer.

- It reads **the site's signals only**. A 429, 503 or timeout counts when the host's
  answers show it across URLs, not when it is one URL's (a slow search page, a large
  download): :mod:`sitesync.fetch.blame` weighs that. A latency counts as the site's time
  to answer (first byte) without what the crawler's own event loop added, and only when
  the loop was free for most of the wait (:mod:`sitesync.fetch.loopload`): a busy crawler
  is not a struggling site.
- It **backs off quickly** on those signals: 429s or 503s across URLs double the delay (at
  least to twice the spacing the host actually saw) and halve the concurrency, timeouts
  across URLs double the delay and halve the concurrency; a latency well above the host's
  recent normal multiplies the delay by 1.5 and takes one request off the concurrency. One
  back-off per round: answers to requests that started before the last back-off are the
  old pace's answers, and do not count again.
- It **recovers slowly**: the extra delay halves every ``recovery_seconds`` of calm, and
  one request of concurrency comes back per ``recovery_seconds``. Recovery is a function of
  the time since the last back-off, so a host handed to another worker (with the learned
  delay, through the store) continues where it was.
- It **remembers what was too much**: after 429s or 503s, recovery stops a fifth below the
  rate at which the host was still answering well when it refused (its last good answers
  over the time they took: what a host that refuses the excess can serve), for
  :data:`GUARD_PERIODS` recovery periods, and only then goes on towards the configured
  pace. Without that memory a host that can take 5 requests a second is offered 10 again
  a minute later, and says 503 again: a host's capacity does not change by the minute.
- It never goes below ``min_delay`` (the configured delay, or the robots.txt Crawl-delay
  when larger: those win) nor above ``max_delay``.
"""

from __future__ import annotations

import collections
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass

from sitesync.config import setting_default
from sitesync.fetch.blame import Blame

#: The smallest back-off step, in seconds: doubling a configured delay of 0 gives nothing.
MIN_STEP = 0.1
#: Statuses that say "too much": the host is overloaded or rate limiting.
OVERLOAD_STATUSES = frozenset({429, 503})
#: The current latency is the median of this many last answers: one slow answer (a busy
#: client machine, a garbage collection) is not a trend.
RECENT_SAMPLES = 5
#: Weight of a new (unremarkable) latency sample in the host's recent normal.
NORMAL_WEIGHT = 0.05
#: Samples of latency needed before the host has a normal to compare with.
WARMUP_SAMPLES = 5
#: Latency above normal by less than this is noise, whatever the ratio (fast loopbacks).
MIN_LATENCY_EXCESS = 0.1
#: A wait is a latency sample only if the crawler's event loop was busy for at most this
#: share of it. The sample, the wait less the busy part, is then the site's own time, or at
#: most a quarter under it (the busy part may or may not have been the site's): far from the
#: rise of ``adaptive_latency_factor`` (3) that makes a trend. Waits the loop was busier
#: for tell nothing of the site, and are not samples at all.
BUSY_SHARE = 0.25
#: After 429s/503s, recovery stops at this many times the spacing of the host's last good
#: answers (up to GUARD_ANSWERS of them, over the time since the first of them) ...
GUARD_MARGIN = 1.25
GUARD_ANSWERS = 10
#: ... for this many ``recovery_seconds``, then recovers from there as from a back-off.
GUARD_PERIODS = 5
#: A saved delay is stale once the current one differs from it by this share.
SAVE_CHANGE = 0.1


@dataclass(frozen=True, slots=True)
class PaceSettings:
    enabled: bool = True
    min_delay: float = 0.0  # the configured delay: never faster
    max_delay: float = setting_default("adaptive_max_delay")  # the ceiling: never slower
    concurrency: int = 1  # the configured per-host concurrency (0: no cap, never adapted)
    # Calm time that halves the extra delay.
    recovery_seconds: float = setting_default("adaptive_recovery_seconds")
    latency_factor: float = setting_default("adaptive_latency_factor")  # latency x normal: back off


@dataclass(frozen=True, slots=True)
class LearnedPace:
    """What is stored per host and shown: the delay after the last back-off, when that
    back-off happened (recovery runs from then), and why."""

    delay: float
    concurrency: int
    reason: str
    since: float  # wall clock of the back-off


def describe(host: str, delay: float, reason: str) -> str:
    """``host X: 2.4 s, backing off after 503s``."""
    return f"host {host}: {delay:.1f} s, {reason}" if reason else f"host {host}: {delay:.1f} s"


class HostPace:
    """The adaptive pace of one host."""

    def __init__(self, settings: PaceSettings, clock: Callable[[], float] = time.time) -> None:
        self.settings = settings
        self.clock = clock
        self.floor = settings.min_delay  # raised by a Crawl-delay
        self._peak_delay = settings.min_delay  # delay right after the last back-off
        self._peak_concurrency = settings.concurrency
        self._backoff_at = float("-inf")
        self._guard = 0.0  # the delay recovery stops at, after 429s/503s (0: none)
        self._guard_at = float("-inf")  # when the host last refused
        self.reason = ""
        self._recent: collections.deque[float] = collections.deque(maxlen=RECENT_SAMPLES)
        self._normal: float | None = None  # the host's recent normal latency
        self._samples = 0
        self._served: collections.deque[float] = collections.deque(maxlen=GUARD_ANSWERS)
        self._blame = Blame()  # whose trouble a bad answer is: the host's or its URL's
        self._last_start: float | None = None
        self._spacing: float | None = None  # average time between starts, as sent
        self._saved: LearnedPace | None = None  # the pace last handed out to be stored

    # -- what the limiter asks ------------------------------------------------------------

    def delay(self) -> float:
        """Seconds between requests now: the floor plus what is left of the back-off (or
        of the guard against the rate the host last refused, if that is more)."""
        extra = self._peak_delay - self.floor
        if not self.settings.enabled or extra <= 0:  # asked several times a page: no clock
            return self.floor
        now = self.clock()
        period = self.settings.recovery_seconds
        left: float = extra * 0.5 ** (max(0.0, now - self._backoff_at) / period)
        if self._guard > self.floor:
            held = max(0.0, now - self._guard_at - GUARD_PERIODS * period)
            left = max(left, (self._guard - self.floor) * 0.5 ** (held / period))
        if left < 0.005:  # recovered: the configured pace again
            return self.floor
        return min(max(self.floor, self.settings.max_delay), self.floor + left)

    def concurrency(self) -> int:
        """Requests at once now (0: no cap)."""
        configured = self.settings.concurrency
        if not self.settings.enabled or configured <= 1 or self._backoff_at == float("-inf"):
            return configured  # never backed off (the common case): no clock
        calm = max(0.0, self.clock() - self._backoff_at)
        regained = calm / self.settings.recovery_seconds  # infinite: never backed off
        return min(configured, self._peak_concurrency + int(min(regained, configured)))

    def current_reason(self) -> str:
        """Why the delay is above the floor ("" once recovered)."""
        if self.delay() <= self.floor and self.concurrency() >= self.settings.concurrency:
            return ""
        return self.reason

    def started(self) -> float:
        """A request starts now; returns its start (for :meth:`answered`)."""
        now = self.clock()
        if self._last_start is not None:
            gap = now - self._last_start
            self._spacing = gap if self._spacing is None else 0.7 * self._spacing + 0.3 * gap
        self._last_start = now
        return now

    # -- what the host answered -----------------------------------------------------------

    def answered(
        self,
        *,
        started: float,
        status: int,
        elapsed: float,
        timed_out: bool = False,
        url: str | None = None,
        busy: float = 0.0,
    ) -> LearnedPace | None:
        """Learn from one answer; returns the pace to store when it changed enough.

        ``elapsed``: how long the host took to answer (to the first byte, where known);
        ``busy``: how much of that the crawler's event loop was busy with other work;
        ``url``: what was asked (a URL's repeated failures are that URL's, not the host's).
        """
        if not self.settings.enabled:
            return None
        this_round = started >= self._backoff_at
        if timed_out or status in OVERLOAD_STATUSES:
            if self._blame.bad(url, timed_out=timed_out) and this_round:
                why = "timeouts" if timed_out else f"{status}s"
                self._back_off(2.0, f"backing off after {why}", halve=True, spaced=not timed_out)
                if not timed_out:  # the host said "too much": remember what it could take
                    self._guard_from_served()
                return self._to_save(force=True)
            return None
        if status <= 0:
            return None  # no answer (refused, reset): the dead-host logic's business
        self._blame.good(url)
        self._served.append(self.clock())
        if busy > BUSY_SHARE * elapsed:
            return self._to_save(force=False)  # mostly the crawler's own wait: not a sample
        if self._latency_high(elapsed - busy) and this_round:
            assert self._normal is not None
            current = statistics.median(self._recent)
            why = (
                f"backing off: latency {current:.2f} s, "
                f"{current / max(self._normal, 1e-3):.0f}x its normal {self._normal:.2f} s"
            )
            self._recent.clear()  # measure the new pace afresh
            self._back_off(1.5, why, halve=False)
            return self._to_save(force=True)
        return self._to_save(force=False)

    def _latency_high(self, elapsed: float) -> bool:
        self._samples += 1
        self._recent.append(elapsed)
        if self._normal is None:
            self._normal = elapsed
            return False
        current = statistics.median(self._recent)
        high = len(self._recent) == RECENT_SAMPLES
        high = high and current > self.settings.latency_factor * self._normal
        high = high and current - self._normal > MIN_LATENCY_EXCESS
        # The normal follows unremarkable samples, and drifts only slowly towards high ones
        # (a host that is slower for good becomes the new normal, not a back-off forever).
        weight = NORMAL_WEIGHT if elapsed <= 1.5 * self._normal else NORMAL_WEIGHT / 5
        self._normal = _mix(self._normal, elapsed, weight)
        return high and self._samples > WARMUP_SAMPLES

    def _guard_from_served(self) -> None:
        """The host refused: recovery will stop a little below the rate of its last good
        answers, up to now (a host that refuses the excess serves what it can); never
        slower than the back-off just made (old answers tell a rate too low)."""
        now = self.clock()
        if len(self._served) >= 2:
            spacing = GUARD_MARGIN * (now - self._served[0]) / len(self._served)
            # The delay runs from each answer's end: its latency is part of the spacing.
            delay = spacing - (self._normal or 0.0)
            self._guard = min(self._peak_delay, max(self.floor, delay))
            self._guard_at = now

    def _back_off(self, factor: float, reason: str, *, halve: bool, spaced: bool = False) -> None:
        current = self.delay()
        step = max(current * factor, MIN_STEP)
        if spaced and self._spacing is not None:
            # Half the rate the host actually saw. Not after timeouts: requests that hang
            # space the next ones out themselves, and twice that would be a minute.
            step = max(step, 2 * self._spacing)
        ceiling = max(self.floor, self.settings.max_delay)
        concurrency = self.concurrency()
        if concurrency > 1:
            concurrency = max(1, concurrency // 2 if halve else concurrency - 1)
        self._peak_delay = min(ceiling, max(step, self.floor))
        self._peak_concurrency = concurrency
        self._backoff_at = self.clock()
        self.reason = reason

    def _to_save(self, *, force: bool) -> LearnedPace | None:
        learned = self.learned()
        saved = self._saved
        if not force:
            if saved is None:
                return None  # never backed off: nothing to tell the fleet
            recovered = not learned.reason and saved.reason
            if not recovered and abs(learned.delay - saved.delay) <= SAVE_CHANGE * saved.delay:
                return None
        self._saved = learned
        return learned

    def learned(self) -> LearnedPace:
        return LearnedPace(
            delay=self.delay(),
            concurrency=self.concurrency(),
            reason=self.current_reason(),
            since=self.clock(),
        )

    def retune(self, settings: PaceSettings) -> None:
        """Go on under new settings (a run's politeness changed while it goes on): the new
        delay is the floor unless the host's Crawl-delay keeps it higher, and what is left
        of a back-off stays, within the new bounds."""
        crawl_delay_floor = self.floor if self.floor > self.settings.min_delay else 0.0
        self.settings = settings
        self.floor = max(settings.min_delay, crawl_delay_floor)
        self._peak_delay = max(self.floor, min(self._peak_delay, settings.max_delay))
        if settings.concurrency > 0:
            self._peak_concurrency = min(self._peak_concurrency, settings.concurrency)

    # -- shared through the store ---------------------------------------------------------

    def restore(self, learned: LearnedPace) -> None:
        """Continue from what another worker learned (stored at ``learned.since``)."""
        if not self.settings.enabled or learned.delay <= self.floor:
            return
        self._peak_delay = min(max(self.floor, self.settings.max_delay), learned.delay)
        self._peak_concurrency = max(1, learned.concurrency)
        self._backoff_at = learned.since
        self.reason = learned.reason
        self._saved = learned


def _mix(average: float, sample: float, weight: float) -> float:
    return (1 - weight) * average + weight * sample
