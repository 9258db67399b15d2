"""Throughput benchmark: sitesync against Scrapy and a bare aiohttp loop, on a loopback site.

The site (``sitesync.testing``) runs in its own process; each tool runs in its own subprocess, so
wall time, CPU time (user + sys) and peak RSS are measured per tool from ``os.wait4``'s rusage.
See ``benchmarks/README.md``.

    python benchmarks/run.py [--hosts 20 --pages-per-host 1000 | --pages N] [--concurrency 64]
                             [--skip-scrapy] [--only bare|scrapy|sitesync|sitesync-links ...]
                             [--rounds N] [--json OUT]
"""

from __future__ import annotations

import argparse
import json
import os
import select
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import psutil

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
STATS_PATH = "/__bench_stats__"
TOOLS = ("bare", "scrapy", "sitesync", "sitesync-links")
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
    src = str(REPO / "src")
    env["PYTHONPATH"] = src + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    # The built-in plugins, as users run them: the dev extra also installs the test suite's
    # example plugin, which would add its records to every page measured.
    # sitesync-links: no plugin at all, only the crawl's own link extraction.
    if tool == "sitesync-links":
        env["SITESYNC_PLUGINS"] = ""
    else:
        env.setdefault("SITESYNC_PLUGINS", BUILTIN_PLUGINS)
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
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        for stream in (self.proc.stdout, self.proc.stderr):
            if stream is not None:
                stream.close()


def run_tool(
    tool: str, server: Server, spec: dict[str, Any], args: argparse.Namespace, workdir: Path
) -> ToolResult:
    result = ToolResult(tool)
    expected = spec["hosts"] * spec["pages_per_host"]
    out_json = workdir / f"{tool}.json"
    c = str(args.concurrency)
    if tool == "bare":
        cmd = [sys.executable, str(HERE / "bare.py"), "--spec-json", json.dumps(spec)]
        cmd += ["--port", str(server.port), "--concurrency", c, "--out", str(out_json)]
    elif tool == "scrapy":
        cmd = [sys.executable, str(HERE / "scrapy_crawl.py")]
        cmd += ["--roots-json", json.dumps(server.root_urls), "--concurrency", c]
        cmd += ["--out", str(out_json)]
    else:
        db = workdir / "sitesync.db"
        cmd = [sys.executable, "-m", "sitesync", "crawl", *server.root_urls, "--db", str(db)]
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
            # One process, as the bare loop (benchmarks/processes.py measures more of them).
            "--processes",
            "1",
            "--no-robots",
            "--no-sitemaps",
        ]
        cmd += ["--no-progress", "--summary-json", str(out_json)]

    before = server.stats()
    cpu_before = server.cpu_seconds()
    print(f"[{tool}] running ...", flush=True)
    m = run_measured(cmd, args.timeout, tool)
    after = server.stats()
    result.server_cpu_seconds = server.cpu_seconds() - cpu_before
    # The first stats request (a 200) is counted between the two readings: subtract it so the
    # deltas are the tool's alone.
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
    if tool.startswith("sitesync"):
        pages = report.get("pages_fetched", report.get("completed"))
    else:
        pages = report.get("pages")
    if not isinstance(pages, int):
        result.error = f"result JSON has no page count: {report}"
        return result
    result.ok = True
    result.pages = pages
    result.pages_per_second = pages / m.wall_seconds if m.wall_seconds else None
    problems = []
    if pages != expected:
        problems.append(f"tool reports {pages} pages, site has {expected}")
    if result.server_200s != expected:
        problems.append(f"server sent {result.server_200s} pages (200s), site has {expected}")
    result.pages_check = "ok" if not problems else "; ".join(problems)
    return result


def fmt(value: float | int | None, spec: str) -> str:
    return "-" if value is None else format(value, spec)


def ratio(a: float | None, b: float | None) -> str:
    return "n/a" if a is None or not b else f"{a / b:.2f}x"


def print_table(results: dict[str, ToolResult]) -> None:
    header = (
        f"{'tool':<14} {'pages':>7} {'seconds':>8} {'pages/s':>8} {'CPU s':>7} "
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
            f"{tool:<14} {fmt(r.pages, 'd'):>7} {fmt(r.seconds, '.2f'):>8} "
            f"{fmt(r.pages_per_second, '.0f'):>8} {fmt(r.cpu_seconds, '.2f'):>7} "
            f"{fmt(ms and ms * 1000, '.3f'):>11} "
            f"{fmt(r.peak_rss_mb, '.0f'):>11} {fmt(r.server_cpu_seconds, '.2f'):>9}  "
            f"{r.pages_check if r.ok else 'FAILED'}"
        )
    for mine in (results.get("sitesync"), results.get("sitesync-links")):
        for other in ("scrapy", "bare"):
            theirs = results.get(other)
            if mine is None or theirs is None or not (mine.ok and theirs.ok):
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


