"""Adaptive politeness against a host that struggles under load, and against a healthy
host with three URLs that stall.

    python benchmarks/adaptive.py [--pages 250] [--limit 5] [--delay 0.05] [--json out.json]
    python benchmarks/adaptive.py --case stalls [--scale 0.1] [--json out.json]

``overload`` (the default): the server (``sitesync.testing.load.LoadedSite``) takes
``--limit`` requests per second and answers 503 (no Retry-After) above that; below it, its
latency grows with the request rate. The same site is crawled twice in this run by a real
``sitesync crawl`` subprocess, with a small delay and per-host concurrency 4: once with
adaptive politeness on, once off. For each: the time taken, pages completed and failed, the
share of 503 answers, the retries and the rate the server took once settled (the second
half of the crawl).

``stalls``: issue 28's site (``sitesync.testing.load.TroubledSite``): 150 pages that answer
at once and three URLs that stall (no answer, headers after 40 s, a body at a byte a
second), crawled with sitesync's defaults, every time in them (delay, timeouts, retry
backoff, adaptive recovery) and the site's stalls multiplied by ``--scale``. Two sites, two
crawls at once: adaptive on and off, so the machine's load weighs on both alike. For each:
the time taken, pages completed and failed, requests, and the slowest pace the host got.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from sitesync.store import open_store
from sitesync.testing.load import LoadedSite, TroubledSite

# The site is on loopback, which crawls refuse unless it is opened.
BASE = ["--no-progress", "--no-robots", "--no-sitemaps", "--allow-network", "127.0.0.0/8"]


def crawl_once(args: argparse.Namespace, *, adaptive: bool, workdir: Path) -> dict[str, object]:
    name = "on" if adaptive else "off"
    summary = workdir / f"{name}.json"
    with LoadedSite(pages=args.pages, limit=args.limit, base_latency=args.latency) as site:
        command = [
            sys.executable, "-m", "sitesync", "crawl", site.root, *BASE,
            "--db", str(workdir / f"{name}.db"),
            "--delay", str(args.delay),
            "--per-host-concurrency", "4",
            "--retry-backoff", "1",
            "--max-retries", "5",
            "--plugins", "",
            "--summary-json", str(summary),
            "--adaptive-politeness" if adaptive else "--no-adaptive-politeness",
        ]  # fmt: skip
        started = time.monotonic()
        subprocess.run(command, check=False, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        seconds = time.monotonic() - started
        answers = list(site.answers)
    counters = json.loads(summary.read_text())
    overloaded = sum(1 for a in answers if a.status == 503)
    ok = [a.started for a in answers if a.status == 200]
    half = ok[len(ok) // 2 :]
    settled = (len(half) - 1) / (half[-1] - half[0]) if len(half) > 1 else 0.0
    return {
        "adaptive": adaptive,
        "seconds": round(seconds, 1),
        "requests": len(answers),
        "answers_503": overloaded,
        "share_503": round(overloaded / max(1, len(answers)), 4),
        "settled_rate": round(settled, 2),
        "completed": counters.get("completed"),
        "failed": counters.get("failed"),
        "retries": counters.get("retries"),
    }


#: sitesync's defaults that are times, scaled for the stalls case (as SITESYNC_* settings).
SCALED = {"delay": 1.0, "connect_timeout": 10.0, "read_timeout": 20.0, "total_timeout": 60.0,
          "retry_backoff": 1.0, "retry_backoff_max": 60.0, "adaptive_recovery_seconds": 20.0,
          "adaptive_max_delay": 30.0}  # fmt: skip


def slowest_pace(db: Path, host: str) -> tuple[float, str] | None:
    async def read() -> tuple[float, str] | None:
        store = await open_store(str(db))
        try:
            state = await store.get_host_state(host)
        finally:
            await store.close()
        if state is None or not state.pace_reason or state.pace_delay is None:
            return None
        return state.pace_delay, state.pace_reason

    return asyncio.run(read()) if db.exists() else None


def stalls(args: argparse.Namespace, workdir: Path) -> list[dict[str, object]]:
    env = {
        **os.environ,
        **{f"SITESYNC_{k.upper()}": str(v * args.scale) for k, v in SCALED.items()},
    }
    sites = {"on": TroubledSite(scale=args.scale, ip="127.0.0.4").start(),
             "off": TroubledSite(scale=args.scale, ip="127.0.0.5").start()}  # fmt: skip
    procs, ended, slowest = {}, {}, {}
    started = time.monotonic()
    for name, site in sites.items():
        procs[name] = subprocess.Popen(
            [sys.executable, "-m", "sitesync", "crawl", site.root, *BASE,
             "--db", str(workdir / f"{name}.db"), "--plugins", "",
             "--summary-json", str(workdir / f"{name}.json"),
             "--adaptive-politeness" if name == "on" else "--no-adaptive-politeness"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env,
        )  # fmt: skip
    while len(ended) < len(procs):
        time.sleep(0.5)
        pace = slowest_pace(workdir / "on.db", sites["on"].host)
        if pace is not None and pace[0] > slowest.get("on", (0.0, ""))[0]:
            slowest["on"] = pace
        for name, proc in procs.items():
            if name not in ended and proc.poll() is not None:
                ended[name] = time.monotonic() - started
    results: list[dict[str, object]] = []
    for name, site in sites.items():
        site.stop()
        counters = json.loads((workdir / f"{name}.json").read_text())
        results.append({
            "adaptive": name == "on", "seconds": round(ended[name], 1),
            "completed": counters.get("completed"), "failed": counters.get("failed"),
            "requests": len(site.answers), "pages_requested": len({a.path for a in site.answers}),
            "slowest_pace": slowest.get(name),
        })  # fmt: skip
    print(f"issue 28's site: 150 pages, 3 stalling URLs; sitesync's defaults x {args.scale:g}")
    print("adaptive  seconds  completed  failed  requests  pages asked  slowest pace")
    for r in results:
        pace = r["slowest_pace"]
        shown = f"{pace[0]:.1f} s, {pace[1]}" if isinstance(pace, tuple) else "-"
        print(
            f"{'on' if r['adaptive'] else 'off':<9} {r['seconds']!s:<8} {r['completed']!s:<10} "
            f"{r['failed']!s:<7} {r['requests']!s:<9} {r['pages_requested']!s:<12} {shown}"
        )
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--case", choices=("overload", "stalls"), default="overload")
    parser.add_argument("--pages", type=int, default=250)
    parser.add_argument("--limit", type=float, default=5.0, help="requests/s the server takes")
    parser.add_argument("--latency", type=float, default=0.02, help="server latency when idle")
    parser.add_argument("--delay", type=float, default=0.05, help="configured per-host delay")
    parser.add_argument("--scale", type=float, default=0.1, help="stalls: time scale (1: real)")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    if args.case == "stalls":
        with tempfile.TemporaryDirectory() as tmp:
            results = stalls(args, Path(tmp))
        if args.json:
            args.json.write_text(json.dumps(results, indent=2) + "\n")
        return
    with tempfile.TemporaryDirectory() as tmp:
        results = [crawl_once(args, adaptive=on, workdir=Path(tmp)) for on in (True, False)]
    print(
        f"{args.pages} pages, server limit {args.limit:g} req/s, delay {args.delay:g} s, "
        "per-host concurrency 4"
    )
    print("adaptive  seconds  completed  failed  requests  503s  503 share  retries  settled req/s")
    for r in results:
        print(
            f"{'on' if r['adaptive'] else 'off':<9} {r['seconds']:<8} {r['completed']!s:<10} "
            f"{r['failed']!s:<7} {r['requests']!s:<9} {r['answers_503']!s:<5} "
            f"{100 * float(r['share_503']):<10.1f} {r['retries']!s:<8} {r['settled_rate']}"  # type: ignore[arg-type]
        )
    if args.json:
        args.json.write_text(json.dumps(results, indent=2) + "\n")


if __name__ == "__main__":
    main()
