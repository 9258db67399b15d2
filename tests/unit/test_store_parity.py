"""The two stores read side by side (issue 32): one operation, one query name, both backends.

Each backend keeps its SQL in area files of the same names (``store/sqlite/frontier.sql``
beside ``store/postgres/frontier.sql``, ...). For each pair, the two sets of ``-- name:``
blocks must be the same, but for ``ONLY_IN``: a query that is truly one backend's own, with
its reason and the queries of the other backend's file that do its work there (checked to
exist, so an entry cannot outlive what it stands for). A file only one backend has is in
``FILE_ONLY_IN`` with its reason.
"""

from __future__ import annotations

from pathlib import Path

import pytest

import sitesync.store
from sitesync.store._sql import load_queries

STORE = Path(sitesync.store.__file__).parent
BACKENDS = ("sqlite", "postgres")
SCHEMA = "schema.sql"  # the schema a backend's migrations build, not named queries

# Why a query is one backend's own (the reasons the entries below give).
ROW_LOCK = (
    "a PostgreSQL row lock: transactions of other workers run side by side there, while "
    "SQLite's write transaction already holds the whole database"
)
REPLAY = (
    "finds what an earlier attempt of the transaction made when its commit's acknowledgement "
    "was lost (PostgreSQL replays a transaction over a new connection; SQLite's commit is local)"
)
ARRAYS = (
    "a batch written over arrays in one PostgreSQL statement; SQLite runs the one-row "
    "query for each row (executemany, no round trips)"
)
SPLIT = (
    "a step of what PostgreSQL does in one statement (data-modifying CTEs, rows back from a "
    "batch insert); SQLite has neither, so it takes several"
)
ONE_STATEMENT = (
    "PostgreSQL's acquire is one statement: the candidates passed over when locked (SKIP "
    "LOCKED), the per-host pick and the lease in one snapshot and one round trip"
)
RUN_VIEW = (
    "the run's config alone: PostgreSQL sums a run's counters from its host rows on every "
    "select_run, SQLite reads them from the run's row"
)

#: (backend, area file, query) -> (why only that backend has it, the queries of the other
#: backend's file that do the same work).
ONLY_IN: dict[tuple[str, str, str], tuple[str, tuple[str, ...]]] = {
    # Acquire: reclaim expired leases, read candidates, lease them (rules.pick_per_host
    # picks between the last two in Python on SQLite; a row_number() window on PostgreSQL).
    ("sqlite", "frontier.sql", "reclaim_expired"): (SPLIT, ("acquire",)),
    ("sqlite", "frontier.sql", "acquire_candidates"): (SPLIT, ("acquire",)),
    ("sqlite", "frontier.sql", "lease_tasks"): (SPLIT, ("acquire",)),
    ("postgres", "frontier.sql", "acquire"): (
        ONE_STATEMENT, ("reclaim_expired", "acquire_candidates", "lease_tasks")),
    # Admission's counts: PostgreSQL's insert_tasks returns them per host.
    ("sqlite", "frontier.sql", "last_task_id"): (SPLIT, ("insert_tasks",)),
    ("sqlite", "frontier.sql", "count_admitted_by_host"): (SPLIT, ("insert_tasks",)),
    ("sqlite", "frontier.sql", "add_admitted"): (SPLIT, ("insert_tasks", "move_counters")),
    ("postgres", "frontier.sql", "select_leased_by_token"): (REPLAY, ()),
    # A flush marks, counts by outcome and counts by host in one PostgreSQL statement.
    ("sqlite", "coordination.sql", "add_outcome_counts"): (SPLIT, ("count_uncounted",)),
    ("sqlite", "coordination.sql", "mark_counted"): (SPLIT, ("count_uncounted",)),
    ("postgres", "coordination.sql", "lock_host_counts"): (ROW_LOCK, ()),
    ("sqlite", "records.sql", "select_seen_in_run"): (SPLIT, ("insert_sightings",)),
    ("postgres", "records.sql", "insert_sightings"): (
        ARRAYS, ("insert_seen", "select_seen_in_run")),
    ("postgres", "records.sql", "insert_bodies"): (ARRAYS, ("insert_body",)),
    ("postgres", "records.sql", "insert_first_versions"): (ARRAYS, ("insert_version",)),
    ("postgres", "records.sql", "lock_record"): (ROW_LOCK, ()),
    ("postgres", "runs.sql", "lock_run"): (ROW_LOCK, ()),
    ("postgres", "runs.sql", "select_run_by_create_token"): (REPLAY, ()),
    ("postgres", "runs.sql", "select_run_config"): (RUN_VIEW, ("select_run",)),
}  # fmt: skip

#: (backend, area file) -> why only that backend has the file.
FILE_ONLY_IN: dict[tuple[str, str], str] = {
    ("postgres", "budget.sql"): (
        "max_pages as slots of a budget, so that admissions of one run go side by side "
        "without its row lock; SQLite's one writer counts against the run's row"
    ),
    ("postgres", "upgrade.sql"): (
        "migration bookkeeping under an advisory lock, in a schema of the operator's "
        "choosing; SQLite's _db.py does it in a few inline statements under its file lock"
    ),
}


def _files(backend: str) -> set[str]:
    return {p.name for p in (STORE / backend).glob("*.sql") if p.name != SCHEMA}


def _names(backend: str, filename: str) -> set[str]:
    return set(load_queries(f"sitesync.store.{backend}", filename))


def _other(backend: str) -> str:
    return next(b for b in BACKENDS if b != backend)


PAIRED = sorted(_files("sqlite") & _files("postgres"))


def test_every_area_file_has_its_pair_or_a_reason() -> None:
    for backend in BACKENDS:
        alone = {(backend, name) for name in _files(backend) - _files(_other(backend))}
        assert alone == {key for key in FILE_ONLY_IN if key[0] == backend}
    assert "frontier.sql" in PAIRED  # a scan that finds no file would pass everything


@pytest.mark.parametrize("filename", PAIRED)
def test_both_backends_name_each_query_of_an_area_alike(filename: str) -> None:
    for backend in BACKENDS:
        only = _names(backend, filename) - _names(_other(backend), filename)
        allowed = {query for (b, f, query) in ONLY_IN if (b, f) == (backend, filename)}
        assert only - allowed == set(), (
            f"{backend}/{filename}: queries the other backend names otherwise (or lacks): "
            "give the same operation the same name, or say in ONLY_IN why it is "
            f"{backend}'s own"
        )


@pytest.mark.parametrize("key", list(ONLY_IN), ids="/".join)
def test_each_backend_only_query_still_stands_for_something(key: tuple[str, str, str]) -> None:
    backend, filename, query = key
    reason, counterparts = ONLY_IN[key]
    assert reason
    assert query in _names(backend, filename), "gone: drop its entry"
    theirs = _names(_other(backend), filename)
    assert query not in theirs, "both backends have it now: drop its entry"
    assert set(counterparts) <= theirs, f"the other backend's {counterparts} are gone"
