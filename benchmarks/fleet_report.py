"""The text report of ``fleet.py`` from its JSON payload (pure: nothing is measured here)."""

from __future__ import annotations

from typing import Any

from fleet_stats import fmt, table


def _load(r: dict[str, Any]) -> str:
    """The 1-minute load average after the measurement (before it in brackets)."""
    before, after = r.get("load_before"), r.get("load_after")
    first = before[0] if isinstance(before, list | tuple) else before
    last = after[0] if isinstance(after, list | tuple) else after
    return f"{fmt(last, '.2f')} ({fmt(first, '.2f')})"


def _check(r: dict[str, Any]) -> str:
    if not r.get("ok"):
        return f"FAILED: {r.get('error')}"
    return str(r.get("check", "ok"))


def lifecycles(rows: list[dict[str, Any]]) -> str:
    headers = [
        "backend",
        "tasks",
        "links",
        "lifecycles/s",
        "floor/s",
        "of floor",
        "bare table/s",
        "acq+rep/s",
        "admit s",
        "claim s",
        "acquire s",
        "report s",
        "stmts/task",
        "tx/task",
        "load (before)",
        "check",
    ]
    out = []
    for r in rows:
        tasks = r.get("tasks") or 0
        stmts = r.get("statements") or {}
        sent = stmts.get("execute", 0) + stmts.get("executemany", 0)
        rate, floor = r.get("lifecycles_per_second"), (r.get("floor") or {})
        floor_rate = floor.get("lifecycles_per_second") if floor.get("ok") else None
        bare = r.get("floor_bare") or {}
        bare_rate = bare.get("lifecycles_per_second") if bare.get("ok") else None
        out.append(
            [
                r["backend"],
                tasks,
                r.get("links_per_task"),
                fmt(rate, ",.0f"),
                fmt(floor_rate, ",.0f"),
                fmt(rate / floor_rate if rate and floor_rate else None, ".0%"),
                fmt(bare_rate, ",.0f"),
                fmt(r.get("acquire_report_per_second"), ",.0f"),
                fmt(r.get("admit_seconds"), ".2f"),
                fmt(r.get("claim_seconds"), ".3f"),
                fmt(r.get("acquire_seconds"), ".2f"),
                fmt(r.get("report_seconds"), ".2f"),
                fmt(sent / tasks if stmts and tasks else None, ".2f"),
                fmt(stmts.get("transactions", 0) / tasks if stmts and tasks else None, ".3f"),
                _load(r),
                _check(r),
            ]
        )
    title = (
        "store lifecycles (add_tasks + acquire + report, in-process); floor: the same rows"
        " in plain SQL, same schema and transactions (fleet_floor.py); bare table: the same"
        " statements on a table with only its URL index\n"
    )
    return title + table(headers, out)


def latency(rows: list[dict[str, Any]]) -> str:
    headers = [
        "backend",
        "pending",
        "built in s",
        "acquire p50 ms",
        "p99 ms",
        "claim p50 ms",
        "p99 ms",
        "status p50 ms",
        "p99 ms",
        "run page p50 ms",
        "p99 ms",
        "leases/call",
        "unanalyzed",
        "load",
    ]
    out = []
    for r in rows:
        if "error" in r:
            out.append([r["backend"], "FAILED", r["error"]] + [None] * 11)
            continue
        a, c = r["acquire"], r["claim"]
        st, page = r.get("status") or {}, r.get("run_page") or {}
        out.append(
            [
                r["backend"],
                f"{r['pending']:,}",
                fmt(r["build_seconds"], ".1f"),
                fmt(a["p50_ms"], ".2f"),
                fmt(a["p99_ms"], ".2f"),
                fmt(c["p50_ms"], ".2f"),
                fmt(c["p99_ms"], ".2f"),
                fmt(st.get("p50_ms"), ".2f"),
                fmt(st.get("p99_ms"), ".2f"),
                fmt(page.get("p50_ms"), ".2f"),
                fmt(page.get("p99_ms"), ".2f"),
                fmt(r["leases_per_acquire"], ".1f"),
                fmt(r.get("planner", {}).get("changed_since_analyze"), ","),
                fmt(r["load_1min"], ".2f"),
            ]
        )
    return "acquire latency against pending tasks\n" + table(headers, out)


def _crawl_cells(r: dict[str, Any]) -> list[Any]:
    return [
        fmt(r.get("pages"), "d"),
        fmt(r.get("seconds"), ".2f"),
        fmt(r.get("pages_per_second"), ".0f"),
        fmt(r.get("run_pages_per_second"), ".0f"),
    ]


def _cpu_cells(r: dict[str, Any]) -> list[Any]:
    return [
        fmt(r.get("cpu_seconds"), ".1f"),
        fmt(r.get("db_cpu_seconds"), ".1f"),
        fmt(r.get("db_cpu_all_postgres_seconds"), ".1f"),
        fmt(r.get("server_cpu_seconds"), ".1f"),
        fmt(r.get("busy_percent"), ".0f"),
        _load(r),
        _check(r),
    ]


