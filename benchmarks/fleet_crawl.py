"""Crawls of ``fleet.py``: one process on the throughput site, N on the latency-bound one.

The processes, the site server and the fresh stores are ``workers.py``'s; this adds the CPU
of the PostgreSQL server and what the store holds afterwards (rows written, bytes).
"""

from __future__ import annotations

import argparse
import contextlib
import os
import secrets
import sqlite3
import threading
import time
from dataclasses import asdict
from pathlib import Path
from typing import Any

import psutil
import psycopg
from fleet_stats import percent, politeness_bound
from psycopg import sql
from workers import CrawlResult, Server, crawl_once, fresh_store


def postgres_cpu_total() -> float:
    """CPU seconds of every ``postgres`` process of the machine so far: the live ones, plus
    the ended ones the postmaster reaped (its children's times). Other sessions count too."""
    procs = list(psutil.process_iter(["name", "ppid", "cpu_times"]))
    names = {p.pid: p.info["name"] for p in procs}
    total = 0.0
    for p in procs:
        times = p.info["cpu_times"]
        if p.info["name"] != "postgres" or times is None:
            continue
        total += times.user + times.system
        if names.get(p.info["ppid"]) != "postgres":  # the postmaster
            total += times.children_user + times.children_system
    return total


class BackendCpu(threading.Thread):
    """CPU of the PostgreSQL backends serving one crawl: the connections whose
    ``application_name`` is ``tag``, looked up in ``pg_stat_activity`` and read from /proc
    every ``interval`` seconds (a backend that ends loses at most its last interval)."""

    def __init__(self, dsn: str, tag: str, interval: float = 0.2) -> None:
        super().__init__(daemon=True)
        self.dsn, self.tag, self.interval = dsn, tag, interval
        self.last: dict[int, float] = {}
        self._halt = threading.Event()

    def run(self) -> None:
        with psycopg.connect(self.dsn, autocommit=True, connect_timeout=10) as conn:
            while not self._halt.is_set():
                query = "SELECT pid FROM pg_stat_activity WHERE application_name = %s"
                for (pid,) in conn.execute(query, (self.tag,)).fetchall():
                    with contextlib.suppress(psutil.Error):
                        times = psutil.Process(pid).cpu_times()
                        self.last[pid] = times.user + times.system
                self._halt.wait(self.interval)

    def finish(self) -> float:
        self._halt.set()
        self.join(15)
        return sum(self.last.values())


def with_app_name(dsn: str, tag: str) -> str:
    return f"{dsn}{'&' if '?' in dsn else '?'}application_name={tag}"


def wal_lsn(dsn: str) -> int:
    with psycopg.connect(dsn, autocommit=True, connect_timeout=10) as conn:
        row = conn.execute("SELECT pg_wal_lsn_diff(pg_current_wal_lsn(), '0/0')").fetchone()
    return int(row[0]) if row else 0


def store_tables(backend: str, db: str, pg_dsn: str) -> dict[str, dict[str, int]]:
    """Per table: rows now, and on PostgreSQL rows inserted/updated/deleted and bytes
    (``pg_total_relation_size``: heap, indexes, TOAST)."""
    if backend == "sqlite":
        return sqlite_tables(db)
    schema = db.rsplit("search_path%3D", 1)[1]
    time.sleep(1)  # the crawl's backends report their counts to the statistics as they end
    query = (
        "SELECT relname, n_tup_ins, n_tup_upd, n_tup_del, n_tup_hot_upd, "
        "pg_total_relation_size(relid) FROM pg_stat_user_tables WHERE schemaname = %s"
    )
    out: dict[str, dict[str, int]] = {}
    with psycopg.connect(pg_dsn, autocommit=True, connect_timeout=10) as conn:
        for name, ins, upd, dele, hot, size in conn.execute(query, (schema,)).fetchall():
            count = sql.SQL("SELECT count(*) FROM {}.{}").format(
                sql.Identifier(schema), sql.Identifier(name)
            )
            rows = conn.execute(count).fetchone()
            out[name] = {
                "rows": rows[0] if rows else 0,
                "inserted": ins,
                "updated": upd,
                "deleted": dele,
                "hot_updated": hot,
                "bytes": size,
            }
    return out


def sqlite_tables(db: str) -> dict[str, dict[str, int]]:
    """Rows and bytes (pages of the table and its indexes, from ``dbstat``) per table."""
    sizes = (
        "SELECT m.tbl_name, SUM(d.pgsize) FROM dbstat AS d "
        "JOIN sqlite_master AS m ON m.name = d.name GROUP BY m.tbl_name"
    )
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    with contextlib.closing(conn):
        out = {name: {"bytes": int(size)} for name, size in conn.execute(sizes).fetchall()}
        for name, entry in out.items():
            entry["rows"] = conn.execute(f'SELECT count(*) FROM "{name}"').fetchone()[0]
    return out


def sqlite_bytes(db: str) -> int:
    return sum(
        Path(db + suffix).stat().st_size for suffix in ("", "-wal") if Path(db + suffix).exists()
    )


