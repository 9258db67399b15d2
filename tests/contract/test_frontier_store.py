"""The frontier rules (SPEC F1-F4), written against the store interface.

Every backend in ``tests/conftest.py:BACKENDS`` must pass all of these unchanged.
"""

from __future__ import annotations

import asyncio
import contextlib
import random
import sqlite3
from collections.abc import Iterator

import psycopg
import pytest

from sitesync.errors import IllegalTransition, RunNotFound
from sitesync.fetch.base import FetchOutcome
from sitesync.models import (
    Lease,
    NewTask,
    ReportVerdict,
    RunConfig,
    RunStatus,
    TaskReport,
    TaskState,
)
from sitesync.store.base import Store
from sitesync.store.sqlite.store import SqliteStore
from tests import _postgres
from tests._clock import FakeClock


def task(n: int, host: str = "a.test", depth: int = 1, priority: int = 0) -> NewTask:
    return NewTask(url=f"http://{host}/p/{n}", host=host, depth=depth, priority=priority)


async def running_run(store: Store, **config: object) -> int:
    run = await store.create_run(RunConfig(seeds=("http://a.test/",), **config))  # type: ignore[arg-type]
    await store.transition_run(run.id, RunStatus.RUNNING)
    await store.mark_seeded(run.id)
    return run.id


async def assert_counters_match_tasks(store: Store, run_id: int) -> None:
    counts = await store.count_tasks(run_id)
    counters = (await store.get_run(run_id)).counters
    assert counters.pending == counts[TaskState.PENDING]
    assert counters.assigned == counts[TaskState.ASSIGNED]
    assert counters.completed == counts[TaskState.COMPLETED]
    assert counters.failed == counts[TaskState.FAILED]
    assert counters.tasks_total == sum(counts.values())


async def test_dedup_discards_a_url_already_in_the_run_in_any_state(store: Store) -> None:
    run_id = await running_run(store)
    assert await store.add_tasks(run_id, [task(1), task(2), task(1)]) == 2
    [lease, _] = await store.acquire(run_id, worker_id="w", limit=2, lease_seconds=30)
    await store.report(run_id, [TaskReport(lease=lease, ok=True, http_status=200)])
    # completed, assigned and pending URLs are all discarded on rediscovery
    assert await store.add_tasks(run_id, [task(1), task(2), task(3)]) == 1
    assert (await store.get_run(run_id)).counters.tasks_total == 3
    await assert_counters_match_tasks(store, run_id)


async def test_the_same_url_in_another_run_is_a_separate_task(store: Store) -> None:
    first, second = await running_run(store), await running_run(store)
    assert await store.add_tasks(first, [task(1)]) == 1
    assert await store.add_tasks(second, [task(1)]) == 1


async def test_depth_is_fixed_at_discovery(store: Store) -> None:
    run_id = await running_run(store)
    await store.add_tasks(run_id, [task(1, depth=2)])
    await store.add_tasks(run_id, [task(1, depth=0)])
    stored = await store.get_task(run_id, "http://a.test/p/1")
    assert stored is not None and stored.depth == 2 and stored.state is TaskState.PENDING


async def test_max_pages_caps_admission_and_duplicates_do_not_count(store: Store) -> None:
    run_id = await running_run(store, max_pages=5)
    assert await store.add_tasks(run_id, [task(1), task(1), task(2)]) == 2
    assert await store.add_tasks(run_id, [task(2), task(3), task(4), task(5), task(6)]) == 3
    assert await store.add_tasks(run_id, [task(7)]) == 0
    assert (await store.get_run(run_id)).counters.tasks_total == 5


async def test_acquire_leases_by_priority_and_counts_attempts(store: Store) -> None:
    run_id = await running_run(store)
    await store.add_tasks(run_id, [task(1), task(2, priority=5), task(3)])
    leases = await store.acquire(run_id, worker_id="w1", limit=2, lease_seconds=30)
    assert {lease.url for lease in leases} == {"http://a.test/p/2", "http://a.test/p/1"}
    assert all(lease.attempt_count == 1 for lease in leases)
    stored = await store.get_task(run_id, "http://a.test/p/2")
    assert stored is not None
    assert stored.state is TaskState.ASSIGNED and stored.lease_owner == "w1"
    await assert_counters_match_tasks(store, run_id)


