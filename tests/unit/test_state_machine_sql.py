"""The SQL the stores run moves tasks and runs only as the table says.

``sitesync.frontier.transitions`` is the one table of task and run transitions; the stores
write each move as SQL. This test reads every named query of both backends
(``store/sqlite/*.sql``, ``store/postgres/*.sql``), finds each statement that sets a task's
``state`` or a run's ``status`` (an UPDATE, an INSERT, an upsert), reads the state it is
guarded on (``WHERE state = '...'`` / ``IN (...)``, directly or through the CTE its rows
come from) and the states it writes (a literal, or each branch of a CASE), and fails on:

- a move that is no row of the table for the events the query makes (``QUERY_EVENTS``: a
  query that sets a state must name them). An INSERT moves a task from DISCOVERED, and
  creates a run as ``RUN_CREATED_AS``;
- a move it cannot check: no guard on the old state, a state taken from a parameter, an
  upsert that changes the state, an INSERT that leaves the state to the schema's default;
- a row of the task table that a backend's SQL never makes.

The few statements that are checked another way are in ``CHECKED_ELSEWHERE`` and
``COMPOSED``, each with its reason, and each reason is checked here too. Text, not a
database: it runs in a few seconds and names the query at fault.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

import sitesync
from sitesync.errors import IllegalTransition
from sitesync.frontier.transitions import (
    RUN_CREATED_AS,
    RUN_TRANSITIONS,
    TASK_TRANSITIONS,
    RunEvent,
    TaskEvent,
    next_state,
    next_status,
)
from sitesync.models import Run, RunConfig, RunCounters, RunStatus, TaskState
from sitesync.store import rules
from sitesync.store._sql import load_queries

STORE = Path(sitesync.__file__).parent / "store"
BACKENDS = ("sqlite", "postgres")
#: The column each table keeps its state machine's state in.
STATE_COLUMN = {"tasks": "state", "runs": "status"}

#: A parameter of either backend's style: ``:name`` (SQLite), ``%(name)s`` (PostgreSQL).
PARAM = re.compile(r"^(?::(\w+)|%\((\w+)\)s)$")

#: Statements whose states come from parameters, checked on the Python that binds them:
#: query -> (the parameter its guard compares the old state with, the one it writes).
CHECKED_ELSEWHERE: dict[str, tuple[str | None, str]] = {
    # Both backends: `SET status = :status ... WHERE status = :expected`, both bound only by
    # rules.transition_params, which refuses a move the run table does not allow
    # (test_transition_params_allow_exactly_the_table).
    "update_run_status": ("expected", "status"),
    # Both backends: a new run (no old state); create_run binds the table's RUN_CREATED_AS
    # (test_the_parametrised_statements_are_bound_as_the_allowlist_says).
    "insert_run": (None, "status"),
}

#: The events (rows of the table) each statement that sets a literal state makes, by query
#: name (the names of both backends). A statement's every move must be one of its events'
#: rows: a guard widened to a state its event does not start from fails even when another
#: event would allow the move.
_T, _R = TaskEvent, RunEvent
QUERY_EVENTS: dict[str, tuple[TaskEvent, ...] | tuple[RunEvent, ...]] = {
    "insert_tasks": (_T.ADMIT,),
    "lease_tasks": (_T.ACQUIRE,),
    # release_gone_worker only ends the gone worker's leases (end_worker_leases): the next
    # acquire returns them to pending as it does expired ones.
    "reclaim_expired": (_T.LEASE_EXPIRED, _T.WORKER_GONE),
    "acquire": (_T.LEASE_EXPIRED, _T.WORKER_GONE, _T.ACQUIRE),
    "complete_tasks": (_T.REPORT_OK,),
    "fail_attempts": (_T.REPORT_RETRY, _T.REPORT_LAST, _T.GIVE_UP),
    "release_leases": (_T.RELEASE,),
    "release_worker": (_T.RELEASE_WORKER,),
    "end_host_tasks": (_T.HOST_ENDED,),
    "start_queued_run": (_R.START,),
    "complete_run_if_drained": (_R.COMPLETE,),
    "requeue_crashed": (_R.REQUEUE,),
    "requeue_left": (_R.REQUEUE,),
    "fail_crashed": (_R.FAIL,),
}

#: Statements that make two rows of the table in one step, with the rows they chain.
#: PostgreSQL's acquire leases a task whose lease expired directly (SQLite returns it to
#: PENDING first, then leases it again: two statements, each a row of its own).
COMPOSED: dict[tuple[str, str], tuple[TaskState, tuple[TaskEvent, ...]]] = {
    ("postgres", "acquire"): (TaskState.ASSIGNED, (TaskEvent.LEASE_EXPIRED, TaskEvent.ACQUIRE)),
}


@dataclass(frozen=True)
class Change:
    """One statement that sets a state: where it is, the states it is guarded on (``None``:
    no guard the test can read) and the states it writes (``None``: a parameter)."""

    backend: str
    query: str
    table: str
    kind: str  # "update" or "insert"
    guard: frozenset[str] | None
    targets: frozenset[str] | None
    problem: str | None = None  # something that makes the change uncheckable
    # The parameters the guard compares with and the state is written from, if any.
    params: tuple[str | None, str | None] = (None, None)

    def __str__(self) -> str:
        return f"{self.backend}:{self.query} ({self.kind} {self.table})"


# -- reading SQL text ---------------------------------------------------------------------


def _strip_comments(sql: str) -> str:
    return re.sub(r"--[^\n]*", "", sql)


def _depths(text: str) -> Iterator[tuple[int, str, int]]:
    """(position, character, paren depth before it), outside string literals."""
    depth, quoted = 0, False
    for i, ch in enumerate(text):
        if ch == "'":
            quoted = not quoted
        if quoted or ch == "'":
            continue
        yield i, ch, depth
        depth += {"(": 1, ")": -1}.get(ch, 0)


def _statement_from(text: str, start: int) -> str:
    """The statement starting at ``start``: up to ``;`` or the parenthesis that closes the
    CTE it sits in."""
    for i, ch, depth in _depths(text[start:]):
        if (ch == ";" and depth == 0) or (ch == ")" and depth == 0):
            return text[start : start + i]
    return text[start:]


def _top_level(text: str, pattern: str) -> list[re.Match[str]]:
    """Matches of ``pattern`` outside parentheses and string literals."""
    level = {i: depth for i, _, depth in _depths(text)}
    return [m for m in re.finditer(pattern, text, re.I) if level.get(m.start()) == 0]


def _split(text: str, separator: str) -> list[str]:
    """``text`` cut at each top-level ``separator`` (a regex)."""
    cuts = _top_level(text, separator)
    starts = [0, *(m.end() for m in cuts)]
    ends = [*(m.start() for m in cuts), len(text)]
    return [text[a:b].strip() for a, b in zip(starts, ends, strict=True)]


def _clause(text: str, keyword: str, enders: str) -> str | None:
    """The top-level clause after ``keyword``, up to the first top-level ``enders``."""
    found = _top_level(text, rf"\b{keyword}\b")
    if not found:
        return None
    rest = text[found[0].end() :]
    end = _top_level(rest, enders)
    return rest[: end[0].start()] if end else rest


def _group_after(text: str, start: int) -> str:
    """The parenthesised group that starts at or after ``start`` (without its parens)."""
    open_at = text.index("(", start)
    for i, ch, depth in _depths(text[open_at:]):
        if ch == ")" and depth == 1:
            return text[open_at + 1 : open_at + i]
    raise AssertionError(f"unbalanced parentheses after: {text[start : start + 80]!r}")


WHERE_ENDS = r"\b(RETURNING|ORDER\s+BY|GROUP\s+BY|LIMIT|FOR\s+UPDATE|UNION)\b"


def _states_in(expr: str) -> frozenset[str] | None:
    """The states an assigned expression writes: a literal, or every THEN/ELSE branch of a
    CASE; None for anything else (a parameter, a column)."""
    expr = expr.strip()
    if re.fullmatch(r"'(\w+)'", expr):
        return frozenset({expr.strip("'")})
    if expr.upper().startswith("CASE"):
        branches = re.findall(r"\b(?:THEN|ELSE)\s+'(\w+)'", expr, re.I)
        others = re.findall(r"\b(?:THEN|ELSE)\s+(?!')", expr, re.I)
        return frozenset(branches) if branches and not others else None
    return None


def _param(expr: str | None) -> str | None:
    """The parameter ``expr`` is, if it is one."""
    m = PARAM.fullmatch((expr or "").strip())
    return (m.group(1) or m.group(2)) if m else None


def _param_guard(where: str | None, column: str) -> str | None:
    """The parameter a top-level ``column = <parameter>`` of the WHERE clause compares with."""
    for conjunct in _split(where or "", r"\bAND\b"):
        if m := re.fullmatch(rf"(?:\w+\.)?{column}\s*=\s*(\S+)", conjunct, re.I | re.S):
            return _param(m.group(1))
    return None


def _guard_of(where: str | None, column: str) -> frozenset[str] | None:
    """The states a WHERE clause holds the row to (a top-level ``column = 'x'`` or
    ``column IN ('x', ...)``); None without one."""
    if where is None:
        return None
    for conjunct in _split(where, r"\bAND\b"):
        qualified = rf"(?:\w+\.)?{column}"
        if m := re.fullmatch(rf"{qualified}\s*=\s*'(\w+)'", conjunct, re.I | re.S):
            return frozenset({m.group(1)})
        if m := re.fullmatch(rf"{qualified}\s+IN\s*\(([^()]*)\)", conjunct, re.I | re.S):
            return frozenset(re.findall(r"'(\w+)'", m.group(1)))
    return None


# -- CTEs: where the rows of an UPDATE ... FROM cte / WHERE id IN (SELECT id FROM cte) come from


def _ctes(query: str) -> dict[str, str]:
    return {
        m.group(1): _group_after(query, m.end() - 1)
        for m in re.finditer(r"\b(\w+)\s+AS\s+\(", query, re.I)
        if m.group(1).upper() not in {"CAST"}
    }


def _cte_guard(name: str, ctes: dict[str, str], column: str) -> frozenset[str] | None:
    """The states the rows of CTE ``name`` can be in: its own guard if it reads ``tasks``
    (None: unguarded), else the union of the CTEs it reads (empty: it reads no tasks)."""
    body = ctes[name]
    sources = set(re.findall(r"\bFROM\s+(\w+)", body, re.I))
    if "tasks" in sources:
        return _guard_of(_clause(body, "WHERE", WHERE_ENDS), column)
    union: set[str] = set()
    for source in sources & ctes.keys():
        guard = _cte_guard(source, ctes, column)
        if guard is None:
            return None
        union |= guard
    return frozenset(union)


def _guard_through_ctes(
    statement: str, where: str | None, ctes: dict[str, str], column: str
) -> frozenset[str] | None:
    """The guard of an UPDATE whose rows are picked by CTEs: ``FROM cte`` or a conjunct
    ``id IN (SELECT id FROM cte)`` (``NOT IN`` picks none)."""
    names = re.findall(r"^\S+\s+IN\s*\(\s*SELECT\s+\w+\s+FROM\s+(\w+)\s*\)$",
                       "\n".join(_split(where or "", r"\bAND\b")), re.I | re.M)  # fmt: skip
    source = _clause(statement, "FROM", r"\bWHERE\b|\bRETURNING\b")
    if source is not None:
        names += re.findall(r"\b(\w+)\b", source)
    picked = [name for name in names if name in ctes]
    if not picked:
        return None
    union: set[str] = set()
    for name in picked:
        guard = _cte_guard(name, ctes, column)
        if not guard:
            return None
        union |= guard
    return frozenset(union)


# -- the changes of one query -------------------------------------------------------------

WRITER = re.compile(r"\b(UPDATE|INSERT\s+INTO)\s+(tasks|runs)\b(?:\s+AS\s+\w+)?", re.I)


def _update(backend: str, name: str, table: str, statement: str, query: str) -> Change | None:
    column = STATE_COLUMN[table]
    assignments = _split(_clause(statement, "SET", r"\b(FROM|WHERE|RETURNING)\b") or "", ",")
    written = [
        m.group(1)
        for a in assignments
        if (m := re.fullmatch(rf"(?:\w+\.)?{column}\s*=\s*(.+)", a, re.I | re.S))
    ]
    if not written:
        return None  # the statement leaves the state alone (a heartbeat, a renewal)
    where = _clause(statement, "WHERE", WHERE_ENDS)
    guard = _guard_of(where, column)
    if guard is None:
        guard = _guard_through_ctes(statement, where, _ctes(query), column)
    params = (_param_guard(where, column), _param(written[0]))
    return Change(backend, name, table, "update", guard, _states_in(written[0]), params=params)


def _insert(backend: str, name: str, table: str, statement: str) -> Change:
    column = STATE_COLUMN[table]
    columns = [c.strip() for c in _group_after(statement, 0).split(",")]
    upsert = _clause(statement, r"DO\s+UPDATE", r"\bWHERE\b|\bRETURNING\b")
    if upsert is not None and re.search(rf"(^|,)\s*{column}\s*=", upsert, re.I):
        return Change(backend, name, table, "insert", None, None, "an upsert sets the state")
    if column not in columns:
        return Change(backend, name, table, "insert", None, None, "state left to the default")
    after_columns = statement[statement.index(")") + 1 :]
    if re.match(r"\s*VALUES\b", after_columns, re.I):
        values = _split(_group_after(after_columns, 0), ",")
    else:
        selected = _clause(after_columns, "SELECT", r"\bFROM\b") or ""
        values = _split(selected, ",")
    value = values[columns.index(column)]
    return Change(backend, name, table, "insert", frozenset({"(new)"}), _states_in(value),
                  params=(None, _param(value)))  # fmt: skip


def changes_in(backend: str, name: str, query: str) -> list[Change]:
    """Every statement of one named query that sets a task's state or a run's status."""
    query = _strip_comments(query)
    found: list[Change] = []
    for m in WRITER.finditer(query):
        table, statement = m.group(2).lower(), _statement_from(query, m.end())
        if m.group(1).upper().startswith("UPDATE"):
            change = _update(backend, name, table, statement, query)
            if change is not None:
                found.append(change)
        else:
            found.append(_insert(backend, name, table, statement))
    return found


def all_changes() -> list[Change]:
    found: list[Change] = []
    for backend in BACKENDS:
        package = f"sitesync.store.{backend}"
        for path in sorted((STORE / backend).glob("*.sql")):
            for name, query in load_queries(package, path.name).items():
                found.extend(changes_in(backend, name, query))
    return found


CHANGES = all_changes()


# -- the checks ---------------------------------------------------------------------------


def _olds(change: Change) -> set[str]:
    """The states a change moves from: its guard, or nothing stored yet for an INSERT."""
    assert change.guard is not None
    return {TaskState.DISCOVERED.value} if change.kind == "insert" else set(change.guard)


def _composed_move(key: tuple[str, str]) -> tuple[TaskState, TaskState]:
    start, events = COMPOSED[key]
    state: TaskState | None = start
    for event in events:
        assert state is not None, f"{key}: {events} is not a path of the task table"
        state = next_state(state, event)
    assert state is not None, f"{key}: {events} is not a path of the task table"
    return start, state


def _step(change: Change, old: str, event: TaskEvent | RunEvent) -> str | None:
    """Where ``event`` takes a row of the change's table in state ``old`` (None: nowhere)."""
    if change.table == "runs":
        status = next_status(RunStatus(old), RunEvent(event))
        return None if status is None else status.value
    state = next_state(TaskState(old), TaskEvent(event))
    return None if state is None else state.value