def print_rounds(rounds: list[dict[str, ToolResult]]) -> None:
    """Each round's pages/s ratios against the bare loop of the same round, and their median."""
    for tool in ("sitesync", "sitesync-links"):
        ratios = []
        for results in rounds:
            mine, bare = results.get(tool), results.get("bare")
            if mine and bare and mine.ok and bare.ok and bare.pages_per_second:
                ratios.append((mine.pages_per_second or 0) / bare.pages_per_second)
        if ratios:
            listed = ", ".join(f"{r:.2f}x" for r in ratios)
            print(
                f"{tool}/bare pages/s by round: {listed}; median {statistics.median(ratios):.2f}x"
            )


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
        "--rounds",
        type=int,
        default=1,
        help="run every tool N times, in a rotated order each round",
    )
    parser.add_argument("--links-per-page", type=int, default=25)
    parser.add_argument("--page-bytes", type=int, default=20_000)
    parser.add_argument("--concurrency", type=int, default=64)
    parser.add_argument("--skip-scrapy", action="store_true")
    parser.add_argument(
        "--only", action="append", choices=TOOLS, help="run only this tool (repeatable)"
    )
    parser.add_argument("--timeout", type=float, default=1800, help="seconds per tool")
    parser.add_argument("--json", type=Path, help="also write the results as JSON here")
    return parser.parse_args()


def main() -> int:
    args = parse_args()
    if args.pages is not None:
        args.pages_per_host = max(1, args.pages // args.hosts)
    tools = [t for t in TOOLS if t in (args.only or TOOLS)]
    if args.skip_scrapy and "scrapy" in tools:
        tools.remove("scrapy")
    spec = {
        "hosts": args.hosts,
        "pages_per_host": args.pages_per_host,
        "links_per_page": args.links_per_page,
        "page_bytes": args.page_bytes,
    }
    print(
        f"site: {args.hosts} hosts x {args.pages_per_host} pages, {args.page_bytes} B/page, "
        f"concurrency {args.concurrency}, {os.cpu_count()} CPUs",
        flush=True,
    )
    rounds: list[dict[str, ToolResult]] = []
    server = Server(spec)
    try:
        print(f"server: pid {server.proc.pid}, port {server.port}", flush=True)
        with tempfile.TemporaryDirectory(prefix="sitesync-bench-") as tmp:
            for n in range(args.rounds):
                # Rotated, so that no tool always runs first (or right after another).
                order = tools[n % len(tools) :] + tools[: n % len(tools)]
                rounds.append(run_round(order, server, spec, args, Path(tmp) / str(n)))
    finally:
        server.stop()

    for n, results in enumerate(rounds):
        if args.rounds > 1:
            print(f"\nround {n + 1}")
        print_table(results)
    if args.rounds > 1:
        print()
        print_rounds(rounds)
    if args.json:
        payload = {
            "spec": spec,
            "concurrency": args.concurrency,
            "cpus": os.cpu_count(),
            "rounds": [{tool: asdict(r) for tool, r in results.items()} for results in rounds],
        }
        args.json.write_text(json.dumps(payload, indent=2))
    return 0 if all(r.ok for results in rounds for r in results.values()) else 1


def run_round(
    tools: list[str], server: Server, spec: dict[str, Any], args: argparse.Namespace, tmp: Path
) -> dict[str, ToolResult]:
    results: dict[str, ToolResult] = {}
    for tool in tools:
        workdir = tmp / tool
        workdir.mkdir(parents=True)
        try:
            results[tool] = run_tool(tool, server, spec, args, workdir)
        except Exception as exc:  # one tool's harness failure must not lose the others
            results[tool] = ToolResult(tool, error=f"{type(exc).__name__}: {exc}")
        r = results[tool]
        status = f"{r.pages} pages in {r.seconds:.1f}s" if r.ok and r.seconds else "failed"
        print(f"[{tool}] {status}", flush=True)
    return results


if __name__ == "__main__":
    sys.exit(main())
