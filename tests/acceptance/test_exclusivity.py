"""Exclusivity and fencing across real processes sharing one SQLite file."""

from __future__ import annotations

import contextlib
import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from sitesync.models import RunStatus, TaskState
from sitesync.testing import LoopbackSite, SiteSpec
from tests.acceptance._cli import communicate, crawl_args, read_run, sitesync
from tests.acceptance.test_crash_and_stop import wait_for_progress

pytestmark = pytest.mark.slow

ACQUIRER = """
import asyncio, json, os, sys, time
from sitesync.models import TaskReport
from sitesync.store.sqlite.store import SqliteStore

async def main(db, worker, others):
    store = await SqliteStore.open(db)
    # Both start together: each says it is ready, then waits for every other one (a fixed
    # start time was missed by a process that took longer than it to import under load).
    open(db + "." + worker + ".ready", "w").close()
    while not all(os.path.exists(db + "." + other + ".ready") for other in others.split(",")):
        await asyncio.sleep(0.005)
    got = []
    while True:
        leases = await store.acquire(1, worker_id=worker, limit=7, lease_seconds=60)
        if not leases:
            break
        got += [lease.task_id for lease in leases]
        await store.report(1, [TaskReport(lease=l, ok=True, http_status=200) for l in leases])
    await store.close()
    print(json.dumps(got))

asyncio.run(main(sys.argv[1], sys.argv[2], sys.argv[3]))
"""


def test_two_processes_acquiring_at_once_never_get_the_same_task(tmp_path: Path) -> None:
    import asyncio

    from sitesync.models import NewTask, RunConfig
    from sitesync.store.sqlite.store import SqliteStore

    db = tmp_path / "shared.db"

    async def setup() -> None:
        store = await SqliteStore.open(db)
        run = await store.create_run(RunConfig(seeds=("http://a.test/",)))
        await store.transition_run(run.id, RunStatus.RUNNING)
        tasks = [NewTask(url=f"http://a.test/{n}", host="a.test", depth=1) for n in range(1500)]
        await store.add_tasks(run.id, tasks)
        await store.close()

    asyncio.run(setup())
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", ACQUIRER, str(db), f"w{n}", "w0,w1"],
            stdout=subprocess.PIPE,
            text=True,
        )
        for n in range(2)
    ]
    results = [json.loads(communicate(proc, timeout=60)[0]) for proc in procs]
    assert all(proc.returncode == 0 for proc in procs)
    first, second = (set(r) for r in results)
    assert first and second  # both really competed
    assert not first & second
    assert len(first) + len(second) == 1500
    run, counts, _ = read_run(db)
    assert run.counters.completed == counts[TaskState.COMPLETED] == 1500


@pytest.mark.timeout(300)  # two full crawls and a stopped process, on a busy machine
def test_a_zombie_worker_cannot_complete_tasks_taken_over_from_it(tmp_path: Path) -> None:
    db = tmp_path / "zombie.db"
    site = LoopbackSite(SiteSpec(hosts=2, pages_per_host=30, delay=0.3)).start()
    procs: list[subprocess.Popen[str]] = []
    try:
        common = crawl_args(db, "--concurrency", "4", "--lease-seconds", "1")
        zombie = sitesync("crawl", *site.root_urls, *common)
        procs.append(zombie)
        wait_for_progress(db, 4, timeout=60)
        _stop_mid_request(zombie, site)
        _, _, held = read_run(db)
        taken = {t.url for t in held if t.state is TaskState.ASSIGNED}
        assert taken  # it was stopped holding leases
        # Past its lease in real time: the zombie is a real stopped process, and the rescuer a
        # real one whose store clock is the machine's.
        time.sleep(1.5)

        rescuer = sitesync("crawl", "--resume", "1", *common)
        procs.append(rescuer)
        _, rescuer_err = communicate(rescuer, timeout=120)
        assert rescuer.returncode == 0, rescuer_err
        before, _, _ = read_run(db)
        assert before.status is RunStatus.COMPLETED

        zombie.send_signal(signal.SIGCONT)
        # Generous for a loaded machine; a zombie that hangs at exit still fails here.
        _, zombie_err = communicate(zombie, timeout=60)
        assert zombie.returncode == 0, zombie_err
        assert "rejected: its lease expired and was taken over" in zombie_err

        after, counts, tasks = read_run(db)
        assert after.counters == before.counters  # the late reports changed nothing
        pages = len(site.page_urls())
        assert after.counters.completed == counts[TaskState.COMPLETED] == pages
        assert after.counters.pages_fetched == pages
        owners = {t.url: t.lease_owner for t in tasks}
        assert all(owner is None for owner in owners.values())
    finally:
        _reap(procs)
        site.stop()


def _stop_mid_request(proc: subprocess.Popen[str], site: LoopbackSite) -> None:
    """SIGSTOP ``proc`` while the site is serving one of its requests, so that it has a
    result to report late however busy the machine (stopped between two requests, a
    loaded worker may hold leases with nothing fetched, and have nothing to report)."""
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if site.in_flight:
            proc.send_signal(signal.SIGSTOP)
            if site.in_flight:  # still unanswered: the answer waits for the stopped process
                return
            proc.send_signal(signal.SIGCONT)
        time.sleep(0.005)
    raise AssertionError("the crawl sent no request to stop it in within 60s")


def _reap(procs: list[subprocess.Popen[str]]) -> None:
    """Kill what is still running (a stopped one too: SIGKILL ends it) and close its
    pipes, so a failure here leaves no process or open file to a later test."""
    for proc in procs:
        if proc.poll() is None:
            proc.kill()
        with contextlib.suppress(subprocess.TimeoutExpired):
            communicate(proc, timeout=30)
        for pipe in (proc.stdin, proc.stdout, proc.stderr):
            if pipe is not None:
                pipe.close()
