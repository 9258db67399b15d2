"""The adaptive pace controller on its own, with a clock the test moves.

Each ``request`` asks a URL of its own unless the test names one: a host's trouble is
judged across URLs (sitesync.fetch.blame), so the tests say which answers come from the
same URL.
"""

from __future__ import annotations

import itertools

import pytest

from sitesync.fetch.adaptive import GUARD_PERIODS, HostPace, LearnedPace, PaceSettings

_urls = itertools.count()


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def pace(clock: Clock, **overrides: object) -> HostPace:
    settings = {"min_delay": 0.1, "max_delay": 5.0, "concurrency": 4, "recovery_seconds": 10.0}
    settings.update(overrides)
    return HostPace(PaceSettings(**settings), clock)  # type: ignore[arg-type]


def request(p: HostPace, clock: Clock, *, status: int = 200, elapsed: float = 0.05,
            timed_out: bool = False, url: str | None = None,
            busy: float = 0.0) -> LearnedPace | None:  # fmt: skip
    started = p.started()
    clock.now += elapsed
    url = url or f"http://a.test/p/{next(_urls)}"
    return p.answered(
        started=started, status=status, elapsed=elapsed, timed_out=timed_out, url=url, busy=busy
    )


@pytest.mark.parametrize("status", [503, 429])
def test_overload_answers_across_urls_double_the_delay_and_halve_the_concurrency(
    status: int,
) -> None:
    clock = Clock()
    p = pace(clock)
    assert request(p, clock, status=status) is None  # one URL: whose trouble, not known yet
    assert p.delay() == 0.1
    learned = request(p, clock, status=status)  # another URL: the host's
    assert learned is not None and learned.reason == f"backing off after {status}s"
    assert p.delay() == pytest.approx(0.2, abs=0.005)
    assert p.concurrency() == 2


def test_timeouts_across_three_urls_back_off_by_the_delay_not_by_the_timeouts() -> None:
    clock = Clock()
    p = pace(clock)
    for _ in range(2):
        assert request(p, clock, status=0, timed_out=True, elapsed=20.0) is None
    learned = request(p, clock, status=0, timed_out=True, elapsed=20.0)
    assert learned is not None and p.reason == "backing off after timeouts"
    # Doubled from 0.1 s, not twice the 20 s the hanging requests spaced the starts by.
    assert p.delay() == pytest.approx(0.2, abs=0.005) and p.concurrency() == 2


def test_answers_to_requests_started_before_a_back_off_do_not_count_again() -> None:
    clock = Clock()
    p = pace(clock)
    early = [p.started() for _ in range(4)]  # four requests in flight at the old pace
    clock.now += 0.05
    for n, started in enumerate(early):
        p.answered(started=started, status=503, elapsed=0.05, url=f"http://a.test/{n}")
    assert p.delay() == pytest.approx(0.2, abs=0.005)  # one back-off, not three
    request(p, clock, status=503)  # a request at the new pace fails too: back off again
    assert p.delay() == pytest.approx(0.4, abs=0.01)


def test_recovery_is_slow_and_never_below_the_configured_delay() -> None:
    clock = Clock()
    p = pace(clock)
    for _ in range(4):  # the first alone is one URL's; then three back-offs
        request(p, clock, status=503)
    slowed = p.delay()
    assert slowed == pytest.approx(0.8, abs=0.02) and p.concurrency() == 1
    clock.now += 10  # one recovery period: the extra delay halves, one request comes back
    assert p.delay() == pytest.approx(0.1 + 0.35, abs=0.01)
    assert p.concurrency() == 2
    clock.now += 1000
    assert p.delay() == 0.1 and p.concurrency() == 4 and p.current_reason() == ""


def test_the_delay_never_exceeds_the_ceiling() -> None:
    clock = Clock()
    p = pace(clock, max_delay=1.0)
    for _ in range(20):
        request(p, clock, status=503)
    assert p.delay() == pytest.approx(1.0)


def test_latency_well_above_normal_backs_off_before_anything_fails() -> None:
    clock = Clock()
    p = pace(clock)
    for _ in range(20):
        assert request(p, clock, elapsed=0.05) is None  # normal: nothing to store
    assert p.delay() == 0.1
    learned = None
    for _ in range(10):
        learned = learned or request(p, clock, elapsed=0.6)
    assert learned is not None and "latency" in learned.reason
    assert p.delay() > 0.1 and p.concurrency() == 3


