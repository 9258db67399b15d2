"""The pure parts of the fleet benchmark (``benchmarks/fleet_stats.py``, ``fleet_report.py``):
the figures it reports are only as good as its percentiles, bounds and tables."""

from __future__ import annotations

import importlib.util
import statistics
import sys
from pathlib import Path
from types import ModuleType

import pytest

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"


def _load(name: str) -> ModuleType:
    """Import a benchmark module by its path, under the name its siblings import it by
    (the benchmarks run as scripts from their own directory, not as a package)."""
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, BENCHMARKS / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


stats = _load("fleet_stats")
report = _load("fleet_report")


def test_percentile_matches_the_inclusive_quantiles_of_the_standard_library() -> None:
    values = [0.9, 0.1, 0.5, 0.3, 0.7, 2.0, 1.1]
    cuts = statistics.quantiles(values, n=100, method="inclusive")
    for q in (1, 25, 50, 75, 99):
        assert stats.percentile(values, q) == pytest.approx(cuts[q - 1])
    assert stats.percentile(values, 0) == 0.1
    assert stats.percentile(values, 100) == 2.0
    assert stats.percentile([4.0, 2.0], 50) == 3.0
    assert stats.percentile([7.0], 99) == 7.0


def test_percentile_refuses_what_has_no_answer() -> None:
    with pytest.raises(ValueError, match="no values"):
        stats.percentile([], 50)
    with pytest.raises(ValueError, match="outside"):
        stats.percentile([1.0], 101)


def test_latency_summary_is_in_milliseconds() -> None:
    summary = stats.latency_summary([0.001] * 98 + [0.010, 0.100])
    assert summary["n"] == 100
    assert summary["p50_ms"] == pytest.approx(1.0)
    assert summary["p99_ms"] == pytest.approx(10.9)  # between the 99th and 100th values
    assert summary["max_ms"] == pytest.approx(100.0)
    assert summary["mean_ms"] == pytest.approx((0.098 + 0.110) * 10)
    assert stats.latency_summary([])["p99_ms"] is None


def test_politeness_bound_and_share() -> None:
    assert stats.politeness_bound(40, 1, 0.05) == pytest.approx(800)
    assert stats.politeness_bound(20, 2, 0.5) == pytest.approx(80)
    with pytest.raises(ValueError):
        stats.politeness_bound(40, 1, 0)
    assert stats.percent(200, 800) == pytest.approx(25)
    assert stats.percent(None, 800) is None
    assert stats.percent(5, 0) is None


def test_pending_sizes_are_sorted_unique_and_capped() -> None:
    assert stats.pending_sizes([1_000_000, 10_000, 100_000, 10_000], None) == [
        10_000,
        100_000,
        1_000_000,
    ]
    assert stats.pending_sizes([10_000, 100_000, 1_000_000], 100_000) == [10_000, 100_000]
    assert stats.pending_sizes([0, 5], 1) == []


def test_table_aligns_columns_and_prints_unknowns_as_dashes() -> None:
    text = stats.table(["backend", "pages/s"], [["sqlite", "1,234"], ["postgres", None]])
    lines = text.splitlines()
    assert lines[0] == "backend   pages/s"
    assert set(lines[1]) == {"-"} and len(lines[1]) == len(lines[0])
    assert lines[2] == "sqlite      1,234"
    assert lines[3] == "postgres        -"


def _crawl(backend: str, workers: int, pages_per_second: float, **extra: object) -> dict:
    return {
        "backend": backend,
        "workers": workers,
        "ok": True,
        "check": "ok",
        "pages": 2000,
        "seconds": 2000 / pages_per_second,
        "pages_per_second": pages_per_second,
        "run_pages_per_second": pages_per_second,
        "cpu_seconds": 3.0,
        "server_cpu_seconds": 0.5,
        "busy_percent": 90.0,
        "load_before": [1.0, 1.0, 1.0],
        "load_after": [1.5, 1.0, 1.0],
        **extra,
    }


def _payload() -> dict:
    return {
        "machine": {
            "date": "2026-11-26T09:00:00+00:00",
            "commit": "abc1234",
            "cpus": 2,
            "load_at_start": [0.5, 0.5, 0.5],
            "seconds": 12.0,
        },
        "fleet": [
            _crawl("sqlite", 1, 200.0, politeness_bound=800.0, share_of_bound_percent=25.0),
            _crawl("postgres", 4, 150.0, db_cpu_seconds=4.5, politeness_bound=800.0),
        ],
        "throughput": [
            _crawl(
                "sqlite",
                1,
                1000.0,
                percent_of_sqlite=100.0,
                tables={"tasks": {"rows": 2000, "bytes": 2_000_000}},
            ),
            _crawl(
                "postgres",
                1,
                500.0,
                percent_of_sqlite=50.0,
                tables={
                    "tasks": {
                        "rows": 2000,
                        "inserted": 2000,
                        "updated": 6000,
                        "deleted": 0,
                        "bytes": 3_000_000,
                    }
                },
            ),
        ],
    }


def test_report_shows_each_figure_and_fails_a_failed_crawl() -> None:
    payload = _payload()
    text = report.render(payload)
    assert "politeness bound 800 pages/s" in text
    assert "commit abc1234" in text
    sections = {part.splitlines()[0].split(",")[0]: part for part in text.split("\n\n")}

    def rows(title: str) -> list[list[str]]:
        return [line.split() for line in sections[title].splitlines()[3:]]

    fleet = rows("fleet")
    assert fleet[1][:10] == ["postgres", "4", "2000", "13.33", "150", "150", "-", "3.0", "4.5", "-"]
    assert fleet[0][6] == "25"  # % of the politeness bound
    assert [r[5] for r in rows("one-process crawl")] == ["100", "50"]  # % of SQLite
    # per page: PostgreSQL wrote 4 rows (1 insert + 3 updates) and holds 1,500 bytes
    per_page = rows("store per page crawled (throughput crawl)")
    assert ["postgres", "tasks", "1.00", "4.00", "1,500"] in per_page
    assert ["sqlite", "tasks", "1.00", "-", "1,000"] in per_page
    # 3.0 s of sitesync + 0.5 s of site server CPU for 2000 pages, on 2 CPUs
    cpu = rows("CPU per page (SQLite's database work is inside wrk)")
    assert cpu[0] == ["throughput", "sqlite", "1", "1.50", "-", "0.25", "1.75", "1,143"]
    assert cpu[-1][3:6] == ["1.50", "2.25", "0.25"]  # PostgreSQL's backends, 4.5 s
    assert report.all_ok(payload)
    payload["fleet"][1] = {**payload["fleet"][1], "ok": False, "error": "crawl still running"}
    assert not report.all_ok(payload)
    assert "FAILED: crawl still running" in report.render(payload)