async def test_a_task_is_never_leased_twice_at_once(store: Store) -> None:
    run_id = await running_run(store)
    await store.add_tasks(run_id, [task(n) for n in range(200)])
    batches = await asyncio.gather(
        *(store.acquire(run_id, worker_id=f"w{n}", limit=30, lease_seconds=30) for n in range(8))
    )
    ids = [lease.task_id for batch in batches for lease in batch]
    assert len(ids) == len(set(ids)) == 200
    assert await store.acquire(run_id, worker_id="late", limit=10, lease_seconds=30) == []


async def test_exclude_hosts_skips_those_hosts(store: Store) -> None:
    run_id = await running_run(store)
    await store.add_tasks(run_id, [task(1, "a.test"), task(2, "b.test"), task(3, "a.test")])
    leases = await store.acquire(
        run_id, worker_id="w", limit=10, lease_seconds=30, exclude_hosts=["a.test"]
    )
    assert [lease.host for lease in leases] == ["b.test"]


async def test_expired_lease_is_reclaimed_by_the_next_acquire(
    store: Store, clock: FakeClock
) -> None:
    run_id = await running_run(store)
    await store.add_tasks(run_id, [task(1)])
    [old] = await store.acquire(run_id, worker_id="dead", limit=1, lease_seconds=5)
    clock.advance(4.9)
    assert await store.acquire(run_id, worker_id="w2", limit=1, lease_seconds=30) == []
    clock.advance(0.2)
    [new] = await store.acquire(run_id, worker_id="w2", limit=1, lease_seconds=30)
    assert new.task_id == old.task_id and new.token != old.token and new.attempt_count == 2
    await assert_counters_match_tasks(store, run_id)


async def test_a_report_under_a_lost_lease_changes_nothing(store: Store, clock: FakeClock) -> None:
    run_id = await running_run(store)
    await store.add_tasks(run_id, [task(1)])
    [old] = await store.acquire(run_id, worker_id="zombie", limit=1, lease_seconds=5)
    clock.advance(5.1)
    [new] = await store.acquire(run_id, worker_id="w2", limit=1, lease_seconds=30)
    before = await store.get_run(run_id)
    late = TaskReport(lease=old, ok=True, http_status=200, bytes_fetched=10, discovered=(task(9),))
    assert await store.report(run_id, [late]) == [ReportVerdict.LEASE_LOST]
    assert await store.renew_leases(run_id, worker_id="zombie", lease_seconds=30) == 0
    assert (await store.get_run(run_id)).counters == before.counters
    stored = await store.get_task(run_id, old.url)
    assert stored is not None and stored.state is TaskState.ASSIGNED
    assert stored.lease_owner == "w2"
    assert await store.get_task(run_id, "http://a.test/p/9") is None
    # the current holder's report is accepted
    assert await store.report(run_id, [TaskReport(lease=new, ok=True, http_status=200)]) == [
        ReportVerdict.ACCEPTED
    ]


async def test_completion_records_status_counters_and_discoveries_atomically(
    store: Store,
) -> None:
    run_id = await running_run(store)
    await store.add_tasks(run_id, [task(1)])
    [lease] = await store.acquire(run_id, worker_id="w", limit=1, lease_seconds=30)
    report = TaskReport(
        lease=lease,
        ok=True,
        http_status=404,
        bytes_fetched=123,
        discovered=(task(2, depth=2), task(1), task(3, depth=2)),
    )
    assert await store.report(run_id, [report]) == [ReportVerdict.ACCEPTED]
    run = await store.get_run(run_id)
    assert run.counters.completed == 1 and run.counters.pages_fetched == 1
    assert run.counters.bytes_fetched == 123 and run.counters.pending == 2
    stored = await store.get_task(run_id, lease.url)
    assert stored is not None and stored.http_status == 404
    await assert_counters_match_tasks(store, run_id)
    # a second report under the same (now finished) lease is rejected
    assert await store.report(run_id, [report]) == [ReportVerdict.LEASE_LOST]