def _rows_made(change: Change) -> set[tuple[str, str, str]]:
    """The rows of the table (state, event, to) the change makes; fails on a move that is
    none of its events' rows (nor, where allowed, a path of two)."""
    assert change.targets is not None
    events = QUERY_EVENTS.get(change.query)
    assert events, f"{change} sets a state: name the events it makes in QUERY_EVENTS"
    key = (change.backend, change.query)
    made: set[tuple[str, str, str]] = set()
    for old in _olds(change):
        for new in change.targets:
            rows = {(old, e.value, new) for e in events if _step(change, old, e) == new}
            composed = key in COMPOSED and _composed_move(key) == (old, new)
            assert rows or composed, (
                f"{change}: {old} -> {new} is no row of the table for {[e.value for e in events]}"
            )
            made |= rows
    return made


def test_the_scan_reads_the_known_writers_of_both_backends() -> None:
    """Guard against a reader that silently finds nothing: the queries every store has."""
    names = {(c.backend, c.query) for c in CHANGES}
    for backend in BACKENDS:
        for query in ("release_worker", "end_host_tasks", "update_run_status", "fail_crashed",
                      "start_queued_run", "complete_run_if_drained", "insert_run"):  # fmt: skip
            assert (backend, query) in names
    assert {("sqlite", "complete_tasks"), ("sqlite", "lease_tasks"), ("sqlite", "insert_tasks"),
            ("postgres", "complete_tasks"), ("postgres", "acquire"),
            ("postgres", "insert_tasks")} <= names  # fmt: skip