def test_small_latency_jitter_is_not_a_signal() -> None:
    clock = Clock()
    p = pace(clock)
    for i in range(50):
        request(p, clock, elapsed=0.01 if i % 2 else 0.08)  # 8x apart, but under 0.1 s
    assert p.delay() == 0.1 and p.reason == ""


def test_off_means_the_configured_pace_whatever_the_host_answers() -> None:
    clock = Clock()
    p = pace(clock, enabled=False)
    for _ in range(5):
        assert request(p, clock, status=503) is None
    assert p.delay() == 0.1 and p.concurrency() == 4


def test_a_crawl_delay_floor_wins() -> None:
    clock = Clock()
    p = pace(clock)
    p.floor = 3.0
    request(p, clock, status=503)
    request(p, clock, status=503)
    assert p.delay() >= 3.0
    clock.now += 1000
    assert p.delay() == 3.0


def test_a_restored_pace_continues_where_the_other_worker_was() -> None:
    clock = Clock()
    first = pace(clock)
    for _ in range(3):
        request(first, clock, status=503)
    clock.now += 5
    learned = first.learned()
    second = pace(clock)
    second.restore(learned)
    assert second.delay() == pytest.approx(first.delay())
    assert second.current_reason() == "backing off after 503s"
    clock.now += 7
    assert second.delay() == pytest.approx(first.delay(), rel=0.01)


def test_recovering_stores_the_pace_now_and_then_not_on_every_answer() -> None:
    clock = Clock()
    p = pace(clock, recovery_seconds=2.0)
    request(p, clock, status=503)
    assert request(p, clock, status=503) is not None  # a back-off is always stored
    saved = [request(p, clock, elapsed=0.05) for _ in range(200)]
    stored = [s for s in saved if s is not None]
    assert 1 <= len(stored) < 20
    assert stored[-1].reason == "" and stored[-1].delay == 0.1  # recovered, and said so


@pytest.mark.parametrize("timed_out", [False, True])
def test_one_url_failing_again_and_again_never_slows_the_host(timed_out: bool) -> None:
    clock = Clock()
    p = pace(clock)
    status = 0 if timed_out else 503
    for _ in range(10):
        request(p, clock, status=status, timed_out=timed_out, url="http://a.test/search")
    assert p.delay() == 0.1 and p.concurrency() == 4 and p.reason == ""
    for _ in range(10):
        for _ in range(3):
            request(p, clock)  # the rest of the site answers fine
        request(p, clock, status=status, timed_out=timed_out, url="http://a.test/search")
    assert p.delay() == 0.1 and p.reason == ""


