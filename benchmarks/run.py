"""Throughput benchmark: sitesync (one process and every core, with and without plugins)
against a bare aiohttp loop (and Scrapy, on request), on a loopback site.

The site is served by nginx (or, with ``--server python``, by ``sitesync.testing``) in its own
process; each tool runs in its own subprocess, so wall time, CPU time (user + sys, its child
processes included) and peak RSS are measured per tool from ``os.wait4``'s rusage. Every tool
runs ``--rounds`` times (3), in a rotated order; the summary gives each tool's median, the
spread of its rounds and its ratios to the bare loop of the same round.
See ``benchmarks/README.md``.

    python benchmarks/run.py [--hosts 20 --pages-per-host 1000 | --pages N] [--concurrency 64]
                             [--rounds 3] [--server nginx|python] [--scrapy]
                             [--pg-dsn postgresql://...] [--only TOOL ...] [--json OUT]
"""

from __future__ import annotations

import argparse
import compileall
import contextlib
import json
import os
import secrets
import select
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import psutil
import psycopg
from bench_summary import print_summary, summary_rows
from nginx_site import NginxSite, stop_process
from psycopg import sql

from sitesync.testing import SiteSpec

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
#: The sitesync sources the tools run (``--src``: another checkout's, for figures before
#: and after a change from one harness, in one sitting).
SOURCES = {"src": REPO / "src"}
STATS_PATH = "/__bench_stats__"
#: Every tool, in the order of the tables. ``-cores``: ``sitesync crawl`` with its default
#: ``processes`` (one per core), as users run it; the others one process. ``-links``: no
#: plugin. ``-pg``: on PostgreSQL (``--pg-dsn``), the others on SQLite.
TOOLS = (
    "bare",
    "scrapy",
    "sitesync-links",
    "sitesync-links-cores",
    "sitesync",
    "sitesync-cores",
    "sitesync-links-pg",
)
#: The tools run unless --only names others: Scrapy on request (it takes the longest),
#: PostgreSQL when a DSN is given.
OPTIONAL = ("scrapy", "sitesync-links-pg")
#: The built-in plugins (records and stored bodies), as users run them.
BUILTIN_PLUGINS = "page,links,navigation,assets"


@dataclass
class Measured:
    """What the OS says about one finished subprocess."""

    returncode: int
    wall_seconds: float
    cpu_seconds: float
    peak_rss_mb: float
    stdout: str
    stderr: str
    timed_out: bool = False


@dataclass
class ToolResult:
    tool: str
    ok: bool = False
    pages: int | None = None
    seconds: float | None = None
    pages_per_second: float | None = None
    cpu_seconds: float | None = None
    peak_rss_mb: float | None = None
    server_cpu_seconds: float | None = None
    server_requests: int | None = None
    server_200s: int | None = None
    pages_check: str = "n/a"  # "ok", or what was wrong with the page count
    error: str | None = None
    details: dict[str, Any] = field(default_factory=dict)


def child_env(tool: str = "") -> dict[str, str]:
    env = dict(os.environ)
    # Bytecode as an installed package has it: without the cache each process would compile
    # every module it imports (about 1 s of CPU for sitesync), measured as part of the crawl.
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    # Children import sitesync from this checkout even when the venv's editable install is absent.
    src = str(SOURCES["src"])
    env["PYTHONPATH"] = src + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    # The built-in plugins, as users run them: the dev extra also installs the test suite's
    # example plugin, which would add its records to every page measured.
    # sitesync-links: no plugin at all, only the crawl's own link extraction.
    if tool.startswith("sitesync-links"):
        env["SITESYNC_PLUGINS"] = ""
    else:
        env.setdefault("SITESYNC_PLUGINS", BUILTIN_PLUGINS)
    if tool.endswith("-cores"):
        env.pop("SITESYNC_PROCESSES", None)  # the default: one process per core
    # The generated site is on loopback, which crawls refuse unless it is opened.
    env.setdefault("SITESYNC_ALLOWED_NETWORKS", "127.0.0.0/8,::1/128")
    return env


