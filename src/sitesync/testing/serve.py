"""The generated site in a process of its own: ``python -m sitesync.testing``."""

from __future__ import annotations

import argparse
import json
import signal
import threading

from sitesync.testing.server import LoopbackSite
from sitesync.testing.spec import SiteSpec


def serve_forever(
    spec: SiteSpec, port: int = 0, *, record_requests: bool = False, stats_path: str | None = None
) -> None:
    """Serve ``spec`` until SIGTERM/SIGINT; print ``{"port", "root_urls"}`` once listening."""
    site = LoopbackSite(spec, port=port, record_requests=record_requests, stats_path=stats_path)
    done = threading.Event()

    def on_signal(signum: int, frame: object) -> None:
        done.set()

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    with site:
        print(json.dumps({"port": site.port, "root_urls": site.root_urls}), flush=True)
        # A timed wait lets the main thread run the Python-level signal handler promptly.
        while not done.wait(0.5):
            pass


def _parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m sitesync.testing", description="Serve a generated site on loopback."
    )
    defaults = SiteSpec()
    parser.add_argument("--hosts", type=int, default=defaults.hosts)
    parser.add_argument("--pages-per-host", type=int, default=defaults.pages_per_host)
    parser.add_argument("--links-per-page", type=int, default=defaults.links_per_page)
    parser.add_argument("--page-bytes", type=int, default=defaults.page_bytes)
    parser.add_argument("--first-ip", type=int, default=defaults.first_ip)
    parser.add_argument("--delay", type=float, default=defaults.delay)
    parser.add_argument("--seed", type=int, default=defaults.seed)
    parser.add_argument("--no-cross-host-links", action="store_true")
    parser.add_argument("--no-variant-links", action="store_true")
    parser.add_argument("--no-out-of-scope-links", action="store_true")
    parser.add_argument("--port", type=int, default=0, help="0 picks a free port")
    parser.add_argument(
        "--no-log", action="store_true", help="keep no per-request log (memory stays flat)"
    )
    parser.add_argument(
        "--stats-path", default=None, help="serve JSON request counters at this path"
    )
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> None:
    args = _parse_args(argv)
    spec = SiteSpec(
        hosts=args.hosts,
        pages_per_host=args.pages_per_host,
        links_per_page=args.links_per_page,
        page_bytes=args.page_bytes,
        first_ip=args.first_ip,
        cross_host_links=not args.no_cross_host_links,
        variant_links=not args.no_variant_links,
        out_of_scope_links=not args.no_out_of_scope_links,
        delay=args.delay,
        seed=args.seed,
    )
    serve_forever(spec, args.port, record_requests=not args.no_log, stats_path=args.stats_path)
