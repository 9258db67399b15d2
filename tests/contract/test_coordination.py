"""Claims, workers, host politeness state and per-host counters (SPEC R1-R3), on every backend."""

from __future__ import annotations

from sitesync.models import HostStatus, RunConfig, RunStatus, TaskReport, TaskState
from sitesync.store.base import Store
from tests._clock import FakeClock
from tests.contract.test_frontier_store import task

HOSTS = ["a.test", "b.test", "c.test", "d.test"]


async def run_with_hosts(store: Store, per_host: int = 2) -> int:
    run = await store.create_run(RunConfig(seeds=("http://a.test/",)))
    await store.transition_run(run.id, RunStatus.RUNNING)
    await store.mark_seeded(run.id)
    await store.add_tasks(run.id, [task(n, host=h) for h in HOSTS for n in range(per_host)])
    return run.id


async def join(store: Store, run_id: int, worker: str) -> None:
    await store.register_worker(run_id, worker_id=worker, host="machine", pid=1)


async def claim(
    store: Store, run_id: int, worker: str, seconds: float = 30, ttl: float = 30
) -> set[str]:
    grant = await store.claim_hosts(run_id, worker_id=worker, claim_seconds=seconds, worker_ttl=ttl)
    return set(grant.hosts)


async def test_live_workers_split_the_hosts_without_overlap(store: Store) -> None:
    run_id = await run_with_hosts(store)
    await join(store, run_id, "w1")
    await join(store, run_id, "w2")
    first = await claim(store, run_id, "w1")
    second = await claim(store, run_id, "w2")
    assert len(first) == len(second) == 2
    assert not first & second and first | second == set(HOSTS)
    assert {w.worker_id for w in await store.list_workers(run_id)} == {"w1", "w2"}


async def test_acquire_takes_only_claimed_hosts(store: Store) -> None:
    run_id = await run_with_hosts(store)
    await join(store, run_id, "w1")
    await join(store, run_id, "w2")
    mine = await claim(store, run_id, "w1")
    leases = await store.acquire(
        run_id, worker_id="w1", limit=100, lease_seconds=30, claimed_only=True
    )
    assert {lease.host for lease in leases} == mine and len(leases) == 2 * len(mine)


async def test_an_expired_claim_is_taken_over_and_a_renewed_one_is_not(
    store: Store, clock: FakeClock
) -> None:
    run_id = await run_with_hosts(store)
    await join(store, run_id, "dead")
    await join(store, run_id, "alive")
    dead = await claim(store, run_id, "dead", seconds=10)
    alive = await claim(store, run_id, "alive")
    clock.advance(9.9)
    # not yet expired: "alive" renews its own claims and takes none of the dead worker's
    assert await claim(store, run_id, "alive", ttl=100) == alive
    clock.advance(0.2)
    # the dead worker's claims have expired and its heartbeat is older than the ttl: "alive"
    # is the only live one, so it renews its own claims and takes over the expired ones
    taken = await claim(store, run_id, "alive", ttl=10)
    assert alive <= taken and dead & taken
    claims = {
        c.host: c.worker_id for c in await store.list_claims(run_id) if c.expires_at > clock.now
    }
    assert set(claims.values()) == {"alive"}
    # the dead worker cannot renew a claim it lost
    assert await claim(store, run_id, "dead") <= set(HOSTS) - taken


async def test_a_worker_over_its_share_lets_go_when_another_joins(store: Store) -> None:
    run_id = await run_with_hosts(store)
    await join(store, run_id, "first")
    assert await claim(store, run_id, "first") == set(HOSTS)  # alone: everything
    await join(store, run_id, "second")
    assert await claim(store, run_id, "second") == set()  # nothing free yet
    kept = await claim(store, run_id, "first")  # 4 > share 2: drops 2
    assert len(kept) == 2
    assert await claim(store, run_id, "second") == set(HOSTS) - kept