def measured_crawl(
    server: Server,
    backend: str,
    workers: int,
    ns: argparse.Namespace,
    workdir: Path,
    *,
    expected: int,
    extra_env: dict[str, str],
    tables: bool,
) -> dict[str, Any]:
    """One crawl on a fresh store: ``workers.crawl_once``'s figures plus the load average,
    the PostgreSQL server's CPU and, with ``tables``, what the store holds afterwards."""
    out: dict[str, Any] = {"load_before": os.getloadavg()}
    pg = backend == "postgres"
    tag = f"sitesync_bench_{secrets.token_hex(4)}"
    meter = BackendCpu(ns.pg_dsn, tag) if pg else None
    all_before = postgres_cpu_total() if pg else None
    wal_before = wal_lsn(ns.pg_dsn) if pg else None
    if meter is not None:
        meter.start()
    try:
        with fresh_store(backend, workdir.parent, with_app_name(ns.pg_dsn, tag)) as db:
            r = crawl_once(server, db, workers, ns, workdir, backend=backend,
                           expected=expected, extra_env=extra_env, sample=False)  # fmt: skip
            if meter is not None:
                out["db_cpu_seconds"] = meter.finish()
                out["db_cpu_all_postgres_seconds"] = postgres_cpu_total() - (all_before or 0.0)
                out["wal_bytes_all_sessions"] = wal_lsn(ns.pg_dsn) - (wal_before or 0)
            if tables and r.ok:
                out["tables"] = store_tables(backend, db, ns.pg_dsn)
                if not pg:
                    out["store_bytes"] = sqlite_bytes(db)
    except Exception as exc:  # one failed crawl must not lose the others
        r = CrawlResult(backend, workers, error=f"{type(exc).__name__}: {exc}")
    finally:
        if meter is not None and meter.is_alive():
            meter.finish()
    out["load_after"] = os.getloadavg()
    data = asdict(r)
    data.pop("timeline", None)
    return {**data, **out}


def crawl_ns(args: argparse.Namespace, concurrency: int) -> argparse.Namespace:
    """What ``workers.crawl_once`` reads from its arguments."""
    return argparse.Namespace(
        set=args.set,
        concurrency=concurrency,
        timeout=args.timeout,
        sample_interval=0,
        pg_dsn=args.pg_dsn,
    )


def throughput(args: argparse.Namespace, backends: list[str], tmp: Path) -> list[dict[str, Any]]:
    """One ``sitesync crawl`` process on ``run.py``'s site: loopback, no delay, politeness
    off (per-host concurrency = concurrency, no delay between requests)."""
    spec = {
        "hosts": args.tp_hosts,
        "pages_per_host": args.tp_pages_per_host,
        "links_per_page": 25,
        "page_bytes": 20_000,
    }
    c = args.tp_concurrency
    env = {"SITESYNC_PER_HOST_CONCURRENCY": str(c)}
    expected = args.tp_hosts * args.tp_pages_per_host
    print(
        f"\n== throughput: {args.tp_hosts} x {args.tp_pages_per_host} pages, one process, "
        f"concurrency {c}, politeness off",
        flush=True,
    )
    results = []
    server = Server(spec)
    try:
        for backend in backends:
            label = f"throughput-{backend}"
            print(f"[{label}] running ...", flush=True)
            r = measured_crawl(
                server,
                backend,
                1,
                crawl_ns(args, c),
                tmp / label,
                expected=expected,
                extra_env=env,
                tables=True,
            )
            print(f"[{label}] {crawl_line(r)}", flush=True)
            results.append(r)
    finally:
        server.stop()
    sqlite = next((r for r in results if r["backend"] == "sqlite"), None)
    for r in results:
        base = sqlite["pages_per_second"] if sqlite else None
        r["percent_of_sqlite"] = percent(r["pages_per_second"], base)
    return results


def fleet(args: argparse.Namespace, backends: list[str], tmp: Path) -> list[dict[str, Any]]:
    """``sitesync crawl`` plus N-1 ``sitesync worker`` processes on the latency-bound site."""
    spec = {
        "hosts": args.hosts,
        "pages_per_host": args.pages_per_host,
        "links_per_page": 25,
        "page_bytes": 20_000,
        "delay": args.delay,
    }
    bound = politeness_bound(args.hosts, 1, args.delay)
    expected = args.hosts * args.pages_per_host
    print(
        f"\n== fleet: {args.hosts} hosts x {args.pages_per_host} pages, {args.delay * 1000:g} ms "
        f"per response, concurrency {args.concurrency} per process, per-host concurrency 1, "
        f"politeness bound {bound:g} pages/s",
        flush=True,
    )
    results = []
    server = Server(spec)
    try:
        for backend in backends:
            for n in args.workers:
                label = f"fleet-{backend}-{n}"
                print(f"[{label}] running ...", flush=True)
                r = measured_crawl(
                    server,
                    backend,
                    n,
                    crawl_ns(args, args.concurrency),
                    tmp / label,
                    expected=expected,
                    extra_env={},
                    tables=False,
                )
                r["politeness_bound"] = bound
                r["share_of_bound_percent"] = percent(r["run_pages_per_second"], bound)
                print(f"[{label}] {crawl_line(r)}", flush=True)
                results.append(r)
    finally:
        server.stop()
    return results


def crawl_line(r: dict[str, Any]) -> str:
    if not r.get("ok"):
        return f"FAILED: {r.get('error')}"
    return (
        f"{r['pages']} pages in {r['seconds']:.2f} s ({r['pages_per_second']:.0f} pages/s, "
        f"run {r['run_pages_per_second'] or 0:.0f}), {r['check']}, load {r['load_after'][0]:.2f}"
    )
