"""The PostgreSQL server's clock, for every lease, claim, heartbeat and schedule decision.

Workers on many machines share one store. If each compared lease and claim expiries with
its own wall clock, a machine whose clock runs minutes ahead would take over live leases
(and fetch a host another worker holds), and one that runs behind would keep dead ones.
So the PostgreSQL store reads time from the server, the one clock every worker shares.

Reading it costs a round trip, and the store needs "now" synchronously in the middle of
building a statement's parameters. So the server's time is sampled now and then, and
between samples it is carried forward with this process's *monotonic* clock, which an
operator setting the wall clock (or NTP stepping it) does not move. The error is half a
round trip at each sample: well under the seconds that leases and claims are measured in.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable

from psycopg import AsyncConnection
from psycopg.rows import DictRow

#: Resample this often: monotonic clocks drift from the server's by parts per million,
#: which is milliseconds an hour; a minute keeps the error to the sample's own.
RESYNC_SECONDS = 60.0

_SERVER_NOW = "SELECT extract(epoch FROM clock_timestamp())::float8 AS now"


class ServerClock:
    """Epoch seconds on the PostgreSQL server's clock (callable, like ``time.time``)."""

    def __init__(
        self,
        *,
        resync_seconds: float = RESYNC_SECONDS,
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        self.resync_seconds = resync_seconds
        self._monotonic = monotonic
        self._offset: float | None = None  # server epoch minus local monotonic
        self._synced_at = -math.inf

    def __call__(self) -> float:
        if self._offset is None:
            raise RuntimeError("ServerClock read before its first sync with the server")
        return self._monotonic() + self._offset

    @property
    def due(self) -> bool:
        """Whether the next transaction should take a fresh sample first."""
        return self._monotonic() - self._synced_at >= self.resync_seconds

    async def sync(self, conn: AsyncConnection[DictRow]) -> None:
        """Sample the server's time over ``conn``; the midpoint of the round trip is the
        best estimate of when the server read its clock."""
        sent = self._monotonic()
        cursor = await conn.execute(_SERVER_NOW)
        row = await cursor.fetchone()
        received = self._monotonic()
        assert row is not None
        self._offset = float(row["now"]) - (sent + received) / 2
        self._synced_at = received
