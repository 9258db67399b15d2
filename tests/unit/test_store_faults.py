"""Which store errors are waited out, and how the fault budget behaves once spent."""

from __future__ import annotations

import time

import psycopg
import pytest
from psycopg import errors
from psycopg_pool import PoolTimeout

from sitesync.errors import StoreLocked, StoreUnavailable
from sitesync.store._faults import FaultBudget
from sitesync.store.postgres._db import is_transient


@pytest.mark.parametrize(
    "exc",
    [
        psycopg.OperationalError("server closed the connection unexpectedly"),
        errors.AdminShutdown("terminating connection due to administrator command"),
        errors.CannotConnectNow("the database system is starting up"),
        errors.TooManyConnections("sorry, too many clients already"),
        PoolTimeout("couldn't get a connection after 30.00 sec"),
        errors.DeadlockDetected("deadlock detected"),
        errors.SerializationFailure("could not serialize access"),
    ],
)
def test_lost_connections_and_restarts_are_transient(exc: Exception) -> None:
    assert is_transient(exc)


@pytest.mark.parametrize(
    "exc",
    [
        errors.SyntaxError("syntax error"),
        errors.UniqueViolation("duplicate key"),
        errors.ProgramLimitExceeded("index row size exceeds maximum"),
        ValueError("not a database error"),
    ],
)
def test_errors_that_waiting_cannot_cure_are_not(exc: Exception) -> None:
    assert not is_transient(exc)


def locked_budget(seconds: float) -> FaultBudget:
    return FaultBudget("test.db", lambda exc: isinstance(exc, StoreLocked), seconds=seconds)


async def test_a_transient_fault_is_retried_until_it_clears() -> None:
    budget = locked_budget(30)
    calls = 0

    async def attempt() -> str:
        nonlocal calls
        calls += 1
        if calls < 3:
            raise StoreLocked("database is locked")
        return "done"

    assert await budget.run(attempt) == "done"
    assert calls == 3


async def test_other_errors_are_raised_at_once() -> None:
    calls = 0

    async def attempt() -> None:
        nonlocal calls
        calls += 1
        raise ValueError("a bug")

    with pytest.raises(ValueError):
        await locked_budget(30).run(attempt)
    assert calls == 1


async def test_past_the_budget_later_calls_get_one_attempt_until_one_succeeds() -> None:
    budget = locked_budget(0.3)
    calls = 0
    locked = True

    async def attempt() -> str:
        nonlocal calls
        calls += 1
        if locked:
            raise StoreLocked("database is locked")
        return "done"

    started = time.monotonic()
    with pytest.raises(StoreUnavailable, match=r"unavailable for more than 0.3s"):
        await budget.run(attempt)
    assert time.monotonic() - started >= 0.3 and calls > 1
    calls = 0
    with pytest.raises(StoreUnavailable):  # spent: no more waiting (a worker's clean-up)
        await budget.run(attempt)
    assert calls == 1
    locked = False
    assert await budget.run(attempt) == "done"
    locked, calls = True, 0
    with pytest.raises(StoreUnavailable):  # back to normal: the budget applies again
        await budget.run(attempt)
    assert calls > 1
