"""A name whose lookup hangs fails that host's fetches, in ``connect_timeout``, and no other's.

The system's resolver is asked through :class:`NameLookups`; here it is the real
``socket.getaddrinfo`` (``localhost`` from ``/etc/hosts``) except for names under
``.hang.test``, whose lookups block until the test lets them go, as a lookup does whose DNS
servers never answer (a test may not send DNS traffic off this machine, and the system's
resolver cannot be pointed at a loopback server from inside one process).
"""

from __future__ import annotations

import asyncio
import socket
import threading
import time
from collections import Counter
from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest

from sitesync.engine.deadhosts import no_connection
from sitesync.fetch.base import FetchLimits
from sitesync.fetch.guard_proxy import GuardProxy
from sitesync.fetch.http import HttpFetcher
from sitesync.fetch.lookups import NameLookups
from sitesync.models import FetchOutcome
from sitesync.testing.spec import OPEN_LOOPBACK
from tests.safety._standins import PUBLIC_IP, StandIn, serving


class HangingResolver:
    """``socket.getaddrinfo``, but names under ``.hang.test`` block until :meth:`release`."""

    def __init__(self) -> None:
        self.released = threading.Event()
        self.calls: Counter[str] = Counter()
        self._lock = threading.Lock()

    def __call__(self, host: str, port: Any, *args: Any) -> list[tuple[Any, ...]]:
        with self._lock:
            self.calls[host] += 1
        if host.endswith(".hang.test"):
            self.released.wait(30)
            raise socket.gaierror(socket.EAI_AGAIN, "Temporary failure in name resolution")
        return socket.getaddrinfo(host, port, *args)

    def release(self) -> None:
        self.released.set()


async def resolve(lookups: NameLookups, host: str) -> list[tuple[Any, ...]]:
    return await lookups.getaddrinfo(host, 80, type=socket.SOCK_STREAM)


#: The bound on a hung lookup in the tests that time one: long enough that a healthy lookup
#: made meanwhile is answered well within it on a loaded machine, which the tests check by
#: the order of events (the hung ones still waiting), not by a window of wall time.
HUNG_SECONDS = 2.0


async def lookups_started(resolver: HangingResolver, *names: str) -> None:
    """Wait until the resolver has been asked for each of ``names`` (they are now hung)."""
    async with asyncio.timeout(10):
        while not all(resolver.calls[name] for name in names):  # noqa: ASYNC110 - a thread's count
            await asyncio.sleep(0.005)


async def test_hung_names_fail_in_the_timeout_and_cost_one_thread_each() -> None:
    resolver = HangingResolver()
    lookups = NameLookups(HUNG_SECONDS, threads=4, lookup=resolver)
    hung = [f"site{n}.hang.test" for n in range(3)]
    try:
        started = time.monotonic()
        waits = [asyncio.ensure_future(resolve(lookups, name)) for name in hung * 20]
        await lookups_started(resolver, *hung)
        healthy = await asyncio.wait_for(resolve(lookups, "localhost"), HUNG_SECONDS)
        # not queued behind the sixty hung lookups: answered while they all still wait
        assert not any(wait.done() for wait in waits)
        outcomes = await asyncio.gather(*waits, return_exceptions=True)
        elapsed = time.monotonic() - started
    finally:
        resolver.release()
        lookups.close()
    assert {info[4][0] for info in healthy} & {"127.0.0.1", "::1"}
    assert all(isinstance(o, socket.gaierror) and o.errno == socket.EAI_AGAIN for o in outcomes)
    assert "name lookup of site0.hang.test not answered within 2s" in str(outcomes[0])
    assert HUNG_SECONDS * 0.95 < elapsed < HUNG_SECONDS + 5  # ended by the bound, not the release
    assert [resolver.calls[name] for name in hung] == [1, 1, 1]  # sixty waits, three lookups
    assert lookups.threads == 4  # three hung, one for localhost


async def test_a_lookup_queued_behind_a_full_pool_runs_when_a_thread_frees() -> None:
    resolver = HangingResolver()
    lookups = NameLookups(5.0, threads=1, lookup=resolver)
    stuck = asyncio.ensure_future(resolve(lookups, "one.hang.test"))
    await lookups_started(resolver, "one.hang.test")
    queued = asyncio.ensure_future(resolve(lookups, "localhost"))
    # A real wait, to show that nothing happens: localhost answers in under a millisecond
    # when a thread is free (the test below); here the only thread is taken.
    await asyncio.sleep(0.2)
    assert not queued.done() and resolver.calls["localhost"] == 0
    resolver.release()
    with pytest.raises(socket.gaierror):
        await stuck
    assert await asyncio.wait_for(queued, 2)
    assert await asyncio.wait_for(resolve(lookups, "localhost"), 2)  # the idle thread again
    assert lookups.threads == 1


async def test_a_lookup_answered_after_every_waiter_left_is_no_error() -> None:
    resolver = HangingResolver()
    lookups = NameLookups(0.2, threads=2, lookup=resolver)
    with pytest.raises(socket.gaierror):
        await resolve(lookups, "late.hang.test")
    resolver.release()
    async with asyncio.timeout(10):  # its failure arrives with nobody waiting
        while lookups.in_flight:  # noqa: ASYNC110 - answered on a thread of its own
            await asyncio.sleep(0.005)
    with pytest.raises(socket.gaierror, match="Temporary failure"):  # a new lookup, answered
        await resolve(lookups, "late.hang.test")
    assert resolver.calls["late.hang.test"] == 2
    assert lookups.threads == 1  # the second lookup went to the idle thread, not a new one