def run_measured(cmd: list[str], timeout: float, tool: str = "") -> Measured:
    """Run ``cmd`` to completion; wall, CPU and peak RSS come from the kernel's rusage."""
    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
        started = time.monotonic()
        proc = subprocess.Popen(cmd, stdout=out, stderr=err, env=child_env(tool), cwd=REPO)
        timed_out = False
        while True:
            # wait4 (not Popen.wait) because only it returns the child's own rusage.
            pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
            if pid:
                break
            if time.monotonic() - started > timeout:
                timed_out = True
                proc.kill()
                pid, status, usage = os.wait4(proc.pid, 0)
                break
            time.sleep(0.02)
        wall = time.monotonic() - started
        proc.returncode = os.waitstatus_to_exitcode(status)  # tell Popen it was reaped
        out.seek(0)
        err.seek(0)
        return Measured(
            returncode=proc.returncode,
            wall_seconds=wall,
            cpu_seconds=usage.ru_utime + usage.ru_stime,
            peak_rss_mb=usage.ru_maxrss / 1024,  # KiB on Linux
            stdout=out.read(),
            stderr=err.read(),
            timed_out=timed_out,
        )


class Server:
    """The generated site in its own process, so it does not steal the measured tool's CPU time."""

    def __init__(self, spec: dict[str, Any]) -> None:
        cmd = [
            sys.executable,
            "-m",
            "sitesync.testing",
            "--hosts",
            str(spec["hosts"]),
            "--pages-per-host",
            str(spec["pages_per_host"]),
            "--page-bytes",
            str(spec["page_bytes"]),
            "--links-per-page",
            str(spec["links_per_page"]),
            "--port",
            "0",
            "--no-log",
            "--stats-path",
            STATS_PATH,
        ]
        self.proc = subprocess.Popen(
            cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=child_env()
        )
        line = self._first_line(timeout=30)
        info = json.loads(line)
        self.port: int = info["port"]
        self.root_urls: list[str] = info["root_urls"]
        self.ps = psutil.Process(self.proc.pid)

    def _first_line(self, timeout: float) -> str:
        assert self.proc.stdout is not None
        # select before readline: a server that dies or hangs must not hang the harness.
        ready, _, _ = select.select([self.proc.stdout], [], [], timeout)
        line = self.proc.stdout.readline() if ready else ""
        if not line.strip():
            self.proc.kill()
            self.proc.wait()
            stderr = self.proc.stderr.read() if self.proc.stderr else ""
            self.stop()
            raise RuntimeError(f"site server did not start: {stderr.strip()[-2000:]}")
        return line

    def stats(self) -> dict[str, Any]:
        url = self.root_urls[0].rstrip("/") + STATS_PATH
        with urllib.request.urlopen(url, timeout=10) as resp:
            data: dict[str, Any] = json.load(resp)
        return data

    def cpu_seconds(self) -> float:
        times = self.ps.cpu_times()
        return float(times.user + times.system)

    def stop(self) -> None:
        stop_process(self.proc)
        for stream in (self.proc.stdout, self.proc.stderr):
            if stream is not None:
                stream.close()


def tool_command(
    tool: str, server: Any, args: argparse.Namespace, workdir: Path, out_json: Path, db: str
) -> list[str]:
    c = str(args.concurrency)
    if tool == "bare":
        cmd = [sys.executable, str(HERE / "bare.py"), "--spec-json", json.dumps(args.spec)]
        return [*cmd, "--port", str(server.port), "--concurrency", c, "--out", str(out_json)]
    if tool == "scrapy":
        cmd = [sys.executable, str(HERE / "scrapy_crawl.py")]
        cmd += ["--roots-json", json.dumps(server.root_urls), "--concurrency", c]
        return [*cmd, "--out", str(out_json)]
    cmd = [sys.executable, "-m", "sitesync", "crawl", *server.root_urls, "--db", db]
    cmd += [
        "--concurrency",
        c,
        "--per-host-concurrency",
        c,
        "--delay",
        "0",
        # Politeness off, as for the other tools: on a loaded 2-core machine the
        # loopback's latency swings, and adapting to it would measure the machine.
        "--no-adaptive-politeness",
        "--no-robots",
        "--no-sitemaps",
    ]
    if not tool.endswith("-cores"):
        cmd += ["--processes", "1"]  # one process, as the bare loop
    return [*cmd, "--no-progress", "--summary-json", str(out_json)]


