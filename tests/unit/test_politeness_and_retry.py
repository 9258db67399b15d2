from __future__ import annotations

import asyncio
import itertools
import time
from dataclasses import replace

import pytest

from sitesync.engine.retrywait import RetryWaits
from sitesync.fetch.politeness import HostLimiter
from sitesync.frontier.retry import RetryPolicy
from sitesync.models import FetchOutcome, Lease, TaskReport
from sitesync.store.base import Store
from tests._clock import FakeClock
from tests.contract.test_frontier_store import running_run, task


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


async def failed_attempt(store: Store, run_id: int, *, at: float, delay: float) -> TaskReport:
    """Lease the task and report a 500 for it: an attempt that started at ``at``."""
    [lease] = await store.acquire(run_id, worker_id="w", limit=1, lease_seconds=30)
    report = TaskReport(
        lease=lease, ok=False, http_status=500, outcome=FetchOutcome.HTTP_ERROR,
        error="http_error: HTTP 500", retry_delay=delay, started_at=at, ended_at=at + 0.1,
    )  # fmt: skip
    await store.report(run_id, [report])
    return report


async def test_a_retry_never_waits_less_than_the_gap_before_it(
    store: Store, clock: FakeClock
) -> None:
    """The issue's 500: retried 26.5 s after its first attempt (its host was slowed), then,
    by the policy alone, 5 s after the second. The second gap is held to the first."""
    run_id = await running_run(store, max_retries=10)
    await store.add_tasks(run_id, [task(1)])
    waits = RetryWaits(store, RetryPolicy(initial=1.0, maximum=60.0), max_retry_after=120.0)
    start = clock.now
    first = await failed_attempt(store, run_id, at=start, delay=2.0)  # ends at start + 0.1
    clock.advance(26.6)  # the host's pace kept the first retry waiting
    second = await failed_attempt(store, run_id, at=clock.now, delay=5.0)
    held = await waits.no_shorter(second, requested_at=clock.now)
    assert held.retry_delay == pytest.approx(26.5)
    # A longer policy wait, or a longer Retry-After, is kept as it is.
    assert (await waits.no_shorter(replace(second, retry_delay=40.0), clock.now)).retry_delay == 40
    # Nothing to hold: a first attempt, a success, a failure for good.
    assert await waits.no_shorter(first, clock.now + 100) is first
    assert await waits.no_shorter(replace(second, ok=True), clock.now) == replace(second, ok=True)
    final = replace(second, give_up=True)
    assert await waits.no_shorter(final, clock.now) is final


def test_retry_after_only_lengthens_the_policys_wait() -> None:
    waits = RetryWaits(
        None,  # type: ignore[arg-type]  # backoff() asks the store nothing
        RetryPolicy(initial=1.0, maximum=60.0, jitter=0.0),
        max_retry_after=30.0,
    )
    lease = Lease(task_id=1, run_id=1, url="http://a.test/", host="a.test", depth=0,
                  attempt_count=3, token=1, expires_at=0.0)  # fmt: skip
    assert waits.backoff(lease) == 4.0
    assert waits.backoff(lease, retry_after=1.0) == 4.0
    assert waits.backoff(lease, retry_after=10.0) == 10.0
    assert waits.backoff(lease, retry_after=600.0) == 30.0  # capped by max_retry_after
