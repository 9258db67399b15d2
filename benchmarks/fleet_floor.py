"""The floor under the lifecycle step (``fleet.py``): the same rows, written by hand.

The lifecycle step's target (20,000 lifecycles/s on SQLite, 10,000 on PostgreSQL, 25 links
each) asks how fast the store can be. This measures how fast the database can be, with the
store's own schema, on the same machine in the same run: the same initial tasks admitted,
leased ``acquire_batch`` at a time, completed ``report_batch`` at a time with the same
discovered links (half known, half new), in as many transactions as the store uses, each
transaction a single statement or two of plain SQL, with none of sitesync's Python around
it (no counters, no attempt history, no claims, no models). What sitesync adds on top of
this is the store's cost; what this costs is the schema's and the machine's.

With ``bare=True`` the same statements go to a table of their own that has nothing but
its URL's unique index (``BARE_TABLE``): none of the indexes that keep acquire and the
claim refresh flat in the frontier, no foreign key. That is about as fast as any design
that keeps a row per URL and drops known URLs by a unique index can admit, lease and
finish on this machine: the ceiling a new schema could reach, not one sitesync could use.
"""

from __future__ import annotations

import random
import sqlite3
import time
from dataclasses import dataclass
from typing import Any

import psycopg
from fleet_store import host_tasks, running_run

from sitesync.store import open_store

WORKER = "floor-worker"

BARE_TABLE = """CREATE TABLE floor_bare (
    id               {id},
    run_id           bigint NOT NULL,
    url              text NOT NULL,
    host             text NOT NULL,
    state            text NOT NULL,
    depth            integer NOT NULL,
    discovered_at    double precision NOT NULL,
    updated_at       double precision NOT NULL,
    lease_owner      text,
    lease_expires_at double precision,
    http_status      integer,
    UNIQUE (run_id, url)
)"""


@dataclass
class FloorResult:
    backend: str
    links_per_task: int
    tasks: int = 0
    seconds: float = 0.0
    lifecycles_per_second: float | None = None
    rows_inserted: int = 0  # new URLs admitted (the known ones were dropped by the index)
    ok: bool = False
    error: str | None = None