CHECKED_HERE = [c for c in CHANGES if c.query not in CHECKED_ELSEWHERE]


@pytest.mark.parametrize("change", CHECKED_HERE, ids=str)
def test_every_state_change_is_guarded_and_allowed_by_the_table(change: Change) -> None:
    assert change.problem is None, f"{change}: {change.problem}"
    assert change.guard, f"{change}: no guard on the old state the table could check"
    assert change.targets, f"{change}: writes a state that is not a literal"
    if change.table == "runs" and change.kind == "insert":
        assert change.targets == {RUN_CREATED_AS.value}, f"{change}: runs are created queued"
        return
    _rows_made(change)


def test_every_task_row_is_made_by_each_backend() -> None:
    """The other way round: a row of the table no SQL makes is a table that lies."""
    for backend in BACKENDS:
        made: set[tuple[str, str, str]] = set()
        for change in CHECKED_HERE:
            if change.backend == backend and change.table == "tasks":
                made |= _rows_made(change)
        rows = {(t.state.value, t.event.value, t.to.value) for t in TASK_TRANSITIONS}
        assert rows - made == set(), backend


# -- what CHECKED_ELSEWHERE and COMPOSED rely on ------------------------------------------


def _run(status: RunStatus) -> Run:
    return Run(id=7, status=status, config=RunConfig(seeds=("http://a.test/",)),
               counters=RunCounters(), created_at=0.0)  # fmt: skip


