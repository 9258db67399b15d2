"""The domain registry, scans and schedules (SPEC S1, S2), on every backend."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime

import pytest

from sitesync.config import Settings
from sitesync.errors import ConfigError, ScanConflict
from sitesync.fetch.base import FetchOutcome
from sitesync.models import (
    HostStatus,
    NewTask,
    RunConfig,
    RunStatus,
    ScanSummary,
    TaskReport,
)
from sitesync.runs.scans import (
    finish_completed_scans,
    next_run_after,
    start_due_scans,
    start_scan,
)
from sitesync.store.base import Store

SCOPE = "fr"
UP = 200


def config(*hosts: str) -> RunConfig:
    return RunConfig(seeds=tuple(f"http://{host}/" for host in hosts))


async def scan(store: Store, answers: dict[str, int | str] | None = None) -> ScanSummary | None:
    """One scan of SCOPE run to completion by hand: each active domain's root answers with
    an HTTP status (int; 200 unless named) or fails for good with an outcome (str)."""
    return await store.apply_scan_results(await complete_scan(store, answers))


async def complete_scan(store: Store, answers: dict[str, int | str] | None = None) -> int:
    """A scan of SCOPE completed by hand, its lifecycle not applied (as when the worker
    that completed it dies at once); the run's id."""
    answers = answers or {}
    hosts = [d.host for d in await store.list_domains(scope=SCOPE, active=True)]
    run = await store.start_scan(SCOPE, config(*hosts))
    await store.transition_run(run.id, RunStatus.RUNNING)
    roots = [NewTask(url=f"http://{host}/", host=host, depth=0) for host in hosts]
    await store.add_tasks(run.id, roots)
    await store.mark_seeded(run.id)
    leases = await store.acquire(run.id, worker_id="w", limit=100, lease_seconds=30)
    reports = []
    for lease in leases:
        answer = answers.get(lease.host, UP)
        if isinstance(answer, int):
            reports.append(
                TaskReport(lease=lease, ok=True, http_status=answer, outcome=FetchOutcome.SUCCESS)
            )
        else:
            reports.append(
                TaskReport(
                    lease=lease, ok=False, error=answer, give_up=True, outcome=FetchOutcome(answer)
                )
            )
    await store.report(run.id, reports)
    assert await store.complete_if_drained(run.id)
    return run.id


async def states(store: Store) -> dict[str, tuple[bool, bool, int]]:
    """host -> (active, stale, streak) of every registered domain."""
    return {d.host: (d.active, d.stale, d.unreachable_streak) for d in await store.list_domains()}


# -- registering domains -------------------------------------------------------------------


async def test_import_counts_new_hosts_and_moves_known_ones(store: Store) -> None:
    assert await store.import_domains(SCOPE, ["a.test", "b.test", "a.test"]) == 2
    assert await store.import_domains(SCOPE, ["b.test", "c.test"]) == 1
    assert await store.import_domains("de", ["a.test"]) == 0  # known: it moves
    assert [d.host for d in await store.list_domains(scope=SCOPE)] == ["b.test", "c.test"]
    [moved] = await store.list_domains(scope="de")
    assert moved.host == "a.test" and moved.active and not moved.stale


async def test_a_host_only_crawled_is_not_registered_until_imported(store: Store) -> None:
    await store.record_root_redirect("x.test", canonical_host="www.x.test", aliases=[])
    assert await store.list_domains() == []
    assert await store.import_domains(SCOPE, ["x.test"]) == 1
    [domain] = await store.list_domains()
    assert domain.canonical_host == "www.x.test"  # what the crawl learnt is kept
    assert domain.scope == SCOPE


async def test_list_filters_by_scope_stale_and_active(store: Store) -> None:
    await store.import_domains(SCOPE, ["a.test", "b.test", "c.test"])
    await store.import_domains("de", ["d.test"])
    await scan(store, {"c.test": "timeout"})
    await scan(store, {"b.test": "unreachable", "c.test": "timeout"})
    assert await hosts(store, stale=True) == ["b.test", "c.test"]
    assert await hosts(store, active=False) == ["c.test"]
    assert await hosts(store, scope=SCOPE, stale=True, active=True) == ["b.test"]
    assert await hosts(store, stale=False) == ["d.test", "a.test"]  # by scope, then host