async def test_a_report_that_fails_part_way_leaves_everything_as_it_was(
    store: Store, request: pytest.FixtureRequest
) -> None:
    """Atomic when it fails too: the database refuses the report's second discovery (a
    trigger installed here), after the task's own update and the first discovery were
    written in the same transaction; nothing of the report may remain."""
    run_id = await running_run(store)
    await store.add_tasks(run_id, [task(1)])
    [lease] = await store.acquire(run_id, worker_id="w", limit=1, lease_seconds=30)
    before = await store.get_run(run_id)
    refused = task(3, depth=2)
    report = TaskReport(
        lease=lease, ok=True, http_status=200, bytes_fetched=123,
        discovered=(task(2, depth=2), refused),
    )  # fmt: skip
    with (
        refusing_insert(store, request, refused.url),
        pytest.raises(Exception, match="refused by the test"),
    ):
        await store.report(run_id, [report])
    after = await store.get_run(run_id)
    assert after.counters == before.counters
    stored = await store.get_task(run_id, lease.url)
    assert stored is not None and stored.state is TaskState.ASSIGNED
    assert stored.http_status is None
    assert await store.get_task(run_id, task(2).url) is None
    await assert_counters_match_tasks(store, run_id)
    # the same report, once the database takes it, lands whole
    assert await store.report(run_id, [report]) == [ReportVerdict.ACCEPTED]
    assert (await store.get_run(run_id)).counters.pending == 2


@contextlib.contextmanager
def refusing_insert(store: Store, request: pytest.FixtureRequest, url: str) -> Iterator[None]:
    """A trigger in the store's own database that fails any insert of ``url`` into tasks,
    dropped again on exit (the PostgreSQL schema is this pytest worker's, reused)."""
    if isinstance(store, SqliteStore):
        with contextlib.closing(sqlite3.connect(store.path, isolation_level=None)) as conn:
            conn.execute(
                "CREATE TRIGGER refuse_url BEFORE INSERT ON tasks "
                f"WHEN NEW.url = '{url}' BEGIN SELECT RAISE(ABORT, 'refused by the test'); END"
            )
            try:
                yield
            finally:
                conn.execute("DROP TRIGGER refuse_url")
        return
    schema = request.getfixturevalue("postgres_schema")
    with psycopg.connect(request.getfixturevalue("postgres_dsn"), autocommit=True) as conn:
        conn.execute(_postgres.search_path(schema))
        conn.execute(
            "CREATE FUNCTION refuse_url() RETURNS trigger LANGUAGE plpgsql AS "
            "$$ BEGIN RAISE EXCEPTION 'refused by the test'; END $$"
        )
        conn.execute(
            "CREATE TRIGGER refuse_url BEFORE INSERT ON tasks FOR EACH ROW "
            f"WHEN (NEW.url = '{url}') EXECUTE FUNCTION refuse_url()"
        )
        try:
            yield
        finally:
            conn.execute("DROP TRIGGER refuse_url ON tasks")
            conn.execute("DROP FUNCTION refuse_url()")


async def test_failures_retry_with_backoff_then_fail_with_last_error(
    store: Store, clock: FakeClock
) -> None:
    run_id = await running_run(store, max_retries=3)
    await store.add_tasks(run_id, [task(1)])
    for attempt in (1, 2):
        [lease] = await store.acquire(run_id, worker_id="w", limit=1, lease_seconds=30)
        assert lease.attempt_count == attempt
        failure = TaskReport(lease=lease, ok=False, error="timeout: slow", retry_delay=20)
        assert await store.report(run_id, [failure]) == [ReportVerdict.ACCEPTED]
        # not eligible before its retry time, and eligible at it
        clock.advance(19.9)
        assert await store.acquire(run_id, worker_id="w", limit=1, lease_seconds=30) == []
        assert await store.next_eligible_at(run_id) == pytest.approx(clock.now + 0.1)
        clock.advance(0.1)
    [lease] = await store.acquire(run_id, worker_id="w", limit=1, lease_seconds=30)
    assert lease.attempt_count == 3
    last = TaskReport(lease=lease, ok=False, http_status=503, error="http_error: HTTP 503")
    await store.report(run_id, [last])
    stored = await store.get_task(run_id, lease.url)
    assert stored is not None and stored.state is TaskState.FAILED
    assert stored.last_error == "http_error: HTTP 503" and stored.attempt_count == 3
    run = await store.get_run(run_id)
    assert run.counters.failed == 1 and run.counters.retries == 2
    assert run.counters.pages_fetched == 1  # only the 503 was an HTTP response
    assert await store.complete_if_drained(run_id)