CPU_HEADERS = ["wrk CPU s", "db CPU s", "all pg s", "srv CPU s", "busy %", "load (before)", "check"]


def throughput(rows: list[dict[str, Any]]) -> str:
    headers = ["backend", "pages", "seconds", "pages/s", "run p/s", "% of sqlite", *CPU_HEADERS]
    out = [
        [r["backend"], *_crawl_cells(r), fmt(r.get("percent_of_sqlite"), ".0f"), *_cpu_cells(r)]
        for r in rows
    ]
    return "one-process crawl, throughput site, politeness off\n" + table(headers, out)


def fleet(rows: list[dict[str, Any]]) -> str:
    headers = [
        "backend",
        "workers",
        "pages",
        "seconds",
        "pages/s",
        "run p/s",
        "% of bound",
        *CPU_HEADERS,
    ]
    out = [
        [
            r["backend"],
            r["workers"],
            *_crawl_cells(r),
            fmt(r.get("share_of_bound_percent"), ".0f"),
            *_cpu_cells(r),
        ]
        for r in rows
    ]
    bound = next((r["politeness_bound"] for r in rows if r.get("politeness_bound")), None)
    title = f"fleet, latency-bound site (politeness bound {fmt(bound, ',.0f')} pages/s)"
    return title + "\n" + table(headers, out)


def cpu_per_page(rows: list[dict[str, Any]], cpus: int) -> str:
    """CPU milliseconds per page of every crawl, and the pages/s the machine's CPUs would
    allow at that cost if nothing else ran (a ceiling, not a prediction)."""
    headers = [
        "crawl",
        "backend",
        "workers",
        "wrk ms",
        "db ms",
        "srv ms",
        "total ms",
        "CPU cap p/s",
    ]
    out = []
    for r in rows:
        pages = r.get("pages")
        if not r.get("ok") or not pages:
            continue
        parts = [r.get("cpu_seconds"), r.get("db_cpu_seconds"), r.get("server_cpu_seconds")]
        total = sum(p or 0.0 for p in parts)
        out.append([
            r["crawl"], r["backend"], r["workers"],
            *(fmt(None if p is None else 1000 * p / pages, ".2f") for p in parts),
            fmt(1000 * total / pages, ".2f"), fmt(cpus * pages / total if total else None, ",.0f"),
        ])  # fmt: skip
    return "CPU per page (SQLite's database work is inside wrk)\n" + table(headers, out)


def per_page(rows: list[dict[str, Any]]) -> str:
    """What the throughput crawl left in the store, per page crawled."""
    headers = ["backend", "table", "rows/page", "written/page", "bytes/page"]
    out = []
    for r in rows:
        pages, tables = r.get("pages"), r.get("tables")
        if not pages or not tables:
            continue
        total_written = total_bytes = 0
        for name, t in sorted(tables.items(), key=lambda kv: -kv[1].get("bytes", kv[1]["rows"])):
            written = sum(t.get(k, 0) for k in ("inserted", "updated", "deleted"))
            total_written += written
            total_bytes += t.get("bytes", 0)
            if not t["rows"] and not written:
                continue
            size = fmt(t["bytes"] / pages, ",.0f") if "bytes" in t else None
            has_stats = "inserted" in t
            out.append(
                [
                    r["backend"],
                    name,
                    fmt(t["rows"] / pages, ".2f"),
                    fmt(written / pages if has_stats else None, ".2f"),
                    size,
                ]
            )
        store_bytes = r.get("store_bytes", total_bytes)
        written_cell = fmt(total_written / pages, ".2f") if r["backend"] == "postgres" else None
        out.append([r["backend"], "ALL", None, written_cell, fmt(store_bytes / pages, ",.0f")])
    return "store per page crawled (throughput crawl)\n" + table(headers, out)


def render(payload: dict[str, Any]) -> str:
    m = payload["machine"]
    parts = [
        f"\nfleet benchmark, {m['date']}, commit {m['commit']}, {m['cpus']} CPUs, "
        f"load {m['load_at_start'][0]:.2f} at start, {m.get('seconds', 0):.0f} s"
    ]
    sections = [
        ("lifecycles", lifecycles),
        ("latency", latency),
        ("throughput", throughput),
        ("fleet", fleet),
    ]
    for key, render_one in sections:
        if payload.get(key):
            parts.append(render_one(payload[key]))
    crawls = [{**r, "crawl": key} for key in ("throughput", "fleet") for r in payload.get(key, [])]
    if crawls:
        parts.append(cpu_per_page(crawls, m["cpus"] or 1))
    if payload.get("throughput"):
        parts.append(per_page(payload["throughput"]))
    return "\n\n".join(parts)


def all_ok(payload: dict[str, Any]) -> bool:
    crawls = [*payload.get("throughput", []), *payload.get("fleet", [])]
    return (
        all(r.get("ok") and r.get("check") == "ok" for r in crawls)
        and all(r.get("ok") for r in payload.get("lifecycles", []))
        and all("error" not in r for r in payload.get("latency", []))
    )