async def test_workers_known_to_be_joining_are_left_their_share(store: Store) -> None:
    """A crawl's processes start together, the first registered before the others: told
    that two are coming (min_workers), it takes half the hosts, not all of them, and the
    second finds its half free as soon as it joins (issue 33)."""
    run_id = await run_with_hosts(store)
    await join(store, run_id, "first")
    grant = await store.claim_hosts(
        run_id, worker_id="first", claim_seconds=30, worker_ttl=30, min_workers=2
    )
    assert len(grant.hosts) == grant.share == 2
    await join(store, run_id, "second")
    assert await claim(store, run_id, "second") == set(HOSTS) - set(grant.hosts)
    # Once enough live workers registered, min_workers changes nothing.
    again = await store.claim_hosts(
        run_id, worker_id="first", claim_seconds=30, worker_ttl=30, min_workers=2
    )
    assert again.hosts == grant.hosts and again.share == 2


async def test_a_worker_joining_last_gets_hosts_from_those_over_the_share(store: Store) -> None:
    """Six hosts, then three workers joining one at a time: the share ends at two each.
    The first two settle at three hosts each (the share of two workers); when the third
    joins nobody may keep one over the new share, or the third never gets a host."""
    run = await store.create_run(RunConfig(seeds=("http://a.test/",)))
    await store.transition_run(run.id, RunStatus.RUNNING)
    await store.mark_seeded(run.id)
    hosts = [f"h{n}.test" for n in range(6)]
    await store.add_tasks(run.id, [task(n, host=h) for h in hosts for n in range(2)])
    await join(store, run.id, "first")
    assert await claim(store, run.id, "first") == set(hosts)
    await join(store, run.id, "second")
    await claim(store, run.id, "first")  # share 3: lets go of 3
    assert len(await claim(store, run.id, "second")) == 3
    await join(store, run.id, "third")
    for worker in ("third", "first", "second", "third"):
        held = await claim(store, run.id, worker)
    assert len(held) == 2
    owners = [c.worker_id for c in await store.list_claims(run.id)]
    assert sorted(owners.count(w) for w in ("first", "second", "third")) == [2, 2, 2]


async def test_claims_on_finished_hosts_are_dropped_and_all_can_be_released(store: Store) -> None:
    run_id = await run_with_hosts(store, per_host=1)
    await join(store, run_id, "w")
    assert await claim(store, run_id, "w") == set(HOSTS)
    leases = await store.acquire(
        run_id, worker_id="w", limit=1, lease_seconds=30, claimed_only=True
    )
    await store.report(run_id, [TaskReport(lease=leases[0], ok=True, http_status=200)])
    assert await claim(store, run_id, "w") == set(HOSTS) - {leases[0].host}
    assert await store.release_claims(run_id, worker_id="w") == 3
    assert await store.list_claims(run_id) == []
    await store.stop_worker("w")
    [info] = await store.list_workers(run_id)
    assert info.stopped_at is not None


async def test_host_state_keeps_the_latest_pause_and_robots(store: Store) -> None:
    assert await store.get_host_state("a.test") is None
    await store.save_host_pause("a.test", until=200.0)
    await store.save_host_pause("a.test", until=100.0)  # never moves earlier
    await store.save_host_robots(
        "a.test", origin="http://a.test", status=200, body="User-agent: *\n", expires_at=300.0
    )
    state = await store.get_host_state("a.test")
    assert state is not None and state.paused_until == 200.0
    assert (state.robots_status, state.robots_body, state.robots_expires_at) == (
        200, "User-agent: *\n", 300.0,
    )  # fmt: skip


async def test_host_states_of_many_hosts_are_those_of_each_one(store: Store) -> None:
    await store.save_host_pause("a.test", until=200.0)
    await store.save_host_pace("b.test", delay=2.0, concurrency=1, reason="429s", since=50.0)
    await store.save_host_pause("c.test", until=10.0)  # stored, not asked for
    states = await store.get_host_states(["a.test", "b.test", "never.test"])
    assert set(states) == {"a.test", "b.test"}
    for host, state in states.items():
        assert state == await store.get_host_state(host)
    assert states["b.test"].pace_reason == "429s"
    assert await store.get_host_states([]) == {}