async def test_give_up_fails_at_once(store: Store) -> None:
    run_id = await running_run(store, max_retries=5)
    await store.add_tasks(run_id, [task(1)])
    [lease] = await store.acquire(run_id, worker_id="w", limit=1, lease_seconds=30)
    await store.report(run_id, [TaskReport(lease=lease, ok=False, error="bad", give_up=True)])
    stored = await store.get_task(run_id, lease.url)
    assert stored is not None and stored.state is TaskState.FAILED


async def test_release_returns_tasks_to_pending(store: Store) -> None:
    run_id = await running_run(store)
    await store.add_tasks(run_id, [task(n) for n in range(4)])
    leases = await store.acquire(run_id, worker_id="w", limit=4, lease_seconds=30)
    assert await store.release(run_id, leases[:1]) == 1
    assert await store.release(run_id, leases[:1]) == 0  # already released: fenced
    assert await store.release_worker(run_id, worker_id="w") == 3
    await assert_counters_match_tasks(store, run_id)
    assert (await store.get_run(run_id)).counters.pending == 4


async def test_renew_extends_only_the_holders_leases(store: Store, clock: FakeClock) -> None:
    run_id = await running_run(store)
    await store.add_tasks(run_id, [task(1)])
    await store.acquire(run_id, worker_id="w", limit=1, lease_seconds=2)
    assert await store.renew_leases(run_id, worker_id="w", lease_seconds=30) == 1
    assert await store.renew_leases(run_id, worker_id="other", lease_seconds=30) == 0
    clock.advance(29.9)  # long past the first lease, just short of the renewed one
    # renewed: not reclaimable by another worker
    assert await store.acquire(run_id, worker_id="other", limit=1, lease_seconds=30) == []


async def test_run_transitions_are_enforced(store: Store) -> None:
    run = await store.create_run(RunConfig(seeds=("http://a.test/",)))
    assert run.status is RunStatus.QUEUED
    running = await store.transition_run(run.id, RunStatus.RUNNING)
    assert running.started_at is not None
    stopped = await store.transition_run(run.id, RunStatus.STOPPED, reason="user")
    assert stopped.ended_at is not None and stopped.status_reason == "user"
    resumed = await store.transition_run(run.id, RunStatus.RUNNING)
    assert resumed.ended_at is None
    await store.transition_run(run.id, RunStatus.CANCELLED)
    with pytest.raises(IllegalTransition, match="cancelled"):
        await store.transition_run(run.id, RunStatus.RUNNING)
    assert (await store.get_run(run.id)).status is RunStatus.CANCELLED
    with pytest.raises(RunNotFound):
        await store.get_run(run.id + 1000)


async def test_complete_if_drained_only_when_nothing_is_left(store: Store) -> None:
    run_id = await running_run(store)
    await store.add_tasks(run_id, [task(1)])
    assert not await store.complete_if_drained(run_id)
    [lease] = await store.acquire(run_id, worker_id="w", limit=1, lease_seconds=30)
    assert not await store.complete_if_drained(run_id)
    await store.report(run_id, [TaskReport(lease=lease, ok=True, http_status=200)])
    assert await store.complete_if_drained(run_id)
    run = await store.get_run(run_id)
    assert run.status is RunStatus.COMPLETED and run.ended_at is not None


async def test_counters_stay_exact_under_a_random_mix_of_operations(
    store: Store, clock: FakeClock
) -> None:
    rng = random.Random(7)
    run_id = await running_run(store, max_retries=2)
    await store.add_tasks(run_id, [task(n, host=f"h{n % 3}.test") for n in range(60)])
    held = []
    for _ in range(150):
        op = rng.choice(["acquire", "report", "release", "add", "expire"])
        if op == "acquire":
            held += await store.acquire(
                run_id, worker_id=rng.choice("ab"), limit=rng.randint(1, 8), lease_seconds=30
            )
        elif op == "report" and held:
            batch = [held.pop(rng.randrange(len(held))) for _ in range(min(len(held), 3))]
            reports = [
                TaskReport(
                    lease=lease,
                    ok=rng.random() < 0.6,
                    http_status=rng.choice([0, 200, 500]),
                    error="x",
                    discovered=(task(rng.randint(0, 120)),),
                )
                for lease in batch
            ]
            await store.report(run_id, reports)
        elif op == "release" and held:
            await store.release(run_id, [held.pop()])
        elif op == "add":
            await store.add_tasks(run_id, [task(rng.randint(0, 150))])
        elif op == "expire":  # leases that have expired by the next operation
            await store.acquire(run_id, worker_id="c", limit=2, lease_seconds=0.0)
            clock.advance(0.001)
    await assert_counters_match_tasks(store, run_id)


