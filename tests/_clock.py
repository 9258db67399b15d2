"""A clock that moves only when a test moves it, for the stores' injectable ``clock``.

Leases, claims, heartbeats, stale runs and put-off tasks are all judged by the store's clock
(``SqliteDb(clock=...)``, ``PostgresStore.open(clock=...)``), so a test of an expiry moves
this clock past it instead of sleeping: the test takes no time, and no busy machine can make
an expiry happen early or late.
"""

from __future__ import annotations

import time


class FakeClock:
    """Epoch seconds, starting at the real time of its creation and frozen there until
    :meth:`advance` moves it."""

    def __init__(self, start: float | None = None) -> None:
        self.now = time.time() if start is None else start

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        assert seconds >= 0, "a store's clock never goes back"
        self.now += seconds
