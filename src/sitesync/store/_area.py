"""The base of every area of a store backend (runs, frontier, coordination, ...).

An area is a class whose methods implement one part of the ``Store`` protocol against one
plumbing object, ``_db`` (the backend's connection, transactions and queries), and nothing
else: it can be built alone from that object, and a backend's store class is the union of
its areas over one shared ``_db``. What one area needs of another (the report transaction
saving records, admission ending tasks of dead hosts) is a plain function taking the
connection, never a method reached through the store.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, Generic, Protocol, TypeVar

from sitesync.store._records import DEFAULT_MAX_STORED_BODY_BYTES
from sitesync.store._rows import DEFAULT_MAX_ATTEMPTS_KEPT, Decoders
from sitesync.store._steps import Script

Db = TypeVar("Db")
T = TypeVar("T")


class Area(Generic[Db]):
    #: What the store keeps (``Settings`` sets both on the store before a crawl).
    max_attempts_kept: int = DEFAULT_MAX_ATTEMPTS_KEPT  # attempts per task; the oldest go
    max_stored_body_bytes: int = DEFAULT_MAX_STORED_BODY_BYTES  # a larger body is not kept

    def __init__(self, db: Db) -> None:
        self._db = db


class Plumbing(Protocol):
    """What every backend's plumbing object offers for one-query calls (see ``_plain``)."""

    clock: Callable[[], float]
    decode: Decoders  # how its rows of runs, tasks and domains become models

    async def rows(self, query: str, params: Mapping[str, Any] | None = None) -> list[Any]:
        """The rows of one read query, by the query's name in the backend's namespace."""
        ...

    def text_list(self, values: Sequence[str]) -> Any:
        """``values`` as a parameter its queries take for a list of text."""
        ...

    def json(self, value: Any) -> Any:
        """``value`` as a parameter its queries take for a JSON column (None: NULL)."""
        ...

    async def execute(
        self, query: str, params: Mapping[str, Any], *, run_id: int | None = None
    ) -> int:
        """One write query in its own transaction, with ``now``; how many rows it changed.
        ``run_id`` names the run whose writers it queues with (its row lock on PostgreSQL;
        SQLite's file lock queues every writer anyway)."""
        ...

    async def run(self, make: Callable[[], Script[T]], *, reads_only: bool = False) -> T:
        """The script ``make()`` returns (:mod:`sitesync.store._steps`), its steps answered in
        one transaction (``reads_only``: reads, which SQLite runs outside a transaction)."""
        ...