async def test_release_undoes_the_attempt_and_can_hold_the_task_back(
    store: Store, clock: FakeClock
) -> None:
    run_id = await running_run(store)
    await store.add_tasks(run_id, [task(1)])
    [lease] = await store.acquire(run_id, worker_id="w", limit=1, lease_seconds=30)
    assert lease.attempt_count == 1
    assert await store.release(run_id, [lease], not_before=clock.now + 30) == 1
    stored = await store.get_task(run_id, lease.url)
    assert stored is not None and stored.attempt_count == 0
    clock.advance(29.9)
    assert await store.acquire(run_id, worker_id="w", limit=1, lease_seconds=30) == []
    clock.advance(0.1)
    [again] = await store.acquire(run_id, worker_id="w", limit=1, lease_seconds=30)
    assert again.attempt_count == 1


async def test_reports_record_outcome_final_url_redirects_and_error(store: Store) -> None:
    run_id = await running_run(store)
    await store.add_tasks(run_id, [task(1)])
    [lease] = await store.acquire(run_id, worker_id="w", limit=1, lease_seconds=30)
    hops = (("http://a.test/p/1", "http://a.test/p/one", 301),)
    report = TaskReport(
        lease=lease, ok=True, http_status=404, outcome=FetchOutcome.HTTP_ERROR,
        error="http_error: HTTP 404", final_url="http://a.test/p/one", redirects=hops,
    )  # fmt: skip
    await store.report(run_id, [report])
    stored = await store.get_task(run_id, lease.url)
    assert stored is not None
    assert (stored.outcome, stored.final_url, stored.redirects) == ("http_error", hops[0][1], hops)
    assert stored.last_error == "http_error: HTTP 404"


async def test_a_run_completes_only_once_seeded(store: Store) -> None:
    run = await store.create_run(RunConfig(seeds=("http://a.test/",)))
    await store.transition_run(run.id, RunStatus.RUNNING)
    assert not await store.complete_if_drained(run.id)  # sitemaps may still add work
    await store.mark_seeded(run.id)
    assert (await store.get_run(run.id)).seeded_at is not None
    assert await store.complete_if_drained(run.id)


async def test_extend_scope_adds_hosts_once(store: Store) -> None:
    run_id = await running_run(store)
    await store.extend_scope(run_id, ["www.a.test"])
    run = await store.extend_scope(run_id, ["www.a.test", "b.test"])
    assert run.config.extra_hosts == ("www.a.test", "b.test")
    assert (await store.get_run(run_id)).config.seeds == ("http://a.test/",)


async def test_root_redirects_name_canonical_host_and_accumulate_aliases(store: Store) -> None:
    assert await store.get_domain("a.test") is None
    await store.record_root_redirect("a.test", canonical_host="www.a.test", aliases=["a.test"])
    domain = await store.record_root_redirect(
        "a.test", canonical_host="www.a.test", aliases=["old-a.test", "www.a.test"]
    )
    assert domain.canonical_host == "www.a.test"
    assert domain.aliases == ("a.test", "old-a.test")
    assert await store.get_domain("a.test") == domain
    await store.record_root_redirect("b.test", canonical_host="b.test", aliases=[])
    assert await store.get_domains(["a.test", "b.test", "never.test"]) == {
        "a.test": domain,
        "b.test": await store.get_domain("b.test"),
    }
    assert await store.get_domains([]) == {}


