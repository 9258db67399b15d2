"""kill -USR1: a process's dump of what its tasks wait on (sitesync.runs.taskdump)."""

from __future__ import annotations

import asyncio
import io

from sitesync.runs import taskdump


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
