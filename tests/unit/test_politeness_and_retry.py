from __future__ import annotations

import asyncio
import itertools
import time

from sitesync.fetch.politeness import HostLimiter
from sitesync.frontier.retry import RetryPolicy


async def test_requests_to_one_host_start_at_least_delay_apart() -> None:
    limiter = HostLimiter(concurrency=2, delay=0.05)
    starts: list[float] = []

    async def request() -> None:
        async with limiter.slot("a.test"):
            starts.append(time.monotonic())

    await asyncio.gather(*(request() for _ in range(5)))
    gaps = [b - a for a, b in itertools.pairwise(starts)]
    assert all(gap >= 0.049 for gap in gaps), gaps


async def test_per_host_concurrency_caps_requests_in_flight() -> None:
    limiter = HostLimiter(concurrency=2, delay=0)
    active = peak = 0

    async def request(host: str) -> None:
        nonlocal active, peak
        async with limiter.slot(host):
            active += 1
            peak = max(peak, active)
            await asyncio.sleep(0.01)
            active -= 1

    await asyncio.gather(*(request("a.test") for _ in range(8)))
    assert peak == 2


def test_retry_delays_grow_and_stay_bounded() -> None:
    policy = RetryPolicy(initial=1.0, maximum=10.0, jitter=0.5)
    delays = [policy.delay(n) for n in range(1, 8)]
    assert 1.0 <= delays[0] <= 1.5
    assert 2.0 <= delays[1] <= 2.5
    assert all(d <= 10.0 for d in delays)
    assert delays[-1] >= 9.0