async def hosts(store: Store, **filters: str | bool) -> list[str]:
    return [d.host for d in await store.list_domains(**filters)]  # type: ignore[arg-type]


# -- a completed scan's lifecycle, applied once whoever finishes it ------------------------


async def test_a_scan_left_unapplied_is_listed_and_finished_exactly_once(store: Store) -> None:
    await store.import_domains(SCOPE, ["a.test", "b.test"])
    plain = await store.create_run(config("a.test"))  # not a scan: never listed
    await store.transition_run(plain.id, RunStatus.RUNNING)
    await store.transition_run(plain.id, RunStatus.COMPLETED)
    assert await store.list_unapplied_scans() == []
    run_id = await complete_scan(store, {"b.test": "unreachable"})
    assert await store.list_unapplied_scans() == [run_id]
    # Everyone who sees it at once (workers, supervisors) asks; one applies it.
    finished = await asyncio.gather(*(finish_completed_scans(store) for _ in range(4)))
    assert [len(summaries) for summaries in finished].count(1) == 1
    assert sum(len(summaries) for summaries in finished) == 1
    assert await store.list_unapplied_scans() == []
    assert await finish_completed_scans(store) == []
    assert (await states(store))["b.test"] == (True, True, 1)  # one miss counted, not four


async def test_an_active_scan_is_not_finished_early(store: Store) -> None:
    await store.import_domains(SCOPE, ["a.test"])
    run = await store.start_scan(SCOPE, config("a.test"))
    await store.transition_run(run.id, RunStatus.RUNNING)
    assert await store.list_unapplied_scans() == []
    assert await finish_completed_scans(store) == []


async def test_the_next_scan_of_a_scope_first_finishes_the_last_one(store: Store) -> None:
    await store.import_domains(SCOPE, ["a.test"])
    first = await complete_scan(store, {"a.test": "unreachable"})
    second = await start_scan(store, SCOPE, Settings())
    assert await store.list_unapplied_scans() == []
    [domain] = await store.list_domains(scope=SCOPE)
    assert domain.unreachable_streak == 1 and domain.last_run_id == first != second.id


# -- one active scan per scope ---------------------------------------------------------------


async def test_a_second_start_reports_the_active_run_and_creates_nothing(store: Store) -> None:
    await store.import_domains(SCOPE, ["a.test"])
    first = await store.start_scan(SCOPE, config("a.test"))
    assert first.status is RunStatus.QUEUED and first.scope == SCOPE
    with pytest.raises(ScanConflict) as caught:
        await store.start_scan(SCOPE, config("a.test"))
    assert caught.value.run_id == first.id and caught.value.scope == SCOPE
    await store.transition_run(first.id, RunStatus.RUNNING)
    await store.transition_run(first.id, RunStatus.PAUSED)
    with pytest.raises(ScanConflict):  # paused is still active
        await store.start_scan(SCOPE, config("a.test"))
    assert [run.id for run in await store.list_runs()] == [first.id]
    other = await store.start_scan("de", config("d.test"))  # other scopes are independent
    await store.transition_run(first.id, RunStatus.STOPPED)
    again = await store.start_scan(SCOPE, config("a.test"))  # terminal: a new scan may start
    assert len({first.id, other.id, again.id}) == 3 and again.scope == SCOPE


async def test_concurrent_starts_create_exactly_one_run(store: Store) -> None:
    results = await asyncio.gather(
        *(store.start_scan(SCOPE, config("a.test")) for _ in range(8)), return_exceptions=True
    )
    runs = [r for r in results if not isinstance(r, BaseException)]
    conflicts = [r for r in results if isinstance(r, ScanConflict)]
    assert len(runs) == 1 and len(conflicts) == 7
    assert {c.run_id for c in conflicts} == {runs[0].id}
    assert len(await store.list_runs()) == 1


# -- the stale lifecycle -----------------------------------------------------------------------


