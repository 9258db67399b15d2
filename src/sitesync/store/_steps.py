"""A store call of several statements, written once for both backends as a script of steps.

SQLite runs a transaction as a plain function on its own thread, PostgreSQL as a coroutine:
the same statements in the same order would otherwise be written twice, once per backend
(issue 32: ``claim_hosts`` was, line for line). A :data:`Script` is a generator that yields
one step at a time and is sent each step's answer; it does no I/O of its own. Each backend's
plumbing runs it in one of its transactions (``SqliteDb.run``, ``PostgresDb.run``), answering
the steps on its connection, and returns what the script returns.

A script must be made anew for each run (the plumbing takes a function that makes it):
PostgreSQL replays a transaction whole after a lost connection or a serialization failure.
"""

from __future__ import annotations

from collections.abc import Generator, Mapping
from dataclasses import dataclass
from typing import Any, TypeAlias, TypeVar

T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class Fetch:
    """The rows of one named read query (readable by column name on both backends)."""

    query: str
    params: Mapping[str, Any]


@dataclass(frozen=True, slots=True)
class Write:
    """One named write query; answered with how many rows it changed."""

    query: str
    params: Mapping[str, Any]


@dataclass(frozen=True, slots=True)
class HoldRun:
    """One decision of the run at a time: answered with whether the run may be decided on.

    PostgreSQL locks the run's row (``lock_run``) and answers whether there is one. SQLite
    answers True: its ``BEGIN IMMEDIATE`` transaction already holds the whole file, and the
    statements that follow change nothing of a run that does not exist.
    """

    run_id: int


Step: TypeAlias = Fetch | Write | HoldRun
#: A store call's statements: yields steps, is sent their answers, returns the call's result.
Script: TypeAlias = Generator[Step, Any, T]