@contextlib.contextmanager
def fresh_db(tool: str, args: argparse.Namespace, workdir: Path) -> Iterator[str]:
    """A new SQLite file, or for ``-pg`` a new schema of ``--pg-dsn``, dropped afterwards."""
    if not tool.endswith("-pg"):
        yield str(workdir / "sitesync.db")
        return
    name = f"bench_run_{os.getpid()}_{secrets.token_hex(3)}"
    with psycopg.connect(args.pg_dsn, autocommit=True) as conn:
        conn.execute(sql.SQL("CREATE SCHEMA {}").format(sql.Identifier(name)))
    try:
        separator = "&" if "?" in args.pg_dsn else "?"
        yield f"{args.pg_dsn}{separator}options=-csearch_path%3D{name}"
    finally:
        with psycopg.connect(args.pg_dsn, autocommit=True) as conn:
            conn.execute(sql.SQL("DROP SCHEMA {} CASCADE").format(sql.Identifier(name)))


def run_tool(tool: str, server: Any, args: argparse.Namespace, workdir: Path) -> ToolResult:
    result = ToolResult(tool)
    out_json = workdir / f"{tool}.json"
    counts = isinstance(server, Server)  # the Python site counts what it served; nginx not
    before = server.stats() if counts else {}
    cpu_before = server.cpu_seconds()
    print(f"[{tool}] running ...", flush=True)
    with fresh_db(tool, args, workdir) as db:
        cmd = tool_command(tool, server, args, workdir, out_json, db)
        m = run_measured(cmd, args.timeout, tool)
    result.server_cpu_seconds = server.cpu_seconds() - cpu_before
    if counts:
        after = server.stats()
        # The first stats request (a 200) is counted between the two readings: subtract it
        # so the deltas are the tool's alone.
        result.server_requests = after["served"] - before["served"] - 1
        result.server_200s = after["status"].get("200", 0) - before["status"].get("200", 0) - 1
    result.seconds = m.wall_seconds
    result.cpu_seconds = m.cpu_seconds
    result.peak_rss_mb = m.peak_rss_mb
    if m.timed_out or m.returncode != 0 or not out_json.exists():
        why = "timed out" if m.timed_out else f"exit code {m.returncode}"
        tail = (m.stderr.strip() or m.stdout.strip())[-1500:]
        result.error = f"{why}; no result file" if not out_json.exists() else why
        if tail:
            result.error += "\n" + tail
        return result
    try:
        report: dict[str, Any] = json.loads(out_json.read_text())
    except ValueError as exc:
        result.error = f"unreadable result JSON: {exc}"
        return result
    result.details = report
    return checked(result, report, args.spec["hosts"] * args.spec["pages_per_host"])


def checked(result: ToolResult, report: dict[str, Any], expected: int) -> ToolResult:
    """The tool's page count (and the server's, where it counts) against the site's."""
    if result.tool.startswith("sitesync"):
        pages = report.get("pages_fetched", report.get("completed"))
    else:
        pages = report.get("pages")
    if not isinstance(pages, int):
        result.error = f"result JSON has no page count: {report}"
        return result
    result.ok = True
    result.pages = pages
    seconds = result.seconds
    result.pages_per_second = pages / seconds if seconds else None
    problems = []
    if pages != expected:
        problems.append(f"tool reports {pages} pages, site has {expected}")
    if result.server_200s is not None and result.server_200s != expected:
        problems.append(f"server sent {result.server_200s} pages (200s), site has {expected}")
    result.pages_check = "ok" if not problems else "; ".join(problems)
    return result