async def test_stale_lifecycle_over_three_scans(store: Store) -> None:
    await store.import_domains(SCOPE, ["a.test", "b.test", "c.test"])

    first = await scan(store, {"b.test": "unreachable", "c.test": "timeout"})
    assert first is not None
    assert first.newly_stale == ("b.test", "c.test") and first.deactivated == ()
    assert first.reachable == ("a.test",)
    assert await states(store) == {
        "a.test": (True, False, 0), "b.test": (True, True, 1), "c.test": (True, True, 1),
    }  # fmt: skip

    # b: still down (robots.txt unreachable until the retries ran out: no HTTP status);
    # c: back up.
    second = await scan(store, {"b.test": "blocked"})
    assert second is not None
    assert second.deactivated == ("b.test",) and second.reachable == ("a.test", "c.test")
    assert await states(store) == {
        "a.test": (True, False, 0), "b.test": (False, True, 2), "c.test": (True, False, 0),
    }  # fmt: skip

    # Out of the active scan set: the next scan does not even try it ...
    third = await scan(store)
    assert third is not None and "b.test" not in third.reachable
    # ... until it is registered again; then a reachable scan resets it.
    await store.import_domains(SCOPE, ["b.test"])
    fourth = await scan(store)
    assert fourth is not None and "b.test" in fourth.reachable
    assert await states(store) == dict.fromkeys(["a.test", "b.test", "c.test"], (True, False, 0))
    assert {d.last_run_id for d in await store.list_domains()} == {fourth.run_id}


async def test_applying_a_scan_twice_changes_nothing_more(store: Store) -> None:
    await store.import_domains(SCOPE, ["a.test", "b.test"])
    summary = await scan(store, {"b.test": "unreachable"})
    assert summary is not None
    before = await store.list_domains()
    assert await store.apply_scan_results(summary.run_id) is None
    assert await store.list_domains() == before
    [a, b] = before
    assert a.last_run_id == b.last_run_id == summary.run_id
    assert a.last_crawled_at is not None and b.last_crawled_at is not None


async def test_a_scan_applies_only_once_completed_and_only_with_a_scope(store: Store) -> None:
    await store.import_domains(SCOPE, ["a.test"])
    run = await store.start_scan(SCOPE, config("a.test"))
    assert await store.apply_scan_results(run.id) is None  # queued: nothing to apply yet
    await store.transition_run(run.id, RunStatus.RUNNING)
    await store.add_tasks(run.id, [NewTask(url="http://a.test/", host="a.test", depth=0)])
    await store.mark_seeded(run.id)
    [lease] = await store.acquire(run.id, worker_id="w", limit=1, lease_seconds=30)
    failed = TaskReport(
        lease=lease, ok=False, give_up=True, outcome=FetchOutcome.UNREACHABLE, error="refused"
    )
    await store.report(run.id, [failed])
    assert await store.complete_if_drained(run.id)
    summary = await store.apply_scan_results(run.id)
    assert summary is not None and summary.newly_stale == ("a.test",)

    plain = await store.create_run(config("a.test"))  # not a scan
    assert await store.apply_scan_results(plain.id) is None


async def test_an_answer_of_any_kind_is_reachable(store: Store) -> None:
    hosts = ["error.test", "robots.test", "fine.test"]
    await store.import_domains(SCOPE, hosts)
    run = await store.start_scan(SCOPE, config(*hosts))
    await store.transition_run(run.id, RunStatus.RUNNING)
    await store.add_tasks(run.id, [NewTask(url=f"http://{h}/", host=h, depth=0) for h in hosts])
    await store.mark_seeded(run.id)
    leases = {
        lease.host: lease
        for lease in await store.acquire(run.id, worker_id="w", limit=10, lease_seconds=30)
    }
    # robots.txt answered and disallows the whole site: the run marks the host blocked.
    await store.set_host_status(run.id, "robots.test", HostStatus.BLOCKED)
    reports = [
        TaskReport(lease=leases["error.test"], ok=False, http_status=503, give_up=True,
                   outcome=FetchOutcome.HTTP_ERROR, error="HTTP 503"),
        TaskReport(lease=leases["robots.test"], ok=False, give_up=True,
                   outcome=FetchOutcome.BLOCKED, error="blocked: robots.txt disallows /"),
        TaskReport(lease=leases["fine.test"], ok=True, http_status=200,
                   outcome=FetchOutcome.SUCCESS),
    ]  # fmt: skip
    await store.report(run.id, reports)
    assert await store.complete_if_drained(run.id)
    summary = await store.apply_scan_results(run.id)
    assert summary is not None
    assert sorted(summary.reachable) == sorted(hosts) and summary.newly_stale == ()