def _plan(tasks: int, links: int, hosts: int, report_batch: int) -> tuple[list[Any], list[Any]]:
    """The initial tasks (the lifecycle step's own, ``host_tasks``), and per report batch the
    discovered (url, host) rows, drawn as ``workers.reports_with_links`` draws them (half
    known URLs, half new)."""
    initial = [(task.url, task.host) for task in host_tasks(0, tasks, hosts)]
    rng = random.Random(0)
    fresh, batches = 0, []
    for start in range(0, tasks, report_batch):
        rows = []
        for i in range(start, min(start + report_batch, tasks)):
            host = initial[i][1]
            rows += [rng.choice(initial) for _ in range(links // 2)]
            for _ in range(links - links // 2):
                fresh += 1
                rows.append((f"http://{host}/n/{fresh}", host))
        batches.append(rows)
    return initial, batches


async def insert_floor(
    db: str,
    *,
    backend: str,
    tasks: int,
    links: int,
    hosts: int,
    acquire_batch: int,
    report_batch: int,
    bare: bool = False,
) -> FloorResult:
    result = FloorResult(backend, links)
    store = await open_store(db)  # the store's schema, migrations and all; then set aside
    try:
        run_id = await running_run(store)
    finally:
        await store.close()
    initial, batches = _plan(tasks, links, hosts, report_batch)
    table = "floor_bare" if bare else "tasks"
    if backend == "sqlite":
        writer: _SqliteFloor | _PostgresFloor = _SqliteFloor(db, run_id, table)
    else:
        writer = _PostgresFloor(db, run_id, table)
    try:
        started = time.perf_counter()
        for i in range(0, len(initial), 1000):
            writer.admit(initial[i : i + 1000], depth=1)
        base = writer.first_id()  # the initial tasks hold ids base .. base + tasks - 1
        done = 0
        for rows in batches:
            batch_end = min(done + report_batch, tasks)
            for first in range(done, batch_end, acquire_batch):
                writer.lease(base + first, base + min(first + acquire_batch, batch_end))
            result.rows_inserted += writer.complete_and_admit(base + done, base + batch_end, rows)
            done = batch_end
        result.seconds = time.perf_counter() - started
        result.tasks = done
        expected = len({url for url, _ in initial} | {url for rows in batches for url, _ in rows})
        total = writer.count()
    finally:
        writer.close()
    result.lifecycles_per_second = result.tasks / result.seconds
    if total != expected:
        result.error = f"{total} tasks in the table, expected {expected}"
    result.ok = result.error is None
    return result


class _SqliteFloor:
    """One connection as the store opens it (WAL, synchronous NORMAL, foreign keys on),
    BEGIN IMMEDIATE."""

    def __init__(self, path: str, run_id: int, table: str) -> None:
        self.run_id, self.table = run_id, table
        self.conn = sqlite3.connect(path, isolation_level=None)
        self.conn.execute("PRAGMA journal_mode = WAL")
        self.conn.execute("PRAGMA synchronous = NORMAL")
        self.conn.execute("PRAGMA foreign_keys = ON")
        if table != "tasks":
            self.conn.execute(BARE_TABLE.format(id="INTEGER PRIMARY KEY"))

    def admit(self, rows: list[Any], *, depth: int) -> int:
        self.conn.execute("BEGIN IMMEDIATE")
        count = self._insert(rows, depth)
        self.conn.execute("COMMIT")
        return count

    def _insert(self, rows: list[Any], depth: int) -> int:
        params = [(self.run_id, url, host, depth) for url, host in rows]
        return self.conn.executemany(
            f"INSERT INTO {self.table} (run_id, url, host, state, depth, discovered_at,"
            " updated_at) VALUES (?, ?, ?, 'pending', ?, 0, 0)"
            " ON CONFLICT (run_id, url) DO NOTHING",
            params,
        ).rowcount

    def lease(self, first: int, end: int) -> None:
        self.conn.execute("BEGIN IMMEDIATE")
        self.conn.execute(
            f"UPDATE {self.table} SET state = 'assigned', lease_owner = ?, lease_expires_at = 60"
            " WHERE id >= ? AND id < ?",
            (WORKER, first, end),
        )
        self.conn.execute("COMMIT")

    def complete_and_admit(self, first: int, end: int, rows: list[Any]) -> int:
        self.conn.execute("BEGIN IMMEDIATE")
        self.conn.execute(
            f"UPDATE {self.table} SET state = 'completed', http_status = 200, lease_owner = NULL"
            " WHERE id >= ? AND id < ?",
            (first, end),
        )
        count = self._insert(rows, 2)
        self.conn.execute("COMMIT")
        return count

    def first_id(self) -> int:
        [(first,)] = self.conn.execute(f"SELECT MIN(id) FROM {self.table}").fetchall()
        return int(first)

    def count(self) -> int:
        [(total,)] = self.conn.execute(f"SELECT COUNT(*) FROM {self.table}").fetchall()
        return int(total)

    def close(self) -> None:
        self.conn.close()


class _PostgresFloor:
    """One connection; a batch of URLs is one ``unnest`` statement, as the store sends it."""

    INSERT = (
        "INSERT INTO {table} (run_id, url, host, state, depth, discovered_at, updated_at)"
        " SELECT %s, u.url, u.host, 'pending', %s, 0, 0"
        " FROM unnest(%s::text[], %s::text[]) AS u (url, host)"
        " ORDER BY u.url ON CONFLICT (run_id, url) DO NOTHING"
    )

    def __init__(self, dsn: str, run_id: int, table: str) -> None:
        self.run_id, self.table = run_id, table
        self.conn = psycopg.connect(dsn, autocommit=True)
        if table != "tasks":
            identity = "bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY"
            self.conn.execute(BARE_TABLE.format(id=identity).encode())

    def admit(self, rows: list[Any], *, depth: int) -> int:
        with self.conn.transaction():
            return self._insert(rows, depth)

    def _insert(self, rows: list[Any], depth: int) -> int:
        urls, hosts = [url for url, _ in rows], [host for _, host in rows]
        insert = self.INSERT.format(table=self.table).encode()
        return self.conn.execute(insert, (self.run_id, depth, urls, hosts)).rowcount

    def lease(self, first: int, end: int) -> None:
        with self.conn.transaction():
            self.conn.execute(
                f"UPDATE {self.table} SET state = 'assigned', lease_owner = %s,"
                " lease_expires_at = 60 WHERE id >= %s AND id < %s",
                (WORKER, first, end),
            )

    def complete_and_admit(self, first: int, end: int, rows: list[Any]) -> int:
        with self.conn.transaction():
            self.conn.execute(
                f"UPDATE {self.table} SET state = 'completed', http_status = 200,"
                " lease_owner = NULL WHERE id >= %s AND id < %s",
                (first, end),
            )
            return self._insert(rows, 2)

    def first_id(self) -> int:
        row = self.conn.execute(f"SELECT MIN(id) FROM {self.table}").fetchone()
        return int(row[0]) if row else 0

    def count(self) -> int:
        row = self.conn.execute(f"SELECT COUNT(*) FROM {self.table}").fetchone()
        return int(row[0]) if row else 0

    def close(self) -> None:
        self.conn.close()
