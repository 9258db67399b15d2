"""One machine as a small fleet (issue 13, item 8): ``sitesync crawl --processes N`` beside
the bare aiohttp loop, in the same run, on ``run.py``'s site served by nginx as static files
(so the server is not what limits: the Python site costs a core of its own at these rates).

The generated site (``sitesync.testing``) is written out page by page, one directory per
host; nginx listens on each host's loopback address on one port, as the Python site does, so
the pages' absolute links stay right. Each tool runs in its own subprocess; wall and CPU
time come from the kernel (``run.py``'s ``run_measured``, which counts a crawl's helper
processes too). Every sitesync crawl writes to a fresh store and must fetch every page.

    python benchmarks/processes.py [--hosts 20 --pages-per-host 1000 --concurrency 64]
                                   [--processes 1,2] [--db postgresql://...] [--json OUT]

Needs nginx on PATH (``apt-get install nginx``).
"""

from __future__ import annotations

import argparse
import compileall
import contextlib
import json
import os
import shutil
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psycopg
from nginx_site import export_site, free_port, nginx_config, start_nginx
from psycopg import sql
from run import HERE, REPO, child_env, run_measured

from sitesync.testing import SiteSpec


def bare(spec: SiteSpec, port: int, concurrency: int, workdir: Path) -> dict[str, Any]:
    out = workdir / "bare.json"
    cmd = [sys.executable, str(HERE / "bare.py"), "--spec-json", json.dumps(spec.__dict__)]
    cmd += ["--port", str(port), "--concurrency", str(concurrency), "--out", str(out)]
    m = run_measured(cmd, 1800)
    pages = json.loads(out.read_text())["pages"] if out.exists() else 0
    return measured("bare", pages, m)


def sitesync(
    roots: list[str], processes: int, db: str, concurrency: int, workdir: Path
) -> dict[str, Any]:
    out = workdir / f"sitesync-{processes}.json"
    c = str(concurrency)
    cmd = [sys.executable, "-m", "sitesync", "crawl", *roots, "--db", db]
    cmd += ["--processes", str(processes), "--concurrency", c, "--per-host-concurrency", c]
    cmd += ["--delay", "0", "--no-robots", "--no-sitemaps", "--no-progress"]
    cmd += ["--no-adaptive-politeness"]  # politeness off: the loaded machine's latency is no signal
    cmd += ["--summary-json", str(out)]
    m = run_measured(cmd, 1800)
    if m.returncode != 0:
        print(m.stderr[-2000:], file=sys.stderr)
    pages = json.loads(out.read_text())["pages_fetched"] if out.exists() else 0
    return measured(f"sitesync --processes {processes}", pages, m)


def measured(tool: str, pages: int, m: Any) -> dict[str, Any]:
    rate = pages / m.wall_seconds if m.wall_seconds else 0.0
    print(f"[{tool}] {pages} pages in {m.wall_seconds:.1f} s: {rate:.0f} pages/s", flush=True)
    return {
        "tool": tool,
        "pages": pages,
        "seconds": round(m.wall_seconds, 2),
        "pages_per_second": round(rate, 1),
        "cpu_seconds": round(m.cpu_seconds, 2),
        "returncode": m.returncode,
    }


@contextlib.contextmanager
def fresh_store(base: str | None, workdir: Path, processes: int) -> Iterator[str]:
    """A new SQLite file, or a new schema of the PostgreSQL database ``base``."""
    if base is None:
        yield str(workdir / f"sitesync-{processes}.db")
        return
    name = f"bench_processes_{os.getpid()}_{processes}"
    with psycopg.connect(base, autocommit=True) as conn:
        conn.execute(sql.SQL("CREATE SCHEMA {}").format(sql.Identifier(name)))
    try:
        separator = "&" if "?" in base else "?"
        yield f"{base}{separator}options=-csearch_path%3D{name}"
    finally:
        with psycopg.connect(base, autocommit=True) as conn:
            conn.execute(sql.SQL("DROP SCHEMA {} CASCADE").format(sql.Identifier(name)))


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--hosts", type=int, default=20)
    parser.add_argument("--pages-per-host", type=int, default=1000)
    parser.add_argument("--concurrency", type=int, default=64)
    parser.add_argument("--processes", default="1,2", help="comma-separated counts to measure")
    parser.add_argument("--db", help="a PostgreSQL database (a schema per crawl); default SQLite")
    parser.add_argument(
        "--links-only",
        action="store_true",
        help="no plugin, only the crawl's link extraction (default: the built-in plugins)",
    )
    parser.add_argument("--json", type=Path, help="also write the results as JSON here")
    return parser.parse_args()


def main() -> int:
    args = parse_args()
    os.environ.update(child_env("sitesync-links" if args.links_only else ""))
    # Every process of a crawl imports sitesync: with PYTHONDONTWRITEBYTECODE (as on CI) each
    # would compile it again, seconds of CPU per helper that have nothing to do with crawling.
    compileall.compile_dir(REPO / "src", quiet=1)
    spec = SiteSpec(hosts=args.hosts, pages_per_host=args.pages_per_host)
    port = free_port()
    roots = [f"http://{spec.ip(h)}:{port}/" for h in range(spec.hosts)]
    results: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="sitesync-processes-") as tmp:
        work = Path(tmp)
        export_site(spec, port, work / "site")
        prefix = work / "nginx"
        prefix.mkdir()
        config = prefix / "nginx.conf"
        config.write_text(nginx_config(spec, port, work / "site", prefix))
        nginx = start_nginx(config, prefix, spec, port)
        print(f"{spec.hosts} hosts x {spec.pages_per_host} pages on nginx, {os.cpu_count()} CPUs")
        try:
            results.append(bare(spec, port, args.concurrency, work))
            for count in (int(n) for n in args.processes.split(",")):
                with fresh_store(args.db, work, count) as db:
                    results.append(sitesync(roots, count, db, args.concurrency, work))
        finally:
            nginx.terminate()
            nginx.wait(10)
            shutil.rmtree(work / "site", ignore_errors=True)
    base = results[0]["pages_per_second"] or 1.0
    for result in results:
        result["vs_bare"] = round(result["pages_per_second"] / base, 2)
        print(f"{result['tool']:>24}: {result['pages_per_second']:>7.0f} pages/s, "
              f"{result['vs_bare']:.2f}x bare, {result['cpu_seconds']:.0f} s CPU")  # fmt: skip
    if args.json:
        args.json.write_text(json.dumps({"spec": spec.__dict__, "results": results}, indent=2))
    return 0 if all(r["pages"] == spec.hosts * spec.pages_per_host for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())