# -- schedules -----------------------------------------------------------------------------------


async def test_schedules_are_set_replaced_listed_and_advanced(store: Store) -> None:
    assert await store.list_schedules() == []
    await store.set_schedule(SCOPE, cadence="0 3 1 * *", next_run_at=1000.0)
    await store.set_schedule("de", cadence="0 0 * * 0", next_run_at=2000.0)
    await store.advance_schedule(SCOPE, next_run_at=1500.0, last_run_id=7)
    await store.advance_schedule(SCOPE, next_run_at=1600.0, last_run_id=None)  # busy: kept
    await store.set_schedule(SCOPE, cadence="0 4 * * *", next_run_at=1700.0)  # replaced
    [de, fr] = await store.list_schedules()
    assert (de.scope, de.cadence, de.next_run_at, de.last_run_id) == ("de", "0 0 * * 0", 2000, None)
    assert (fr.scope, fr.cadence, fr.next_run_at, fr.last_run_id) == ("fr", "0 4 * * *", 1700, 7)


# -- starting due scans (sitesync.runs.scans over the contract) ------------------------------


def at(text: str) -> float:
    return datetime.fromisoformat(text).replace(tzinfo=UTC).timestamp()


async def test_due_schedules_start_one_scan_each_and_move_on(store: Store) -> None:
    settings = Settings(scan_scheme="http")
    await store.import_domains(SCOPE, ["a.test:8080", "b.test"])
    await store.import_domains("de", ["d.test"])
    await store.set_schedule(SCOPE, cadence="0 3 1 * *", next_run_at=at("2026-01-01T03:00"))
    await store.set_schedule("de", cadence="0 3 1 * *", next_run_at=at("2026-02-01T03:00"))

    now = at("2026-01-05T12:00")
    [run] = await start_due_scans(store, settings, now=now)
    assert run.scope == SCOPE and run.status is RunStatus.QUEUED
    assert run.config.seeds == ("http://a.test:8080/", "http://b.test/")
    schedules = {s.scope: s for s in await store.list_schedules()}
    assert schedules[SCOPE].next_run_at == at("2026-02-01T03:00")
    assert schedules[SCOPE].last_run_id == run.id
    assert schedules["de"].last_run_id is None  # not due yet

    # A month later the first scan still runs: skipped, and the schedule moves on anyway.
    later = at("2026-02-01T03:00")
    [other] = await start_due_scans(store, settings, now=later)
    assert other.scope == "de"
    schedules = {s.scope: s for s in await store.list_schedules()}
    assert schedules[SCOPE].next_run_at == at("2026-03-01T03:00")
    assert schedules[SCOPE].last_run_id == run.id
    assert len(await store.list_runs()) == 2


async def test_a_due_scope_without_active_domains_is_skipped(store: Store) -> None:
    await store.set_schedule("empty", cadence="@daily", next_run_at=0.0)
    assert await start_due_scans(store, Settings(), now=at("2026-01-01T12:00")) == []
    [schedule] = await store.list_schedules()
    assert schedule.next_run_at == at("2026-01-02T00:00")
    with pytest.raises(ConfigError, match="no active domains"):
        await start_scan(store, "empty", Settings())


def test_next_run_is_strictly_after_now_in_utc() -> None:
    assert next_run_after("0 3 1 * *", at("2026-01-01T03:00")) == at("2026-02-01T03:00")
    assert next_run_after("0 3 1 * *", at("2026-01-01T02:59")) == at("2026-01-01T03:00")


async def test_a_schedule_keeps_the_settings_its_scans_are_created_with(store: Store) -> None:
    await store.set_schedule("fr", cadence="0 3 1 * *", next_run_at=10.0,
                             settings={"delay": 5.0, "plugins": ["page"]})  # fmt: skip
    [schedule] = await store.list_schedules()
    assert schedule.settings == {"delay": 5.0, "plugins": ["page"]}
    await store.set_schedule("fr", cadence="0 3 1 * *", next_run_at=10.0)  # set again, none
    [schedule] = await store.list_schedules()
    assert schedule.settings is None
