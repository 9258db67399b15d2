"""kill -USR1: a process's dump of what its tasks wait on (sitesync.runs.taskdump)."""

from __future__ import annotations

import asyncio
import io
import subprocess
import sys

import pytest

from sitesync.runs import taskdump
from tests.acceptance._cli import communicate


async def test_a_task_dump_names_every_await_down_to_the_line_that_waits() -> None:
    """kill -USR1's dump: the chain of a suspended task, innermost coroutine included."""
    release = asyncio.Event()

    async def innermost() -> None:
        await release.wait()

    async def outer() -> None:
        await innermost()

    task = asyncio.create_task(outer(), name="stuck")
    await asyncio.sleep(0)
    names = [frame.f_code.co_name for frame in taskdump.await_chain(task.get_coro())]
    assert names[:3] == ["outer", "innermost", "wait"]  # down into Event.wait
    out = io.StringIO()
    taskdump.dump(out)
    assert "task 'stuck':" in out.getvalue() and "in innermost" in out.getvalue()
    release.set()
    await task


HUNG = """
import asyncio
from sitesync.runs import taskdump

async def waits_forever():
    taskdump.install(asyncio.get_running_loop())
    print("ready", flush=True)
    await asyncio.Event().wait()

asyncio.run(waits_forever())
"""


def test_a_hung_test_process_is_dumped_killed_and_named() -> None:
    """The tests' ``communicate``: a process past its timeout fails the test with what it
    waits on, and is gone afterwards (no hang, no process or pipe left to the next test)."""
    proc = subprocess.Popen(
        [sys.executable, "-c", HUNG], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    assert proc.stdout is not None and proc.stdout.readline() == "ready\n"
    with pytest.raises(AssertionError) as failure:
        communicate(proc, timeout=0.5)
    assert "still running after 0.5 s" in str(failure.value)
    assert "in waits_forever" in str(failure.value)  # the dump, from the process's stderr
    assert proc.returncode is not None
