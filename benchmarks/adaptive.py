"""Adaptive politeness against a host that struggles under load.

    python benchmarks/adaptive.py [--pages 250] [--limit 5] [--delay 0.05] [--json out.json]

The server (``sitesync.testing_load.LoadedSite``) takes ``--limit`` requests per second and
answers 503 (no Retry-After) above that; below it, its latency grows with the request rate.
The same site is crawled twice in this run by a real ``sitesync crawl`` subprocess, with a
small delay and per-host concurrency 4: once with adaptive politeness on, once off. For
each: the time taken, pages completed and failed, the share of 503 answers, the retries
and the rate the server took once settled (the second half of the crawl).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from sitesync.testing_load import LoadedSite

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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--pages", type=int, default=250)
    parser.add_argument("--limit", type=float, default=5.0, help="requests/s the server takes")
    parser.add_argument("--latency", type=float, default=0.02, help="server latency when idle")
    parser.add_argument("--delay", type=float, default=0.05, help="configured per-host delay")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
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
