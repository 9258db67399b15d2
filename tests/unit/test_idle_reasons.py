"""Why a run is idle: the pure function behind ``sitesync status``, the API and the dashboard."""

from __future__ import annotations

import time
from dataclasses import replace

from sitesync.models import Claim, HostBacklog, HostState, RunStatus, WorkerInfo, WorkerLeases
from sitesync.readmodel.idle import IdleFacts, ago, clock_time, idle_reasons

NOW = time.mktime((2031, 5, 6, 14, 0, 0, 0, 0, -1))  # 14:00 local time


def facts(**changes: object) -> IdleFacts:
    base = IdleFacts(
        now=NOW,
        run_id=7,
        status=RunStatus.RUNNING,
        status_reason=None,
        last_activity_at=NOW - 1,
        pending=12,
        assigned=0,
        next_eligible_at=NOW - 5,
        workers=(worker("w-1", heartbeat=NOW - 2),),
        worker_ttl=120,
        idle_after=60,
    )
    return replace(base, **changes)  # type: ignore[arg-type]


def worker(worker_id: str, *, heartbeat: float, stopped: float | None = None) -> WorkerInfo:
    return WorkerInfo(worker_id, "machine", 42, 7, NOW - 3600, heartbeat, stopped)


def test_a_run_fetching_pages_is_not_idle() -> None:
    assert idle_reasons(facts(assigned=4)) == []


def test_terminal_runs_have_no_idle_reason() -> None:
    for status in (RunStatus.COMPLETED, RunStatus.STOPPED, RunStatus.CANCELLED, RunStatus.FAILED):
        assert idle_reasons(facts(status=status, last_activity_at=NOW - 9999)) == []


def test_paused_by_a_user_says_when() -> None:
    paused_at = NOW - 50 * 60  # 13:10
    assert idle_reasons(facts(status=RunStatus.PAUSED, last_activity_at=paused_at)) == [
        "paused by a user at 13:10"
    ]
    reason = "paused by a user from the dashboard"
    assert idle_reasons(
        facts(status=RunStatus.PAUSED, last_activity_at=paused_at, status_reason=reason)
    ) == ["paused by a user from the dashboard at 13:10"]
    assert idle_reasons(
        facts(status=RunStatus.PAUSED, last_activity_at=paused_at, status_reason="maintenance")
    ) == ["paused at 13:10: maintenance"]


def test_a_queued_run_waits_for_a_worker() -> None:
    assert idle_reasons(facts(status=RunStatus.QUEUED)) == ["queued: no worker has started it yet"]


def test_pending_tasks_waiting_for_backoff_say_until_when() -> None:
    until = NOW + 5 * 60  # 14:05
    assert idle_reasons(facts(next_eligible_at=until)) == [
        "all 12 pending tasks wait for Retry-After/backoff until 14:05"
    ]
    assert idle_reasons(facts(pending=1, next_eligible_at=until)) == [
        "all 1 pending task wait for Retry-After/backoff until 14:05"
    ]


def test_expired_leases_name_the_worker_and_its_last_heartbeat() -> None:
    stale = worker("w-7", heartbeat=NOW - 4 * 60)
    reasons = idle_reasons(
        facts(
            assigned=2,
            last_activity_at=NOW - 300,
            workers=(worker("w-1", heartbeat=NOW - 2), stale),
            leases=(WorkerLeases("w-7", tasks=2, expired=2, earliest_expiry=NOW - 100),),
        )
    )
    assert reasons == [
        "2 tasks leased by worker w-7, last heartbeat 4 min ago (leases expired: they go "
        "back to pending when a worker next takes work)"
    ]


def test_a_run_with_no_worker_says_so() -> None:
    assert idle_reasons(facts(workers=())) == [
        "no worker has joined: start one with 'sitesync worker --run 7'"
    ]
    silent = worker("w-3", heartbeat=NOW - 10 * 60)
    assert idle_reasons(facts(workers=(silent,))) == [
        "no live worker: the last heartbeat (w-3) was 10 min ago"
    ]
    stopped = worker("w-4", heartbeat=NOW - 60, stopped=NOW - 25 * 60)
    assert idle_reasons(facts(workers=(stopped,))) == [
        "no live worker: the last one (w-4) stopped at 13:35"
    ]


def test_hosts_held_by_a_silent_worker_are_free_only_when_its_claim_expires() -> None:
    silent = worker("w-9", heartbeat=NOW - 5 * 60)
    claim = Claim(7, "a.test", "w-9", expires_at=NOW + 7 * 60, claimed_at=NOW - 600)
    reasons = idle_reasons(
        facts(
            workers=(worker("w-1", heartbeat=NOW - 1), silent),
            claims=(claim, replace(claim, host="b.test"), replace(claim, host="idle.test")),
            backlog=(HostBacklog("a.test", 10), HostBacklog("b.test", 2)),
        )
    )
    assert reasons == [
        "2 hosts (a.test, b.test) claimed by worker w-9, last heartbeat 5 min ago: free at 14:07"
    ]


def test_robots_txt_unreachable_or_5xx_blocks_a_host_until_rechecked() -> None:
    def state(host: str, status: int, expires: float) -> HostState:
        return HostState(host, 0.0, f"http://{host}", status, None, expires)

    reasons = idle_reasons(
        facts(
            host_states=(
                state("down.test", 0, NOW + 15 * 60),
                state("busy.test", 503, NOW + 20 * 60),
                state("fine.test", 200, NOW + 20 * 60),
                state("rechecked.test", 0, NOW - 1),
            )
        )
    )
    assert reasons == [
        "robots.txt of host down.test unreachable: nothing fetched there, retry at 14:15",
        "robots.txt of host busy.test HTTP 503: nothing fetched there, retry at 14:20",
    ]


def test_a_host_pause_from_retry_after_is_reported() -> None:
    paused = HostState("slow.test", NOW + 3 * 60, None, None, None, None)
    assert idle_reasons(facts(host_states=(paused,))) == [
        "host slow.test asked to wait (Retry-After) until 14:03"
    ]


def test_a_stalled_run_without_a_known_cause_says_how_long() -> None:
    assert idle_reasons(facts(assigned=3, last_activity_at=NOW - 150)) == [
        "no progress for 2 min: 12 pending, 3 in flight"
    ]
    # pending work but nothing in flight, recently active, no cause: a moment between leases
    assert idle_reasons(facts()) == []


def test_several_causes_are_all_listed() -> None:
    reasons = idle_reasons(
        facts(
            workers=(),
            next_eligible_at=NOW + 60,
            host_states=(HostState("x.test", 0.0, "http://x.test", 0, None, NOW + 60),),
        )
    )
    assert [reason.split(":")[0] for reason in reasons] == [
        "no worker has joined",
        "all 12 pending tasks wait for Retry-After/backoff until 14",
        "robots.txt of host x.test unreachable",
    ]


def test_times_read_like_a_person_wrote_them() -> None:
    assert [ago(s) for s in (5, 89, 240, 7300)] == ["5 s", "89 s", "4 min", "2 h 1 min"]
    assert clock_time(NOW + 65 * 60, NOW) == "15:05"
    assert clock_time(NOW + 86400, NOW) == "2031-05-07 14:00"
