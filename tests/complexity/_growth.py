"""Measuring how a parser's time grows with its input: the complexity corpus's yardstick.

Each case is timed at 1x, 10x and 100x its unit size, in CPU time of the parsing thread
(``time.thread_time``: what other processes on a shared machine do is not counted, as wall
time would count it), best of a few runs. Linear time makes the 100x run about ten
times the 10x one; quadratic makes it a hundred times. The check allows a generous factor
over linear (``FACTOR``) so that a loaded machine does not fail it, plus a small absolute
slack for runs too short to time, and an absolute budget for the largest input.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

#: How much faster than linear the 100x run may grow over the 10x one before it fails.
FACTOR = 6.0
#: Below this, a run is too short to say anything about growth (timer and scheduler noise).
SLACK = 0.05
#: The largest input of a case must be parsed within this (seconds).
BUDGET = 1.0
SCALES = (1, 10, 100)


@dataclass(frozen=True)
class Case:
    """A pathological input, ``make(n)`` at size n, and the parser it is given to."""

    name: str
    make: Callable[[int], Any]
    parse: Callable[[Any], object]
    unit: int
    budget: float = BUDGET

    def __str__(self) -> str:
        return self.name


def best_time(parse: Callable[[Any], object], data: Any, repeats: int) -> float:
    best = float("inf")
    for _ in range(repeats):
        started = time.thread_time()
        parse(data)
        best = min(best, time.thread_time() - started)
    return best


def growth(case: Case, repeats: int = 2) -> list[tuple[int, float]]:
    """(size of the input, best time) at each scale."""
    results = []
    for scale in SCALES:
        data = case.make(case.unit * scale)
        results.append((len(data), best_time(case.parse, data, repeats)))
    return results


def assert_linear(case: Case) -> None:
    (_, _), (size10, time10), (size100, time100) = growth(case)
    figures = f"{case}: {size10} bytes in {time10:.4f}s, {size100} bytes in {time100:.4f}s"
    assert time100 < case.budget, f"over its budget of {case.budget}s: {figures}"
    linear = time10 * size100 / size10
    assert time100 <= FACTOR * linear + SLACK, f"grows faster than linearly: {figures}"