def fmt(value: float | int | None, spec: str) -> str:
    return "-" if value is None else format(value, spec)


def ratio(a: float | None, b: float | None) -> str:
    return "n/a" if a is None or not b else f"{a / b:.2f}x"


def print_table(results: dict[str, ToolResult]) -> None:
    header = (
        f"{'tool':<20} {'pages':>7} {'seconds':>8} {'pages/s':>8} {'CPU s':>7} "
        f"{'CPU ms/page':>11} {'peak RSS MB':>11} {'srv CPU s':>9}  check"
    )
    print()
    print(header)
    print("-" * len(header))
    for tool in TOOLS:
        r = results.get(tool)
        if r is None:
            continue
        ms = per_page(r)
        print(
            f"{tool:<20} {fmt(r.pages, 'd'):>7} {fmt(r.seconds, '.2f'):>8} "
            f"{fmt(r.pages_per_second, '.0f'):>8} {fmt(r.cpu_seconds, '.2f'):>7} "
            f"{fmt(ms and ms * 1000, '.3f'):>11} "
            f"{fmt(r.peak_rss_mb, '.0f'):>11} {fmt(r.server_cpu_seconds, '.2f'):>9}  "
            f"{r.pages_check if r.ok else 'FAILED'}"
        )
    for mine in (r for r in results.values() if r.tool.startswith("sitesync")):
        for other in ("scrapy", "bare"):
            theirs = results.get(other)
            if theirs is None or not (mine.ok and theirs.ok):
                continue
            print(
                f"{mine.tool}/{other}: pages/s "
                f"{ratio(mine.pages_per_second, theirs.pages_per_second)}, "
                f"CPU s {ratio(mine.cpu_seconds, theirs.cpu_seconds)}, "
                f"CPU s/page {ratio(per_page(mine), per_page(theirs))}, "
                f"peak RSS {ratio(mine.peak_rss_mb, theirs.peak_rss_mb)}"
            )
    for r in results.values():
        if r.error:
            print(f"\n[{r.tool}] FAILED: {r.error}")


def per_page(r: ToolResult) -> float | None:
    return r.cpu_seconds / r.pages if r.cpu_seconds is not None and r.pages else None


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--hosts", type=int, default=20)
    parser.add_argument("--pages-per-host", type=int, default=1000)
    parser.add_argument(
        "--pages", type=int, help="pages of the whole site (sets --pages-per-host to N / hosts)"
    )
    parser.add_argument(
        "--rounds", type=int, default=3, help="run every tool N times, in a rotated order"
    )
    parser.add_argument("--links-per-page", type=int, default=25)
    parser.add_argument("--page-bytes", type=int, default=20_000)
    parser.add_argument("--concurrency", type=int, default=64)
    parser.add_argument(
        "--server",
        choices=("nginx", "python"),
        default="nginx" if shutil.which("nginx") else "python",
        help="nginx serving the pages as files (the default when installed), or the Python "
        "site (sitesync.testing), which also counts what it served but costs a core",
    )
    parser.add_argument("--scrapy", action="store_true", help="also run Scrapy")
    parser.add_argument("--skip-scrapy", action="store_true", help="(the default now)")
    parser.add_argument(
        "--pg-dsn",
        default=os.environ.get("SITESYNC_BENCH_POSTGRES_DSN"),
        help="a PostgreSQL database (a schema per crawl, dropped after): adds "
        "sitesync-links-pg, one process (default: $SITESYNC_BENCH_POSTGRES_DSN)",
    )
    parser.add_argument(
        "--only", action="append", choices=TOOLS, help="run only this tool (repeatable)"
    )
    parser.add_argument("--timeout", type=float, default=1800, help="seconds per tool")
    parser.add_argument("--json", type=Path, help="also write the results as JSON here")
    parser.add_argument(
        "--src",
        type=Path,
        default=REPO / "src",
        help="the sitesync sources to run (another checkout's src/, for figures before a "
        "change; default: this checkout's)",
    )
    return parser.parse_args()


