"""Adaptive politeness reads the site's signals only (issue 28), against real loopback servers.

- A crawler busy with its own work (a CPU-heavy plugin) does not slow a fast site down; a
  site whose own latency rises fivefold is slowed as soon as before.
- A few URLs that stall on a healthy site cost those URLs their retries, not the host its
  pace; timeouts across the host's URLs still slow it.

The real-process runs of the same cases are in tests/acceptance/test_pace_signals_cli.py.
"""

from __future__ import annotations

import asyncio
import time

from sitesync.fetch.http import HttpFetcher
from sitesync.testing import OPEN_LOOPBACK
from sitesync.testing_load import LoadedSite


async def hog(stop: asyncio.Event) -> None:
    """Keep the event loop busy in 30 ms slices, as a CPU-heavy plugin does."""
    while not stop.is_set():
        until = time.perf_counter() + 0.03
        while time.perf_counter() < until:
            pass
        await asyncio.sleep(0)


async def test_the_time_to_first_byte_says_how_much_of_it_the_loop_was_busy() -> None:
    with LoadedSite(pages=10, limit=None, base_latency=0.1) as site:
        async with HttpFetcher(network=OPEN_LOOPBACK) as fetcher:
            calm = await fetcher.fetch(site.root)
            stop = asyncio.Event()
            hogs = [asyncio.create_task(hog(stop)) for _ in range(3)]
            try:
                busy = await fetcher.fetch(f"{site.root}p/1")
            finally:
                stop.set()
                await asyncio.gather(*hogs)
    assert calm.status == busy.status == 200
    # The server holds each answer 0.1 s: the site's own time, with the loop idle.
    assert calm.first_byte is not None and calm.first_byte >= 0.1
    assert calm.first_byte_busy < 0.05
    # With the loop kept busy, most of the wait was the loop's: it says so.
    assert busy.first_byte is not None and busy.first_byte_busy >= 0.75 * busy.first_byte
