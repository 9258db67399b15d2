"""The dashboard's ring of counter samples: rates come from differences between samples."""

from __future__ import annotations

from sitesync.models import Run, RunConfig, RunCounters, RunStatus
from sitesync.readmodel.samples import SampleBook


def run_at(pages: int, pending: int = 5, run_id: int = 1) -> Run:
    counters = RunCounters(pages_fetched=pages, pending=pending, assigned=2)
    return Run(run_id, RunStatus.RUNNING, RunConfig(seeds=("http://a.test/",)), counters, 0.0)


def test_points_carry_the_rate_since_the_previous_sample() -> None:
    book = SampleBook()
    for at, pages in ((100.0, 0), (102.0, 10), (104.0, 30)):
        book.add(run_at(pages), at)
    points = book.points(1)
    assert [p.pages_per_second for p in points] == [0.0, 5.0, 10.0]
    assert (points[-1].pending, points[-1].in_flight) == (5, 2)
    assert book.rate(1) == 7.5  # over the whole window: 30 pages in 4 s
    assert book.points(2) == () and book.rate(2) is None


def test_the_rate_only_looks_back_thirty_seconds_and_the_ring_is_bounded() -> None:
    book = SampleBook(capacity=3)
    for at, pages in ((0.0, 0), (100.0, 1000), (110.0, 1010), (120.0, 1030)):
        book.add(run_at(pages), at)
    assert len(book.points(1)) == 3
    assert book.rate(1) == 1.5  # 30 pages in the last 20 s, not the burst before


def test_a_single_sample_has_no_rate() -> None:
    book = SampleBook()
    book.add(run_at(3), 1.0)
    assert book.rate(1) is None
