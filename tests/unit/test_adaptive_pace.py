"""The adaptive pace controller on its own, with a clock the test moves."""

from __future__ import annotations

import pytest

from sitesync.fetch.adaptive import HostPace, LearnedPace, PaceSettings


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
            timed_out: bool = False) -> LearnedPace | None:  # fmt: skip
    started = p.started()
    clock.now += elapsed
    return p.answered(started=started, status=status, elapsed=elapsed, timed_out=timed_out)


@pytest.mark.parametrize("status", [503, 429])
def test_an_overload_answer_doubles_the_delay_and_halves_the_concurrency(status: int) -> None:
    clock = Clock()
    p = pace(clock)
    learned = request(p, clock, status=status)
    assert learned is not None and learned.reason == f"backing off after {status}s"
    assert p.delay() == pytest.approx(0.2, abs=0.005)
    assert p.concurrency() == 2


def test_a_timeout_backs_off_too() -> None:
    clock = Clock()
    p = pace(clock)
    request(p, clock, status=0, timed_out=True)
    assert p.delay() > 0.1 and p.reason == "backing off after timeouts"


def test_answers_to_requests_started_before_a_back_off_do_not_count_again() -> None:
    clock = Clock()
    p = pace(clock)
    early = [p.started() for _ in range(4)]  # four requests in flight at the old pace
    clock.now += 0.05
    for started in early:
        p.answered(started=started, status=503, elapsed=0.05)
    assert p.delay() == pytest.approx(0.2, abs=0.005)  # one back-off, not four
    request(p, clock, status=503)  # a request at the new pace fails too: back off again
    assert p.delay() == pytest.approx(0.4, abs=0.01)


def test_recovery_is_slow_and_never_below_the_configured_delay() -> None:
    clock = Clock()
    p = pace(clock)
    for _ in range(3):
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
    assert p.delay() >= 3.0
    clock.now += 1000
    assert p.delay() == 3.0


def test_a_restored_pace_continues_where_the_other_worker_was() -> None:
    clock = Clock()
    first = pace(clock)
    request(first, clock, status=503)
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
    assert request(p, clock, status=503) is not None  # a back-off is always stored
    saved = [request(p, clock, elapsed=0.05) for _ in range(200)]
    stored = [s for s in saved if s is not None]
    assert 1 <= len(stored) < 20
    assert stored[-1].reason == "" and stored[-1].delay == 0.1  # recovered, and said so


def test_one_url_answering_503_among_good_answers_does_not_slow_the_host_further() -> None:
    clock = Clock()
    p = pace(clock)
    request(p, clock, status=503)  # the first one backs off: nothing tells whose fault yet
    first = p.delay()
    for _ in range(10):
        for _ in range(10):
            request(p, clock)  # the rest of the site answers fine
        request(p, clock, status=503)  # that one URL's retry
    assert p.delay() <= first
