"""Politeness survives a hand-over: the next worker on a host honours what the last one
learned (Retry-After, robots.txt), on each backend."""

from __future__ import annotations

import asyncio
import signal
import time

import pytest
from aiohttp import web

from sitesync.models import RunStatus
from sitesync.store import open_store
from sitesync.testing import LoopbackSite, SiteSpec
from tests.acceptance._cli import communicate, read_run, sitesync

pytestmark = pytest.mark.slow

RETRY_AFTER = 4


def settings(db: str) -> dict[str, str]:
    return {
        "db": db, "concurrency": "2", "per_host_concurrency": "1", "delay": "0",
        "lease_seconds": "2", "claim_seconds": "4", "heartbeat_seconds": "0.3",
        "total_timeout": "2", "respect_robots": "true", "sitemaps": "false",
    }  # fmt: skip


def wait_for_stored_pause(db: str, host: str) -> None:
    async def paused() -> bool:
        store = await open_store(db)
        try:
            state = await store.get_host_state(host)
        finally:
            await store.close()
        return state is not None and state.paused_until > time.time()

    deadline = time.monotonic() + 20
    while not asyncio.run(paused()):
        assert time.monotonic() < deadline, "the first worker never stored the pause"
        time.sleep(0.05)


def test_retry_after_and_robots_pass_to_the_next_worker(db_url: str) -> None:
    site = LoopbackSite(SiteSpec(hosts=1, pages_per_host=6)).start()
    answered = 0

    async def limited(request: web.Request) -> web.StreamResponse:
        nonlocal answered
        answered += 1
        if answered == 1:
            return web.Response(status=429, headers={"Retry-After": str(RETRY_AFTER)})
        return web.Response(text="<p>ok</p>", content_type="text/html")

    async def robots(request: web.Request) -> web.StreamResponse:
        return web.Response(text="User-agent: *\nDisallow: /private\n")

    site.set_handler("/p/1.html", limited)
    site.set_handler("/robots.txt", robots)
    try:
        first = sitesync("crawl", *site.root_urls, "--no-progress", settings=settings(db_url))
        deadline = time.monotonic() + 20
        while not [r for r in site.requests if r.path == "/p/1.html"]:
            assert time.monotonic() < deadline, "the 429 never came"
            time.sleep(0.02)
        [refused] = [r for r in site.requests if r.path == "/p/1.html"]
        # the first worker has read the 429 (the server logs it before the client reads it)
        wait_for_stored_pause(db_url, site.hosts[0])
        first.send_signal(signal.SIGINT)  # graceful: releases its claim at once
        _, err = communicate(first, timeout=20)
        assert first.returncode == 130, err

        second = sitesync("crawl", "--resume", "1", "--no-progress", settings=settings(db_url))
        _, err = communicate(second, timeout=60)
        assert second.returncode == 0, err
        run, _, _ = read_run(db_url)
        assert run.status is RunStatus.COMPLETED

        later = [
            r for r in site.requests if r.started > refused.started and r.path != "/robots.txt"
        ]
        assert later, "the second worker fetched nothing"
        assert min(r.started for r in later) - refused.started >= RETRY_AFTER - 0.05
        # robots.txt was asked once: the second worker used the stored answer
        assert len([r for r in site.requests if r.path == "/robots.txt"]) == 1
    finally:
        site.stop()
