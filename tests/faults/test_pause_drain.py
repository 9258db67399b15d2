"""A pause waits for the requests under way, not for the leases still waiting for their
host's turn: those go back untried at once, and what was fetched is kept (fetched once)."""

from __future__ import annotations

import asyncio
import time

from aiohttp import web

from sitesync.engine.worker import CrawlWorker, WorkerExit, WorkerOptions
from sitesync.fetch.base import FetchLimits
from sitesync.fetch.http import HttpFetcher
from sitesync.models import NewTask, RunConfig, RunStatus, TaskState
from sitesync.store.base import Store
from sitesync.testing import OPEN_LOOPBACK, LoopbackSite, SiteSpec

#: Seconds between two requests to the one host: the second page waits this long for its turn.
HOST_DELAY = 30.0


async def test_a_pause_does_not_wait_for_leases_waiting_for_their_hosts_turn(
    store: Store,
) -> None:
    spec = SiteSpec(hosts=1, pages_per_host=6, links_per_page=8, cross_host_links=False)
    with LoopbackSite(spec) as site:
        run = await store.create_run(RunConfig(seeds=tuple(site.root_urls)))
        run = await store.transition_run(run.id, RunStatus.RUNNING)
        options = WorkerOptions(
            concurrency=2, delay=HOST_DELAY, respect_robots=False, sitemaps=False,
            status_poll=0.1, claim_seconds=60, claim_safety=5,
            drain_timeout=HOST_DELAY * 2,  # never what ends the wait below
        )  # fmt: skip
        async with HttpFetcher(network=OPEN_LOOPBACK, limits=FetchLimits(total_timeout=5)) as f:
            worker = CrawlWorker(store, run, f, options=options)
            crawling = asyncio.ensure_future(worker.run())
            # the root is fetched; its links are leased and wait for the host's next turn
            while not _root_done_and_links_leased(await store.count_tasks(run.id)):
                assert not crawling.done()
                await asyncio.sleep(0.05)
            await store.transition_run(run.id, RunStatus.PAUSED)
            paused = time.monotonic()
            assert await asyncio.wait_for(crawling, HOST_DELAY * 3) is WorkerExit.RUN_NOT_RUNNING
            waited = time.monotonic() - paused
    # Before, the drain waited for the next turn (HOST_DELAY) only to start nothing then.
    assert waited < HOST_DELAY / 2, f"the pause waited {waited:.1f}s for slots that fetch nothing"
    counts = await store.count_tasks(run.id)
    assert counts.get(TaskState.ASSIGNED, 0) == 0 and counts[TaskState.PENDING] > 0
    assert counts[TaskState.COMPLETED] == 1  # the root, kept
    assert site.fetch_counts() == {site.root_urls[0]: 1}  # nothing else was asked
    tasks = {t.url: t for t in await store.list_tasks(run.id)}
    assert all(t.attempt_count == 0 for t in tasks.values() if t.state is TaskState.PENDING)


def _root_done_and_links_leased(counts: dict[TaskState, int]) -> bool:
    return counts.get(TaskState.COMPLETED, 0) == 1 and counts.get(TaskState.ASSIGNED, 0) > 0


async def test_no_request_starts_once_the_worker_knows_of_the_pause(store: Store) -> None:
    """A request under way when a pause arrives finishes (the drain waits for it); a slot
    whose turn at the host comes meanwhile starts nothing. The server holds its answer until
    after that turn, so whatever reaches it then was started after the pause."""
    gate, arrived = asyncio.Event(), []

    async def page(request: web.Request) -> web.Response:
        arrived.append(request.path)
        await gate.wait()
        links = "".join(f'<a href="/p/{n}">{n}</a>' for n in range(8))
        return web.Response(text=f"<html><body>{links}</body></html>", content_type="text/html")

    app = web.Application()
    app.router.add_get("/{tail:.*}", page)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", 0).start()
    root = f"http://127.0.0.1:{runner.addresses[0][1]}/"
    try:
        run = await store.create_run(RunConfig(seeds=(root,)))
        tasks = [NewTask(url=f"{root}p/{n}", host=run_host(root), depth=1) for n in range(8)]
        await store.add_tasks(run.id, tasks)
        run = await store.transition_run(run.id, RunStatus.RUNNING)
        options = WorkerOptions(
            concurrency=4, per_host_concurrency=2, delay=TURN, respect_robots=False,
            sitemaps=False, status_poll=0.05, claim_seconds=60, claim_safety=5,
            drain_timeout=30,
        )  # fmt: skip
        async with HttpFetcher(network=OPEN_LOOPBACK, limits=FetchLimits(total_timeout=20)) as f:
            worker = CrawlWorker(store, run, f, options=options)
            crawling = asyncio.ensure_future(worker.run())
            async with asyncio.timeout(20):
                while not arrived:  # noqa: ASYNC110 - the server's own log
                    await asyncio.sleep(0.01)  # one under way; a second slot waits its turn
                await store.transition_run(run.id, RunStatus.PAUSED)
                while worker.run_status is not RunStatus.PAUSED:  # noqa: ASYNC110
                    await asyncio.sleep(0.01)  # the worker has read the pause
            # Real time on purpose: the second slot's turn (TURN after the first request
            # started) comes while the first request is still under way.
            await asyncio.sleep(TURN * 1.5)
            gate.set()
            assert await asyncio.wait_for(crawling, 30) is WorkerExit.RUN_NOT_RUNNING
    finally:
        await runner.cleanup()
    assert len(arrived) == 1, arrived  # nothing started after the pause
    counts = await store.count_tasks(run.id)
    assert counts[TaskState.COMPLETED] == 1 and counts.get(TaskState.ASSIGNED, 0) == 0


#: A host's delay in the test above: the second slot's turn.
TURN = 0.5


def run_host(url: str) -> str:
    return url.split("/")[2]