def test_a_few_slow_urls_among_fast_answers_cost_the_host_nothing() -> None:
    """The issue's site: three URLs that stall (each retried twice) among fast pages."""
    clock = Clock()
    p = pace(clock, concurrency=1, min_delay=1.0)
    slow = ["http://a.test/never", "http://a.test/late-headers", "http://a.test/drip"]
    for n in range(150):
        if n % 50 == 25:  # a slow URL is reached, or retried, now and then
            for url in slow[: n // 50 + 1]:
                request(p, clock, status=0, timed_out=True, elapsed=20.0, url=url)
        request(p, clock, elapsed=0.01)
    for url in slow * 2:  # the last retries, with nothing else left to fetch in between
        request(p, clock, status=0, timed_out=True, elapsed=20.0, url=url)
    assert p.delay() == 1.0 and p.reason == ""


def test_three_urls_timing_out_in_a_row_are_the_hosts_trouble() -> None:
    """Nothing answered well in between: the host's answers degrade across URLs."""
    clock = Clock()
    p = pace(clock, concurrency=1, min_delay=1.0)
    for _ in range(5):
        request(p, clock, elapsed=0.01)
    for _ in range(3):
        request(p, clock, status=0, timed_out=True, elapsed=20.0)
    assert p.delay() == pytest.approx(2.0, abs=0.01)
    assert p.reason == "backing off after timeouts"


def test_503s_on_a_share_of_urls_among_good_answers_are_the_hosts() -> None:
    """A host that refuses every other request (a rate limit) is slowed, good answers
    in between or not."""
    clock = Clock()
    p = pace(clock)
    for _ in range(4):
        request(p, clock)
    for _ in range(2):
        request(p, clock)
        request(p, clock, status=503)
    assert p.reason == "backing off after 503s" and p.delay() > 0.1


def test_a_wait_the_crawlers_own_loop_made_is_not_the_sites_latency() -> None:
    clock = Clock()
    p = pace(clock)
    for _ in range(20):
        request(p, clock, elapsed=0.05)
    # The loop was busy for most of each wait (a CPU-heavy plugin): no sample, no back-off.
    for _ in range(30):
        assert request(p, clock, elapsed=0.6, busy=0.55) is None
    assert p.delay() == 0.1 and p.reason == ""
    # Busy for a little of it: the site's own time (0.5 s of 0.6) is a sample, and high.
    learned = None
    for _ in range(3):
        learned = learned or request(p, clock, elapsed=0.6, busy=0.1)
    assert learned is not None and learned.reason.startswith("backing off: latency 0.50 s")


def test_a_rise_in_latency_backs_off_at_the_third_slow_answer() -> None:
    """The median of the last five answers: the third slow one tips it (as before)."""
    clock = Clock()
    p = pace(clock)
    for _ in range(20):
        request(p, clock, elapsed=0.05)
    assert request(p, clock, elapsed=0.25) is None
    assert request(p, clock, elapsed=0.25) is None
    learned = request(p, clock, elapsed=0.25)
    assert learned is not None and learned.reason.startswith("backing off: latency 0.25 s")


def test_recovery_after_503s_stops_below_the_rate_the_host_could_serve() -> None:
    clock = Clock()
    p = pace(clock, min_delay=0.05, recovery_seconds=10.0)
    for _ in range(10):  # served well at 5 answers a second, each in 0.05 s ...
        request(p, clock, elapsed=0.05)
        clock.now += 0.15
    request(p, clock, status=503, elapsed=0.01)  # ... then refused: more than it can take
    request(p, clock, status=503, elapsed=0.01)
    # A fifth under the rate of its last ten good answers (ten, from the first one's end to
    # the refusal), as a delay that runs from each answer's end: less its 0.05 s latency.
    held = 1.25 * (2.02 - 0.05) / 10 - 0.05
    clock.now += 4 * 10.0  # four recovery periods: the back-off alone would be near 0.05 s
    assert p.delay() == pytest.approx(held, rel=0.02)
    assert p.current_reason() == "backing off after 503s"
    clock.now += (GUARD_PERIODS - 4) * 10.0 + 10.0  # held, then one period of recovery
    assert p.delay() == pytest.approx(0.05 + (held - 0.05) / 2, rel=0.05)
    clock.now += 1000
    assert p.delay() == 0.05 and p.current_reason() == ""


def test_timeouts_leave_no_memory_of_a_rate() -> None:
    clock = Clock()
    p = pace(clock, min_delay=0.05, recovery_seconds=10.0)
    for _ in range(10):
        request(p, clock, elapsed=0.2)
    for _ in range(3):
        request(p, clock, status=0, timed_out=True, elapsed=5.0)
    assert p.reason == "backing off after timeouts"
    clock.now += 6 * 10.0  # recovered from the back-off; a guard would still hold it
    assert p.delay() == 0.05


def test_a_site_timed_while_the_crawler_was_busy_is_not_thought_faster_than_it_is() -> None:
    """Waits the loop was busy for most of would make the host's normal far too low (the
    site's time is somewhere in them, but only their idle part is sure): when the crawler
    calms down, the site's unchanged 0.3 s would read as six times its normal."""
    clock = Clock()
    p = pace(clock)
    for _ in range(20):  # the site takes 0.3 s; the loop is busy for 0.95 s of each 1 s wait
        request(p, clock, elapsed=1.0, busy=0.95)
    for _ in range(20):  # the crawler calms down; the site has not changed
        assert request(p, clock, elapsed=0.3) is None
    assert p.delay() == 0.1 and p.reason == ""