@pytest.mark.parametrize("old", list(RunStatus))
def test_transition_params_allow_exactly_the_table(old: RunStatus) -> None:
    """update_run_status writes ``status`` fenced on ``expected``: only these two make it."""
    for new in RunStatus:
        if new in RUN_TRANSITIONS[old]:
            params = rules.transition_params(_run(old), new, None, 1.0)
            assert (params["expected"], params["status"]) == (old.value, new.value)
        else:
            with pytest.raises(IllegalTransition):
                rules.transition_params(_run(old), new, None, 1.0)


def test_the_parametrised_statements_are_bound_as_the_allowlist_says() -> None:
    seen = set()
    for change in CHANGES:
        if change.query in CHECKED_ELSEWHERE:
            # Still fenced on the parameter the Python checks, and written from the other.
            assert change.params == CHECKED_ELSEWHERE[change.query], change
            seen.add(change.query)
    assert seen == set(CHECKED_ELSEWHERE), "an allowlist entry names no query: drop it"
    for backend in BACKENDS:
        for path in (STORE / backend).glob("*.py"):
            source = path.read_text()
            if '"update_run_status"' in source:
                assert "transition_params(" in source, path
            if '"insert_run"' in source:
                assert '"status": RUN_CREATED_AS.value' in source, path


def test_the_composed_moves_are_paths_of_the_table() -> None:
    for key in COMPOSED:
        assert key in {(c.backend, c.query) for c in CHANGES}, f"{key} is gone: drop it"
        _composed_move(key)


def test_the_store_writes_states_only_in_its_sql_files() -> None:
    """No state change hides in Python: the store's modules hold no SQL that writes them."""
    sql_writer = re.compile(WRITER.pattern)  # upper case only: SQL, not prose ("update runs")
    for path in STORE.rglob("*.py"):
        assert not sql_writer.search(path.read_text()), path