def chosen_tools(args: argparse.Namespace) -> list[str]:
    if args.only:
        tools = [t for t in TOOLS if t in args.only]
    else:
        tools = [t for t in TOOLS if t not in OPTIONAL]
        tools += ["scrapy"] if args.scrapy and not args.skip_scrapy else []
        tools += ["sitesync-links-pg"] if args.pg_dsn else []
    if "sitesync-links-pg" in tools and not args.pg_dsn:
        raise SystemExit("sitesync-links-pg needs --pg-dsn (or SITESYNC_BENCH_POSTGRES_DSN)")
    return [t for t in TOOLS if t in tools]


def main() -> int:
    args = parse_args()
    SOURCES["src"] = args.src.resolve()
    if args.pages is not None:
        args.pages_per_host = max(1, args.pages // args.hosts)
    tools = chosen_tools(args)
    args.spec = spec = {
        "hosts": args.hosts,
        "pages_per_host": args.pages_per_host,
        "links_per_page": args.links_per_page,
        "page_bytes": args.page_bytes,
    }
    print(
        f"site: {args.hosts} hosts x {args.pages_per_host} pages, {args.page_bytes} B/page, "
        f"served by {args.server}; concurrency {args.concurrency}, {os.cpu_count()} CPUs; "
        f"{args.rounds} rounds of {', '.join(tools)}; sources {SOURCES['src']}",
        flush=True,
    )
    # Every sitesync process imports sitesync: with PYTHONDONTWRITEBYTECODE (as on CI) each
    # would compile it again, seconds of CPU per helper that have nothing to do with crawling.
    compileall.compile_dir(SOURCES["src"], quiet=1)
    rounds: list[dict[str, ToolResult]] = []
    server: Server | NginxSite = (
        Server(spec) if args.server == "python" else NginxSite(SiteSpec(**spec))
    )
    try:
        print(f"server: pid {server.proc.pid}, port {server.port}", flush=True)
        with tempfile.TemporaryDirectory(prefix="sitesync-bench-") as tmp:
            for n in range(args.rounds):
                # Rotated, so that no tool always runs first (or right after another).
                order = tools[n % len(tools) :] + tools[: n % len(tools)]
                rounds.append(run_round(order, server, args, Path(tmp) / str(n)))
    finally:
        server.stop()

    for n, results in enumerate(rounds):
        print(f"\nround {n + 1}")
        print_table(results)
    print_summary(rounds, tools)
    if args.json:
        payload = {
            "spec": spec,
            "server": args.server,
            "concurrency": args.concurrency,
            "cpus": os.cpu_count(),
            "rounds": [{tool: asdict(r) for tool, r in results.items()} for results in rounds],
            "summary": summary_rows(rounds, tools),
        }
        args.json.write_text(json.dumps(payload, indent=2))
    return 0 if all(r.ok for results in rounds for r in results.values()) else 1


def run_round(
    tools: list[str], server: Server | NginxSite, args: argparse.Namespace, tmp: Path
) -> dict[str, ToolResult]:
    results: dict[str, ToolResult] = {}
    for tool in tools:
        workdir = tmp / tool
        workdir.mkdir(parents=True)
        try:
            results[tool] = run_tool(tool, server, args, workdir)
        except Exception as exc:  # one tool's harness failure must not lose the others
            results[tool] = ToolResult(tool, error=f"{type(exc).__name__}: {exc}")
        r = results[tool]
        status = f"{r.pages} pages in {r.seconds:.1f}s" if r.ok and r.seconds else "failed"
        print(f"[{tool}] {status}", flush=True)
    return results


if __name__ == "__main__":
    sys.exit(main())
