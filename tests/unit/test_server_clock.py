"""The PostgreSQL store's clock is the server's (issue 13, item 3), carried forward between
samples by this process's monotonic clock."""

from __future__ import annotations

import pytest
from psycopg import AsyncConnection
from psycopg.rows import dict_row

from sitesync.store.postgres.clock import ServerClock


class SteppedMonotonic:
    """A monotonic clock this test moves by hand (what a wall-clock step cannot touch)."""

    def __init__(self, start: float) -> None:
        self.now = start

    def __call__(self) -> float:
        return self.now


async def server_epoch(conn: AsyncConnection) -> float:  # type: ignore[type-arg]
    cursor = await conn.execute("SELECT extract(epoch FROM clock_timestamp())::float8 AS now")
    row = await cursor.fetchone()
    assert row is not None
    return float(row["now"])


async def test_reads_the_servers_time_and_carries_it_forward_monotonically(
    postgres_dsn: str,
) -> None:
    dsn = postgres_dsn
    async with await AsyncConnection.connect(dsn, autocommit=True, row_factory=dict_row) as conn:
        local = SteppedMonotonic(start=1_000.0)  # nothing like an epoch: only the server's is
        clock = ServerClock(monotonic=local, resync_seconds=30)
        with pytest.raises(RuntimeError):
            clock()  # never a guess before the first sample
        assert clock.due
        await clock.sync(conn)
        assert not clock.due
        assert abs(clock() - await server_epoch(conn)) < 1.0
        sampled = clock()
        local.now += 29.5  # seconds pass on this machine, the server is not asked
        assert clock() == pytest.approx(sampled + 29.5)
        assert not clock.due
        local.now += 0.5
        assert clock.due
