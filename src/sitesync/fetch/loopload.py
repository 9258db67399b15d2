"""How busy the crawler's own event loop is: the part of a measured wait that was ours.

A response that arrives while the event loop runs other work (a plugin, link extraction,
a store write) waits until the loop gets to it, and every ``await`` on its way waits again.
A stopwatch around a request therefore measures the site *and* the crawler. To tell the
two apart, :class:`LoopLoad` counts the time the loop spends outside its selector's
``select()`` call: the loop is either waiting for the network (in ``select``) or busy
running callbacks. Over the wait for a response:

- time the loop spent in ``select`` with nothing to do is the network's and the site's:
  had the response been there, ``select`` would have returned it at once;
- time the loop spent busy may have been either: the answer may have arrived meanwhile.

So ``wait - busy`` is a lower bound of the site's own time, and ``busy`` says how much of
the wait is in doubt (sitesync.fetch.adaptive uses a latency sample only while it is small).

It works by wrapping the ``select`` method of the loop's selector, which the standard
library's selector event loops (the default on Linux and macOS) have; the time is read with
two ``perf_counter`` calls per loop iteration. On a loop without one (uvloop, Windows'
proactor loop) :meth:`LoopLoad.busy` stays 0: waits are then taken as measured.
"""

from __future__ import annotations

import asyncio
import time
import weakref
from collections.abc import Callable
from typing import Any

_watched: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, LoopLoad] = (
    weakref.WeakKeyDictionary()
)


class LoopLoad:
    """The busy time of one event loop since it was first watched."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self._since = time.perf_counter()
        self._idle = 0.0
        selector = getattr(loop, "_selector", None)
        select: Callable[..., Any] | None = getattr(selector, "select", None)
        #: False on a loop whose waits cannot be observed: busy() is then always 0.
        self.measured = select is not None
        if select is None:
            return

        def timed_select(timeout: float | None = None) -> Any:
            start = time.perf_counter()
            try:
                return select(timeout)
            finally:
                self._idle += time.perf_counter() - start

        setattr(selector, "select", timed_select)  # noqa: B010 - an instance attribute on purpose

    @classmethod
    def of_running_loop(cls) -> LoopLoad:
        """The running loop's meter, installed on first use and shared by every caller."""
        loop = asyncio.get_running_loop()
        load = _watched.get(loop)
        if load is None:
            load = _watched[loop] = cls(loop)
        return load

    def busy(self) -> float:
        """Seconds the loop has spent running callbacks (not waiting in ``select``) since it
        was first watched; compare two readings to get the busy time between them."""
        if not self.measured:
            return 0.0
        return (time.perf_counter() - self._since) - self._idle
