"""The navigation sample marks URLs that failed later in the run (issue 14 item 3)."""

from __future__ import annotations

from sitesync.fetch.base import FetchOutcome
from sitesync.models import Task, TaskState
from sitesync.readmodel.navigation import failure_of, mark_failed


def task(state: TaskState, outcome: str | None, status: int | None) -> Task:
    return Task(
        id=1, run_id=1, url="http://a.test/x", host="a.test", state=state, depth=1, priority=0,
        attempt_count=1, next_eligible_at=0, lease_owner=None, lease_expires_at=None,
        last_error=None, http_status=status,
        outcome=None if outcome is None else FetchOutcome(outcome),
    )  # fmt: skip


def test_what_counts_as_failed() -> None:
    assert failure_of(None) is None
    assert failure_of(task(TaskState.PENDING, None, None)) is None  # not tried yet
    assert failure_of(task(TaskState.COMPLETED, "success", 200)) is None
    assert failure_of(task(TaskState.COMPLETED, "undecodable", 200)) is None
    assert failure_of(task(TaskState.COMPLETED, "http_error", 404)) == "http_error (HTTP 404)"
    assert failure_of(task(TaskState.COMPLETED, "blocked", 403)) == "blocked (HTTP 403)"
    assert failure_of(task(TaskState.FAILED, "http_error", 500)) == "http_error (HTTP 500)"
    assert failure_of(task(TaskState.FAILED, "timeout", None)) == "timeout"


def test_marks_keep_order_and_extend_the_shortfall() -> None:
    data = {
        "urls": [{"url": "http://a.test/1", "found_in": "nav"}, "http://a.test/2"],
        "shortfall": "only 2 internal navigational links",
    }
    marked = mark_failed(data, {"http://a.test/2": "http_error (HTTP 404)"})
    assert marked["urls"] == [
        {"url": "http://a.test/1", "found_in": "nav"},
        {"url": "http://a.test/2", "failed": "http_error (HTTP 404)"},
    ]
    assert marked["shortfall"] == (
        "only 2 internal navigational links; 1 of the 2 sampled URLs failed in this run (1 usable)"
    )
    assert mark_failed(data, {}) == {**data, "urls": [data["urls"][0], {"url": "http://a.test/2"}]}
