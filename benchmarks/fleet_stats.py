"""Pure helpers of ``fleet.py``: percentiles, bounds, ratios and the text tables.

Nothing here touches a store, a process or the clock, so ``tests/unit`` checks it directly.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any


def percentile(values: Sequence[float], q: float) -> float:
    """The ``q``-th percentile (0..100) by linear interpolation between closest ranks.

    The same definition as ``numpy.percentile``'s default and ``statistics.quantiles``'s
    "inclusive" method: p0 is the minimum, p100 the maximum, p50 of an even count the mean
    of the two middle values.
    """
    if not values:
        raise ValueError("percentile of no values")
    if not 0 <= q <= 100:
        raise ValueError(f"percentile {q} is outside 0..100")
    ordered = sorted(values)
    rank = (len(ordered) - 1) * q / 100
    low = math.floor(rank)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (rank - low)


def latency_summary(seconds: Sequence[float]) -> dict[str, float | int | None]:
    """Count, p50, p99, mean and max of call durations given in seconds, in milliseconds."""
    if not seconds:
        return {"n": 0, "p50_ms": None, "p99_ms": None, "mean_ms": None, "max_ms": None}
    return {
        "n": len(seconds),
        "p50_ms": 1000 * percentile(seconds, 50),
        "p99_ms": 1000 * percentile(seconds, 99),
        "mean_ms": 1000 * sum(seconds) / len(seconds),
        "max_ms": 1000 * max(seconds),
    }


def politeness_bound(hosts: int, per_host_concurrency: int, delay: float) -> float:
    """Pages/s no number of workers can exceed: each host serves at most
    ``per_host_concurrency`` requests at once and each takes ``delay`` seconds."""
    if delay <= 0:
        raise ValueError("a politeness bound needs a response delay above 0")
    return hosts * per_host_concurrency / delay


def percent(part: float | None, whole: float | None) -> float | None:
    """``part`` as a percentage of ``whole``; None when either is unknown or whole is 0."""
    if part is None or not whole:
        return None
    return 100 * part / whole


def pending_sizes(requested: Sequence[int], cap: int | None) -> list[int]:
    """The frontier sizes to measure, ascending, without those above ``cap``."""
    sizes = sorted({n for n in requested if n > 0})
    return [n for n in sizes if cap is None or n <= cap]


def fmt(value: float | int | None, spec: str) -> str:
    return "-" if value is None else format(value, spec)


def table(headers: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    """A plain-text table: the first column left-aligned, the others right-aligned; a cell
    that is None prints as ``-``."""
    cells = [[str(h) for h in headers]]
    cells += [["-" if cell is None else str(cell) for cell in row] for row in rows]
    widths = [max(len(row[i]) for row in cells) for i in range(len(headers))]

    def line(row: list[str]) -> str:
        first = row[0].ljust(widths[0])
        rest = [cell.rjust(width) for cell, width in zip(row[1:], widths[1:], strict=True)]
        return "  ".join([first, *rest]).rstrip()

    rule = "-" * len(line(cells[0]))
    return "\n".join([line(cells[0]), rule, *(line(row) for row in cells[1:])])
