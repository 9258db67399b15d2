"""``kill -USR1 PID``: a crawl, worker or service process prints what each of its asyncio
tasks is waiting on, and every thread's stack, to stderr, and carries on.

For the operator whose process does not leave on SIGTERM at 3 a.m., and for the tests that
wait for one: the await chain of each task (not just its outer frame, which is all
``Task.print_stack`` shows of a suspended coroutine) names the line it is stuck on.
"""

from __future__ import annotations

import asyncio
import faulthandler
import io
import signal
import sys
from collections.abc import Iterator
from types import FrameType
from typing import Any, TextIO

DUMP_SIGNAL = signal.SIGUSR1


def install(loop: asyncio.AbstractEventLoop) -> bool:
    """Dump on ``DUMP_SIGNAL`` from now on; False where signals cannot be handled here."""
    try:
        loop.add_signal_handler(DUMP_SIGNAL, dump)
    except (NotImplementedError, RuntimeError):  # not the main thread, or no signals
        return False
    return True


def uninstall(loop: asyncio.AbstractEventLoop) -> None:
    loop.remove_signal_handler(DUMP_SIGNAL)


def dump(out: TextIO | None = None) -> None:
    """Every task's await chain, then every thread's stack."""
    out = out or sys.stderr
    tasks = sorted(asyncio.all_tasks(), key=lambda t: t.get_name())
    print(f"--- sitesync: {len(tasks)} asyncio tasks ({DUMP_SIGNAL.name}) ---", file=out)
    for task in tasks:
        print(f"task {task.get_name()!r}:", file=out)
        for frame in await_chain(task.get_coro()):
            code = frame.f_code
            print(f"  {code.co_filename}:{frame.f_lineno} in {code.co_name}", file=out)
    print("--- threads ---", file=out, flush=True)
    try:
        faulthandler.dump_traceback(file=out, all_threads=True)
    except (AttributeError, ValueError, io.UnsupportedOperation):  # not a file: no fd
        print("(thread stacks need a real file)", file=out)


def await_chain(awaitable: Any) -> Iterator[FrameType]:
    """The frames of a coroutine and of what it awaits, outermost first."""
    while awaitable is not None:
        frame = getattr(awaitable, "cr_frame", None) or getattr(awaitable, "gi_frame", None)
        if frame is None:
            return
        yield frame
        awaitable = getattr(awaitable, "cr_await", None) or getattr(awaitable, "gi_yieldfrom", None)
