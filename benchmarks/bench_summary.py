"""``run.py``'s closing table: each tool over its rounds, against the bare loop of each round.

A tool's rounds give its median pages/s and CPU per page, and its **spread**, (max - min) /
median of its pages/s over the rounds: how far the same command moved in one sitting. Ratios
to the bare loop are taken within each round (the machine as it was then), then their median.
PostgreSQL's one-process crawl is compared with SQLite's the same way.
"""

from __future__ import annotations

import statistics
from typing import Any

#: Pairs compared round by round beside the ratios to the bare loop: (tool, baseline).
PAIRS = (("sitesync-links-pg", "sitesync-links"),)


def _rate(result: Any) -> float | None:
    return result.pages_per_second if result is not None and result.ok else None


def _cpu_per_page(result: Any) -> float | None:
    if result is None or not result.ok or not result.pages or result.cpu_seconds is None:
        return None
    return float(result.cpu_seconds) / result.pages


def _ratios(rounds: list[dict[str, Any]], tool: str, base: str, of: Any) -> list[float]:
    """``of(tool) / of(base)`` in each round where both ran."""
    ratios = []
    for results in rounds:
        mine, theirs = of(results.get(tool)), of(results.get(base))
        if mine is not None and theirs:
            ratios.append(mine / theirs)
    return ratios


def _median(values: list[float]) -> float | None:
    return statistics.median(values) if values else None


def summary_rows(rounds: list[dict[str, Any]], tools: list[str]) -> list[dict[str, Any]]:
    """One row per tool: medians, spread, ratios to the bare loop (each round's and median)."""
    rows = []
    for tool in tools:
        rates = [r for r in (_rate(results.get(tool)) for results in rounds) if r is not None]
        cpu = [c for c in (_cpu_per_page(results.get(tool)) for results in rounds) if c]
        median_rate = _median(rates)
        vs_bare = _ratios(rounds, tool, "bare", _rate) if tool != "bare" else []
        cpu_vs_bare = _ratios(rounds, tool, "bare", _cpu_per_page) if tool != "bare" else []
        rows.append(
            {
                "tool": tool,
                "ok_rounds": len(rates),
                "rounds": len(rounds),
                "pages_per_second": median_rate,
                "spread": (max(rates) - min(rates)) / median_rate if median_rate else None,
                "cpu_ms_per_page": (_median(cpu) or 0) * 1000 if cpu else None,
                "vs_bare_by_round": vs_bare,
                "vs_bare": _median(vs_bare),
                "cpu_per_page_vs_bare": _median(cpu_vs_bare),
            }
        )
    return rows


def _fmt(value: float | None, spec: str, suffix: str = "") -> str:
    return "-" if value is None else format(value, spec) + suffix


def print_summary(rounds: list[dict[str, Any]], tools: list[str]) -> None:
    print(
        f"\nsummary over {len(rounds)} rounds: medians; spread = (max - min) / median of the "
        "rounds' pages/s; x bare = pages/s over the same round's bare loop"
    )
    header = (
        f"{'tool':<20} {'pages/s':>8} {'spread':>7} {'CPU ms/page':>11} {'x bare':>7} "
        f"{'CPU/page x bare':>15}  {'x bare by round':<24} ok"
    )
    print(header)
    print("-" * len(header))
    for row in summary_rows(rounds, tools):
        by_round = ", ".join(f"{r:.2f}" for r in row["vs_bare_by_round"]) or "-"
        print(
            f"{row['tool']:<20} {_fmt(row['pages_per_second'], '.0f'):>8} "
            f"{_fmt(row['spread'] and row['spread'] * 100, '.1f', ' %'):>7} "
            f"{_fmt(row['cpu_ms_per_page'], '.3f'):>11} {_fmt(row['vs_bare'], '.2f', 'x'):>7} "
            f"{_fmt(row['cpu_per_page_vs_bare'], '.2f', 'x'):>15}  {by_round:<24} "
            f"{row['ok_rounds']}/{row['rounds']}"
        )
    for tool, base in PAIRS:
        ratios = _ratios(rounds, tool, base, _rate)
        if ratios:
            listed = ", ".join(f"{r:.2f}x" for r in ratios)
            print(
                f"{tool}/{base} pages/s by round: {listed}; median {_fmt(_median(ratios), '.2f')}x"
            )