async def test_host_counters_count_each_finished_task_once(store: Store) -> None:
    run_id = await run_with_hosts(store, per_host=3)
    leases = await store.acquire(run_id, worker_id="w", limit=100, lease_seconds=30)
    a_hosts = [lease for lease in leases if lease.host == "a.test"]
    reports = [TaskReport(lease=lease, ok=True, http_status=200) for lease in a_hosts[:2]]
    reports.append(TaskReport(lease=a_hosts[2], ok=False, error="x", give_up=True))
    await store.report(run_id, reports)
    assert await store.flush_host_stats(run_id) == 3
    assert await store.flush_host_stats(run_id) == 0  # nothing counted twice
    [a] = await store.list_run_hosts(run_id)
    assert (a.host, a.pages_crawled, a.errors, a.status) == ("a.test", 2, 1, HostStatus.ACTIVE)
    # the rest finishes; the final flush counts it and marks finished hosts exhausted
    rest = [lease for lease in leases if lease.host != "a.test"]
    await store.report(
        run_id, [TaskReport(lease=lease, ok=True, http_status=200) for lease in rest]
    )
    await store.set_host_status(run_id, "b.test", HostStatus.BLOCKED)
    await store.flush_host_stats(run_id, final=True)
    hosts = {h.host: h for h in await store.list_run_hosts(run_id)}
    assert (
        sum(h.pages_crawled for h in hosts.values())
        == (await store.get_run(run_id)).counters.completed
    )
    assert hosts["a.test"].status is HostStatus.EXHAUSTED
    assert hosts["b.test"].status is HostStatus.BLOCKED  # terminal, kept
    await store.set_host_status(run_id, "a.test", HostStatus.ACTIVE)  # a later generic update
    assert {h.host: h.status for h in await store.list_run_hosts(run_id)}["a.test"] is (
        HostStatus.EXHAUSTED
    )
    counts = await store.count_tasks(run_id)
    assert counts[TaskState.COMPLETED] == 11 and counts[TaskState.FAILED] == 1
    domain = await store.get_domain("a.test")
    assert domain is not None and domain.host == "a.test"


async def test_a_host_with_a_request_of_the_workers_own_under_way_is_not_let_go(
    store: Store,
) -> None:
    # w1 alone holds all four hosts; w2 joins, so w1 is two over its share. A robots.txt or
    # redirect-hop request of w1's is under way on every host (no task the store could see).
    run_id = await run_with_hosts(store)
    await join(store, run_id, "w1")
    assert await claim(store, run_id, "w1") == set(HOSTS)
    await join(store, run_id, "w2")
    grant = await store.claim_hosts(
        run_id, worker_id="w1", claim_seconds=30, worker_ttl=30, busy_hosts=HOSTS
    )
    assert set(grant.hosts) == set(HOSTS)  # nothing let go while its requests are under way
    assert await claim(store, run_id, "w2") == set()  # so nothing for w2 yet
    # Finished hosts too: a.test's work is all done, but a request is still under way there.
    leases = await store.acquire(run_id, worker_id="w1", limit=100, lease_seconds=30)
    done = [lease for lease in leases if lease.host == "a.test"]
    await store.report(
        run_id, [TaskReport(lease=lease, ok=True, http_status=200) for lease in done]
    )
    others = [lease for lease in leases if lease.host != "a.test"]
    await store.release(run_id, others)
    grant = await store.claim_hosts(
        run_id, worker_id="w1", claim_seconds=30, worker_ttl=30, busy_hosts=["a.test"]
    )
    assert "a.test" in grant.hosts
    # The requests ended: the finished host and the surplus go, and w2 gets its share.
    after = await claim(store, run_id, "w1")
    assert "a.test" not in after and len(after) == 2
    assert len(await claim(store, run_id, "w2")) == 1  # the one host left with work
