"""The stores' shared decisions (sitesync.store.rules), checked without a database.

The contract suite checks that both backends apply these rules; here the rules themselves
are pinned down, including the properties that must hold for every input.
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from sitesync.errors import IllegalTransition
from sitesync.frontier.transitions import RUN_TRANSITIONS, TaskEvent
from sitesync.models import (
    AssetRecord,
    Lease,
    NewTask,
    ReportVerdict,
    Run,
    RunConfig,
    RunCounters,
    RunStatus,
    TaskReport,
    TaskState,
    WorkerInfo,
)
from sitesync.store import domain_lifecycle, rules


def _run(status: RunStatus = RunStatus.RUNNING, **config: Any) -> Run:
    return Run(
        id=7,
        status=status,
        config=RunConfig(seeds=("https://a.test/",), **config),
        counters=RunCounters(tasks_total=4),
        created_at=0.0,
    )


def _report(task_id: int = 1, *, attempt: int = 1, **fields: Any) -> TaskReport:
    lease = Lease(task_id, 7, f"https://a.test/{task_id}", "a.test", 0, attempt, 99, 10.0)
    return TaskReport(lease=lease, **{"ok": True, **fields})


# -- runs ---------------------------------------------------------------------------------


@pytest.mark.parametrize("current", list(RunStatus))
@pytest.mark.parametrize("to", list(RunStatus))
def test_transitions_follow_the_run_table(current: RunStatus, to: RunStatus) -> None:
    run = _run(current)
    if to in RUN_TRANSITIONS[current]:
        rules.check_transition(run, to)
    else:
        with pytest.raises(IllegalTransition, match=f"run 7 is {current.value}"):
            rules.check_transition(run, to)


def test_a_transition_is_fenced_on_the_status_it_was_decided_on() -> None:
    params = rules.transition_params(_run(RunStatus.RUNNING), RunStatus.COMPLETED, "done", 3.0)
    assert params == {
        "run_id": 7, "status": "completed", "expected": "running", "reason": "done",
        "terminal": True, "pause_or_resume": False, "now": 3.0,
    }  # fmt: skip
    # A pause and a resume only say the run is alive (its heartbeat), not that it worked.
    for start, to in ((RunStatus.RUNNING, RunStatus.PAUSED), (RunStatus.PAUSED, RunStatus.RUNNING)):
        assert rules.transition_params(_run(start), to, None, 3.0)["pause_or_resume"] is True
    assert not rules.transition_params(_run(RunStatus.QUEUED), RunStatus.RUNNING, None, 3.0)[
        "pause_or_resume"
    ]
    with pytest.raises(IllegalTransition):
        rules.transition_params(_run(RunStatus.COMPLETED), RunStatus.RUNNING, None, 3.0)


def test_extended_hosts_appends_new_hosts_in_order_and_says_when_nothing_is_new() -> None:
    assert rules.extended_hosts(("b", "a"), ["a", "c", "b", "d"]) == ("b", "a", "c", "d")
    assert rules.extended_hosts(("b", "a"), ["a"]) is None
    assert rules.extended_hosts((), []) is None


def test_aliases_accumulate_without_the_canonical_host() -> None:
    assert rules.merged_aliases(["x", "y"], ["y", "canon", "z"], "canon") == ["x", "y", "z"]
    assert rules.merged_aliases(["canon"], [], "canon") == []


def test_admission_room_is_what_max_pages_leaves() -> None:
    assert rules.admission_room(_run()) is None
    assert rules.admission_room(_run(max_pages=10)) == 6  # 4 tasks already admitted
    assert rules.admission_room(_run(max_pages=3)) == -1


# -- counters -----------------------------------------------------------------------------


def test_counter_delta_names_every_counter() -> None:
    params = rules.counter_delta(3, 5.0, failed=2)
    assert params == {
        "pending": 0, "assigned": 0, "completed": 0, "failed": 2, "pages_fetched": 0,
        "bytes_fetched": 0, "retries": 0, "run_id": 3, "now": 5.0,
    }  # fmt: skip


@given(leased=st.integers(0, 500), reclaimed=st.integers(0, 500))
def test_an_acquire_moves_as_many_tasks_out_of_pending_as_into_assigned(
    leased: int, reclaimed: int
) -> None:
    delta = rules.leased_delta(1, 0.0, leased, reclaimed)
    if leased == reclaimed == 0:
        assert delta is None
        return
    assert delta is not None
    assert delta["pending"] + delta["assigned"] == 0
    assert delta["assigned"] == leased - reclaimed


@given(n=st.integers(0, 1000))
def test_releases_and_ended_hosts_keep_the_task_total(n: int) -> None:
    released, ended = rules.released_delta(1, 0.0, n), rules.ended_delta(1, 0.0, n)
    if n == 0:
        assert released is None and ended is None
        return
    assert released is not None and ended is not None
    assert (released["pending"], released["assigned"]) == (n, -n)
    assert (ended["pending"], ended["failed"]) == (-n, n)


# -- acquire ------------------------------------------------------------------------------


def test_candidate_scan_reads_more_rows_when_hosts_are_capped() -> None:
    assert rules.candidate_scan(10, None) == 10
    assert rules.candidate_scan(10, 2) == 80


@given(
    hosts=st.lists(st.sampled_from("abcde"), max_size=60),
    limit=st.integers(1, 30),
    per_host=st.one_of(st.none(), st.integers(1, 5)),
)
def test_pick_per_host_keeps_order_the_limit_and_the_cap(
    hosts: list[str], limit: int, per_host: int | None
) -> None:
    candidates = [{"id": i, "host": h} for i, h in enumerate(hosts)]
    picked = rules.pick_per_host(candidates, limit, per_host)
    assert picked == sorted(picked)  # candidates come in priority order and stay in it
    assert len(picked) <= limit
    chosen = [hosts[i] for i in picked]
    if per_host is not None:
        assert all(chosen.count(h) <= per_host for h in set(chosen))
    # Nothing eligible was passed over while the batch had room.
    for i, host in enumerate(hosts):
        if i not in picked and len(picked) < limit:
            assert per_host is not None and chosen.count(host) == per_host


# -- report -------------------------------------------------------------------------------


def test_a_success_completes_the_task() -> None:
    query, params = rules.report_query(_report(http_status=200), max_retries=3, now=50.0)
    assert query == "complete_tasks"
    assert params == {"task_id": 1, "token": 99, "now": 50.0, "http_status": 200, "error": None}


def test_a_failure_retries_later_or_gives_up() -> None:
    report = _report(ok=False, retry_delay=2.5, give_up=True)
    query, params = rules.report_query(report, max_retries=3, now=50.0)
    assert query == "fail_attempts"
    assert params["retry_at"] == 52.5
    assert params["retry"] is False  # give_up: failed at once, attempts left or not
    assert params["http_status"] is None  # no HTTP response is no status, not 0
    assert params["error"] == "failed"  # a failure always says something


@pytest.mark.parametrize(
    ("attempt", "give_up", "event"),
    [
        (1, False, TaskEvent.REPORT_RETRY),
        (2, False, TaskEvent.REPORT_RETRY),
        (3, False, TaskEvent.REPORT_LAST),  # max_retries attempts made
        (4, False, TaskEvent.REPORT_LAST),
        (1, True, TaskEvent.GIVE_UP),
    ],
)
def test_a_failure_retries_while_attempts_are_left_by_the_task_table(
    attempt: int, give_up: bool, event: TaskEvent
) -> None:
    report = _report(ok=False, attempt=attempt, give_up=give_up)
    assert rules.failure_event(report, max_retries=3) is event
    assert rules.retries(report, max_retries=3) is (event is TaskEvent.REPORT_RETRY)


def test_a_tally_counts_each_verdict_and_what_moved() -> None:
    tally = rules.ReportTally()
    link = NewTask("https://a.test/x", "a.test", 1)
    record = AssetRecord("k", "page", "https://a.test/1", "h")
    assert tally.accept(_report(1, http_status=200, bytes_fetched=10, records=(record,)),
                        TaskState.COMPLETED)  # fmt: skip
    assert not tally.accept(
        _report(2, ok=False, http_status=503, records=(record,), discovered=(link,)),
        TaskState.PENDING,
    )  # a retried attempt's records come again with the attempt that ends it
    tally.lost()
    assert not tally.accept(_report(3, ok=False), TaskState.FAILED)  # no records at all
    assert tally.verdicts == [ReportVerdict.ACCEPTED] * 2 + [ReportVerdict.LEASE_LOST] + [
        ReportVerdict.ACCEPTED
    ]
    assert [r.lease.task_id for r in tally.accepted] == [1, 2, 3]
    assert tally.discovered == [link]
    params = tally.counter_params(7, 1.0)
    assert params is not None
    assert {k: params[k] for k in rules.COUNTERS} == {
        "pending": 1, "assigned": -3, "completed": 1, "failed": 1, "pages_fetched": 2,
        "bytes_fetched": 10, "retries": 1,
    }  # fmt: skip


def test_a_batch_of_lost_leases_moves_no_counter() -> None:
    tally = rules.ReportTally()
    tally.lost()
    assert tally.counter_params(7, 1.0) is None
    assert tally.verdicts == [ReportVerdict.LEASE_LOST]


@given(attempts=st.lists(st.integers(1, 30), max_size=20), keep=st.integers(1, 10))
def test_prune_bounds_drop_only_what_is_past_the_bound(attempts: list[int], keep: int) -> None:
    reports = [_report(i, attempt=a) for i, a in enumerate(attempts)]
    bounds = rules.prune_bounds(reports, keep)
    assert set(bounds) == {i for i, a in enumerate(attempts) if a > keep}
    for task_id, oldest_dropped in bounds.items():
        assert attempts[task_id] - oldest_dropped == keep


# -- coordination -------------------------------------------------------------------------


@given(hosts=st.integers(0, 1000), workers=st.integers(0, 100), cap=st.none() | st.integers(1, 50))
def test_fair_shares_cover_every_host_between_the_live_workers(
    hosts: int, workers: int, cap: int | None
) -> None:
    share = rules.fair_share(hosts, workers, cap)
    assert share >= 1
    if cap is not None:
        assert share <= cap
    else:
        assert share * max(1, workers) >= hosts  # together they can hold every host
        assert (share - 1) * max(1, workers) < max(1, hosts)  # and no more than needed


@given(held=st.integers(0, 50), share=st.integers(1, 50))
def test_claims_move_to_the_share_exactly(held: int, share: int) -> None:
    step = rules.claim_step(held, share)
    if step is None:
        assert held == share
    elif step[0] == "drop_surplus_claims":
        assert held > share and held - step[1]["surplus"] == share
    else:
        assert step[0] == "claim_free_hosts" and held + step[1]["limit"] == share


def test_a_gone_worker_is_fenced_on_every_fact_of_its_proof() -> None:
    worker = WorkerInfo("w1", "box", 42, 7, 0.0, 1.0, None, boot_id="b", proc_start=9)
    assert rules.gone_worker_params(worker) == {
        "worker_id": "w1", "host": "box", "pid": 42, "boot_id": "b", "proc_start": 9,
    }  # fmt: skip


# -- supervision --------------------------------------------------------------------------


def test_a_stale_run_is_requeued_or_failed() -> None:
    def step(left: bool, retries: int) -> tuple[str, dict[str, Any]]:
        row = {"workers_left": left, "crash_retries": retries}
        return rules.recovery_step(row, stale_after=30.0, max_crash_retries=2)

    assert step(True, 5) == ("requeue_left", {})  # left cleanly: no retry spent
    assert step(False, 1) == ("requeue_crashed", {"reason": "crashed (no heartbeat for 30s); "
                                                            "re-queued"})  # fmt: skip
    assert step(False, 2) == ("fail_crashed", {})


# -- the domain registry ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("state", "outcome", "status", "blocked", "reachable"),
    [
        ("completed", "ok", 200, False, True),
        ("failed", "http_error", 500, False, True),  # an error page is an answer
        ("failed", "unreachable", None, False, False),
        ("failed", "timeout", None, True, False),
        ("failed", "robots_unavailable", None, False, False),
        ("failed", "blocked", None, True, True),  # robots.txt answered: it disallows all
    ],
)
def test_what_counts_as_a_site_answering(
    state: str, outcome: str, status: int | None, blocked: bool, reachable: bool
) -> None:
    assert domain_lifecycle.root_reachable(state, outcome, status, blocked) is reachable


def _root(host: str, reachable: bool, *, active: bool = True, streak: int = 0) -> dict[str, Any]:
    return {
        "host": host, "state": "completed" if reachable else "failed",
        "outcome": None if reachable else "unreachable", "http_status": None,
        "site_blocked": False, "active": active, "unreachable_streak": streak,
    }  # fmt: skip


def test_the_stale_lifecycle_of_scanned_domains() -> None:
    rows = [
        _root("up.test", True, streak=1),
        _root("new.test", False),
        _root("again.test", False, streak=1),
        _root("gone.test", False, active=False, streak=3),
        _root("two.test", False),
        _root("two.test", True),  # several roots on one host: any answer counts
    ]
    summary, updates = domain_lifecycle.lifecycle_changes(9, rows, 100.0)
    assert summary.reachable == ("up.test", "two.test")
    assert summary.newly_stale == ("new.test",)
    assert summary.deactivated == ("again.test",)  # an inactive one is not deactivated again
    by_host = {u["host"]: (u["active"], u["stale"], u["streak"]) for u in updates}
    assert by_host == {
        "up.test": (True, False, 0),
        "new.test": (True, True, 1),
        "again.test": (False, True, 2),
        "gone.test": (False, True, 4),
        "two.test": (True, False, 0),
    }
    assert all(u["run_id"] == 9 and u["now"] == 100.0 for u in updates)
