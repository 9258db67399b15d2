"""The generated site in a process of its own: ``python -m sitesync.testing``."""

from __future__ import annotations

import argparse
import dataclasses
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


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m sitesync.testing", description="Serve a generated site on loopback."
    )
    # One flag per SiteSpec field, so a new field is a new flag: --pages-per-host N for a
    # number, --no-variant-links for a switch that is on by default, --etag for one off.
    for spec_field in dataclasses.fields(SiteSpec):
        flag = spec_field.name.replace("_", "-")
        default = spec_field.default
        if isinstance(default, bool) and default:
            parser.add_argument(f"--no-{flag}", dest=spec_field.name, action="store_false")
        elif isinstance(default, bool):  # a switch off by default: --etag, --spurious-304
            parser.add_argument(f"--{flag}", dest=spec_field.name, action="store_true")
        else:
            parser.add_argument(f"--{flag}", type=type(default), default=default)
    parser.add_argument("--port", type=int, default=0, help="0 picks a free port")
    parser.add_argument(
        "--no-log", action="store_true", help="keep no per-request log (memory stays flat)"
    )
    parser.add_argument(
        "--stats-path", default=None, help="serve JSON request counters at this path"
    )
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    spec = SiteSpec(**{f.name: getattr(args, f.name) for f in dataclasses.fields(SiteSpec)})
    serve_forever(spec, args.port, record_requests=not args.no_log, stats_path=args.stats_path)
