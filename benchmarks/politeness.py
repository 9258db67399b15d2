"""Politeness and hard-limit figures: per-host rate accuracy, and peak RSS against a
200 MB body and a gzip bomb.

    python benchmarks/politeness.py [--pages 30] [--delays 0.25,0.5,1.0]

Each crawl runs as a real ``sitesync crawl`` subprocess against a loopback site served
from this process; intervals are measured at the server, peak RSS with ``os.wait4``.
"""

from __future__ import annotations

import argparse
import contextlib
import itertools
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import zlib
from pathlib import Path

from aiohttp import web

from sitesync.testing import LoopbackSite, SiteSpec

# The site is on loopback, which crawls refuse unless it is opened.
BASE = ["--no-progress", "--no-robots", "--no-sitemaps", "--allow-network", "127.0.0.0/8"]


def run_crawl(args: list[str], db: Path) -> tuple[float, float]:
    """Run one crawl; return (seconds, peak RSS MB) of the crawler process."""
    started = time.monotonic()
    proc = subprocess.Popen(
        [sys.executable, "-m", "sitesync", "crawl", *args, "--db", str(db), *BASE],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode not in (0, 1):
        raise RuntimeError(f"crawl exited with {proc.returncode}")
    return time.monotonic() - started, usage.ru_maxrss / 1024


def rate_accuracy(pages: int, delay: float, workdir: Path) -> dict[str, float]:
    with LoopbackSite(SiteSpec(hosts=1, pages_per_host=pages)) as site:
        args = [*site.root_urls, "--per-host-concurrency", "1", "--delay", str(delay)]
        run_crawl(args, workdir / f"rate-{delay}.db")
        starts = sorted(r.started for r in site.requests)
    gaps = [b - a for a, b in itertools.pairwise(starts)]
    return {
        "requested_s": delay,
        "observed_mean_s": statistics.fmean(gaps),
        "observed_min_s": min(gaps),
        "observed_max_s": max(gaps),
        "requests": len(starts),
    }


def gzip_bomb(mebibytes: int) -> bytes:
    """Compressed zeros, built in 1 MiB steps: this process never holds the inflated size
    (a crawler subprocess forked from a bloated parent would report the parent's RSS)."""
    packer = zlib.compressobj(9, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
    zeros = bytes(1024 * 1024)
    parts = [packer.compress(zeros) for _ in range(mebibytes)]
    return b"".join(parts) + packer.flush()


def hostile_rss(workdir: Path) -> dict[str, float]:
    chunk = b"<p>" + b"x" * (64 * 1024 - 3)
    bomb = gzip_bomb(1024)  # 1 GiB inflated

    async def huge(request: web.Request) -> web.StreamResponse:
        response = web.StreamResponse(headers={"Content-Type": "text/html"})
        await response.prepare(request)
        with contextlib.suppress(ConnectionError):  # the crawler hangs up at its cap
            for _ in range(200 * 16):  # 200 MiB
                await response.write(chunk)
        return response

    async def serve_bomb(request: web.Request) -> web.StreamResponse:
        headers = {"Content-Type": "text/html", "Content-Encoding": "gzip"}
        return web.Response(body=bomb, headers=headers)

    with LoopbackSite(SiteSpec(hosts=1, pages_per_host=3)) as site:
        site.set_handler("/p/1.html", huge)
        site.set_handler("/p/2.html", serve_bomb)
        seconds, rss = run_crawl(
            [*site.root_urls, "--per-host-concurrency", "0", "--delay", "0"],
            workdir / "hostile.db",
        )
        served = sorted({r.path for r in site.requests})
    with LoopbackSite(SiteSpec(hosts=1, pages_per_host=3)) as site:
        _, baseline = run_crawl(
            [*site.root_urls, "--per-host-concurrency", "0", "--delay", "0"],
            workdir / "plain.db",
        )
    return {
        "seconds": seconds,
        "peak_rss_mb": rss,
        "baseline_peak_rss_mb": baseline,
        "bomb_compressed_kb": len(bomb) / 1024,
        "paths_served": len(served),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--pages", type=int, default=30)
    parser.add_argument("--delays", default="0.25,0.5,1.0")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        workdir = Path(tmp)
        rates = [rate_accuracy(args.pages, float(d), workdir) for d in args.delays.split(",")]
        hostile = hostile_rss(workdir)
    print("per-host rate (1 host, per-host concurrency 1):")
    print("requested s  observed mean s  min s    max s    requests")
    for r in rates:
        print(
            f"{r['requested_s']:<12.3f} {r['observed_mean_s']:<16.4f} "
            f"{r['observed_min_s']:<8.4f} {r['observed_max_s']:<8.4f} {int(r['requests'])}"
        )
    print(
        "\n200 MiB body + 1 GiB gzip bomb (max_body_bytes 10 MiB):"
        f" crawl {hostile['seconds']:.1f}s,"
        f" peak RSS {hostile['peak_rss_mb']:.0f} MB"
        f" (same crawl without them: {hostile['baseline_peak_rss_mb']:.0f} MB)"
    )
    if args.json:
        args.json.write_text(json.dumps({"rates": rates, "hostile": hostile}, indent=2))


if __name__ == "__main__":
    main()
