"""The event loop's own busy time, read on a real loop (sitesync.fetch.loopload).

Real waits: what is measured is how a real selector loop spends real time. The bounds are
wide (a loaded machine may deschedule the process at any point): a blocking call must count
as busy, an idle wait must not count as much busy time as it lasted.
"""

from __future__ import annotations

import asyncio
import time

from sitesync.fetch.loopload import LoopLoad


async def test_work_on_the_loop_is_busy_time_and_waiting_for_io_is_not() -> None:
    load = LoopLoad.of_running_loop()
    assert load.measured
    before = load.busy()
    time.sleep(0.1)  # noqa: ASYNC251 - a CPU-heavy plugin, as the loop sees it
    await asyncio.sleep(0)
    worked = load.busy() - before
    assert worked >= 0.09
    before = load.busy()
    await asyncio.sleep(0.3)  # the loop waits in select(): the time is not the crawler's
    assert load.busy() - before < 0.15


async def test_one_meter_per_loop_shared_by_every_caller() -> None:
    assert LoopLoad.of_running_loop() is LoopLoad.of_running_loop()


def test_a_loop_without_a_selector_reads_no_busy_time() -> None:
    """uvloop or a proactor loop: waits are then taken as measured, nothing is discounted."""
    load = LoopLoad(asyncio.AbstractEventLoop())
    assert not load.measured and load.busy() == 0.0