@pytest.fixture
async def local_server() -> AsyncIterator[int]:
    """A page on 127.0.0.1, where ``localhost`` resolves: its port."""
    site = StandIn(PUBLIC_IP)
    site.html("/", "<html><body>ok</body></html>")
    async with serving(site):
        yield site.port


async def test_a_fetch_whose_name_hangs_is_unreachable_and_others_go_on(local_server: int) -> None:
    resolver = HangingResolver()
    limits = FetchLimits(connect_timeout=HUNG_SECONDS, total_timeout=10)
    lookups = NameLookups(limits.connect_timeout, lookup=resolver)
    names = [f"site{n}.hang.test" for n in range(10)]
    try:
        async with HttpFetcher(network=OPEN_LOOPBACK, limits=limits, lookups=lookups) as fetcher:
            hung = [
                asyncio.ensure_future(fetcher.fetch(f"http://{name}:{local_server}/"))
                for name in names
            ]
            await lookups_started(resolver, *names)
            ok = await fetcher.fetch(f"http://localhost:{local_server}/")
            assert not any(fetch.done() for fetch in hung)  # fetched while they all hang
            failed = await asyncio.gather(*hung)
    finally:
        resolver.release()
        lookups.close()
    assert ok.outcome is FetchOutcome.SUCCESS and ok.status == 200
    for result in failed:
        assert result.outcome is FetchOutcome.UNREACHABLE
        assert "not answered within 2s" in (result.error or "")
        assert no_connection(result.error)  # counts towards a dead host
        assert result.elapsed < HUNG_SECONDS + 5


async def proxy_answer(proxy: GuardProxy, proxy_url: str, target: str) -> bytes:
    """The browser's side of a CONNECT through the guard proxy: its status line."""
    port = int(proxy_url.rsplit(":", 1)[1])
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    auth = proxy.authorization
    try:
        head = f"CONNECT {target} HTTP/1.1\r\nHost: {target}\r\nProxy-Authorization: {auth}"
        writer.write(f"{head}\r\n\r\n".encode())
        await writer.drain()
        return await asyncio.wait_for(reader.readline(), 5)
    finally:
        writer.close()


async def test_the_browser_guard_proxy_bounds_a_hung_lookup_the_same_way(
    local_server: int,
) -> None:
    resolver = HangingResolver()
    lookups = NameLookups(HUNG_SECONDS, lookup=resolver)
    proxy = GuardProxy(OPEN_LOOPBACK, connect_timeout=HUNG_SECONDS, lookups=lookups)
    proxy_url = await proxy.start()
    since = time.monotonic()
    try:
        hung = asyncio.ensure_future(proxy_answer(proxy, proxy_url, "stuck.hang.test:443"))
        await lookups_started(resolver, "stuck.hang.test")
        healthy = await proxy_answer(proxy, proxy_url, f"localhost:{local_server}")
        assert not hung.done()  # answered while the other lookup hangs
        refused = await hung
    finally:
        resolver.release()
        lookups.close()
        await proxy.close()
    assert healthy.startswith(b"HTTP/1.1 200")
    assert refused.startswith(b"HTTP/1.1 502")
    assert time.monotonic() - since < HUNG_SECONDS + 5
    problem = proxy.problem("stuck.hang.test", 443, since=since)
    assert problem == (False, "net::ERR_NAME_NOT_RESOLVED at stuck.hang.test:443 (proxy)")
    assert problem is not None and no_connection(problem[1])  # a dead host's failure


def wait_until(condition: Callable[[], bool], timeout: float = 2.0) -> bool:
    """Polled without the event loop: a leaving thread does not need it."""
    deadline = time.monotonic() + timeout
    while not condition() and time.monotonic() < deadline:
        time.sleep(0.01)
    return condition()


async def test_closed_lookups_let_their_threads_go_the_hung_one_when_it_returns() -> None:
    resolver = HangingResolver()
    lookups = NameLookups(0.2, threads=4, lookup=resolver)
    hung = asyncio.ensure_future(resolve(lookups, "stuck.hang.test"))
    await lookups_started(resolver, "stuck.hang.test")
    await resolve(lookups, "localhost")  # on a second thread, idle after
    with pytest.raises(socket.gaierror):
        await hung
    assert (lookups.threads, lookups.live_threads) == (2, 2)
    lookups.close()
    assert wait_until(lambda: lookups.live_threads == 1)  # the idle one left at once
    resolver.release()
    assert wait_until(lambda: lookups.live_threads == 0)  # the other once its lookup returned
    with pytest.raises(RuntimeError, match="closed"):
        await resolve(lookups, "localhost")


async def test_a_fetcher_lets_its_own_lookup_threads_go_when_it_closes(local_server: int) -> None:
    # A `worker --serve` makes a fetcher for every run it serves, for months on end.
    async with HttpFetcher(network=OPEN_LOOPBACK) as fetcher:
        lookups = fetcher.lookups
        assert lookups is not None
        result = await fetcher.fetch(f"http://localhost:{local_server}/")
        assert result.outcome is FetchOutcome.SUCCESS and lookups.live_threads >= 1
    assert wait_until(lambda: lookups.live_threads == 0)
