"""The base of every area of a store backend (runs, frontier, coordination, ...).

An area is a class whose methods implement one part of the ``Store`` protocol against one
plumbing object, ``_db`` (the backend's connection, transactions and queries), and nothing
else: it can be built alone from that object, and a backend's store class is the union of
its areas over one shared ``_db``. What one area needs of another (the report transaction
saving records, admission ending tasks of dead hosts) is a plain function taking the
connection, never a method reached through the store.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Generic, Protocol, TypeVar

from sitesync.models import Attempt, Task, TaskState
from sitesync.store._records import DEFAULT_MAX_STORED_BODY_BYTES
from sitesync.store._rows import DEFAULT_MAX_ATTEMPTS_KEPT, attempt_from_row
from sitesync.store.rules import Row

Db = TypeVar("Db")


class Area(Generic[Db]):
    #: What the store keeps (``Settings`` sets both on the store before a crawl).
    max_attempts_kept: int = DEFAULT_MAX_ATTEMPTS_KEPT  # attempts per task; the oldest go
    max_stored_body_bytes: int = DEFAULT_MAX_STORED_BODY_BYTES  # a larger body is not kept

    def __init__(self, db: Db) -> None:
        self._db = db


class Plumbing(Protocol):
    """What every backend's plumbing object offers for plain reads."""

    clock: Callable[[], float]

    async def rows(self, query: str, params: Mapping[str, Any] | None = None) -> list[Any]:
        """The rows of one read query, by the query's name in the backend's namespace."""
        ...


P = TypeVar("P", bound=Plumbing)


class TaskReads(Area[P]):
    """Reads of a run's tasks, alike on both backends: one named query each. A backend
    only says how its rows become tasks (:meth:`_task`)."""

    @staticmethod
    def _task(row: Row) -> Task:
        raise NotImplementedError  # each backend decodes its own JSON columns

    async def get_task(self, run_id: int, url: str) -> Task | None:
        rows = await self._db.rows("select_task", {"run_id": run_id, "url": url})
        return self._task(rows[0]) if rows else None

    async def list_tasks(
        self, run_id: int, *, state: TaskState | None = None, limit: int = 1000
    ) -> list[Task]:
        params = {"run_id": run_id, "state": None if state is None else state.value, "limit": limit}
        return [self._task(row) for row in await self._db.rows("select_tasks", params)]

    async def count_tasks(self, run_id: int) -> dict[TaskState, int]:
        counts = dict.fromkeys(TaskState, 0)
        for row in await self._db.rows("count_by_state", {"run_id": run_id}):
            counts[TaskState(row["state"])] = row["n"]
        return counts

    async def list_attempts(self, task_id: int) -> list[Attempt]:
        rows = await self._db.rows("select_attempts", {"task_id": task_id})
        return [attempt_from_row(row) for row in rows]