async def test_per_host_caps_one_hosts_share_of_a_batch(store: Store) -> None:
    run_id = await running_run(store)
    # admission order puts all of a.test first, as a breadth-first crawl of one site does
    await store.add_tasks(run_id, [task(n, "a.test") for n in range(20)])
    await store.add_tasks(run_id, [task(n, "b.test") for n in range(3)])
    leases = await store.acquire(run_id, worker_id="w", limit=6, lease_seconds=30, per_host=2)
    assert sorted(lease.host for lease in leases) == ["a.test", "a.test", "b.test", "b.test"]
    uncapped = await store.acquire(run_id, worker_id="w", limit=6, lease_seconds=30)
    assert [lease.host for lease in uncapped] == ["a.test"] * 6
    await assert_counters_match_tasks(store, run_id)


@pytest.mark.parametrize("max_pages", [None, 4])
async def test_one_batch_admits_each_url_once_from_its_first_finder(
    store: Store, max_pages: int | None
) -> None:
    """Duplicates inside one batch: the first occurrence is the task (its finder and depth),
    the rest cost nothing against max_pages, and every host's pending count is exact."""
    run_id = await running_run(store, max_pages=max_pages)

    def found(n: int, host: str, finder: int) -> NewTask:
        return NewTask(url=f"http://{host}/p/{n}", host=host, depth=finder, found_from=finder)

    batch = [found(1, "a.test", 11), found(1, "b.test", 12), found(1, "a.test", 13),
             found(2, "b.test", 14), found(1, "b.test", 15), found(3, "a.test", 16)]  # fmt: skip
    assert await store.add_tasks(run_id, batch) == 4
    for url, finder in [("http://a.test/p/1", 11), ("http://b.test/p/1", 12),
                        ("http://b.test/p/2", 14), ("http://a.test/p/3", 16)]:  # fmt: skip
        t = await store.get_task(run_id, url)
        assert t is not None and (t.found_from, t.depth) == (finder, finder)
    backlog = await store.pending_by_host(run_id)
    assert [(b.host, b.pending) for b in backlog] == [("a.test", 2), ("b.test", 2)]
    grant = await store.claim_hosts(run_id, worker_id="w", claim_seconds=30, worker_ttl=30)
    assert sorted(c.host for c in grant.claims) == ["a.test", "b.test"]
    await assert_counters_match_tasks(store, run_id)


async def test_no_task_is_admitted_into_a_run_that_does_not_exist(store: Store) -> None:
    run_id = await running_run(store)
    with pytest.raises(RunNotFound):
        await store.add_tasks(run_id + 1000, [task(1)])
    assert sum((await store.count_tasks(run_id)).values()) == 0


async def test_reports_that_discover_each_others_pages_land_side_by_side(
    store: Store, caplog: pytest.LogCaptureFixture
) -> None:
    """Two workers report at once, each completing its pages while discovering the pages the
    other is completing in that same moment, and new pages in opposite orders: no admission
    waits on the other's transaction in a cycle (on PostgreSQL, a deadlock that the server
    breaks by failing one of them, which the store would then retry with a warning)."""
    run_id = await running_run(store)

    def reports(leases: list[Lease], others: list[Lease], new: list[NewTask]) -> list[TaskReport]:
        found = tuple(NewTask(url=o.url, host=o.host, depth=2) for o in others) + tuple(new)
        return [
            TaskReport(lease=lease, ok=True, http_status=200, discovered=found) for lease in leases
        ]

    for round_ in range(5):
        pages = range(200 * round_, 200 * (round_ + 1))
        await store.add_tasks(run_id, [task(n, host=f"h{n % 2}.test") for n in pages])
        mine = await store.acquire(run_id, worker_id="w1", limit=100, lease_seconds=60)
        theirs = await store.acquire(run_id, worker_id="w2", limit=100, lease_seconds=60)
        fresh = [task(10_000 + 50 * round_ + n, host="new.test") for n in range(50)]
        both = await asyncio.gather(
            store.report(run_id, reports(mine, theirs, fresh)),
            store.report(run_id, reports(theirs, mine, fresh[::-1])),
        )
        assert {verdict for verdicts in both for verdict in verdicts} == {ReportVerdict.ACCEPTED}
    await assert_counters_match_tasks(store, run_id)
    assert (await store.get_run(run_id)).counters.tasks_total == 5 * (200 + 50)
    assert not [r for r in caplog.records if "deadlock" in r.getMessage()]
