"""Name lookups on threads of their own, each one bounded in time.

``getaddrinfo`` blocks, and the system's resolver gives up on a name whose DNS servers do
not answer only after its ``timeout`` times ``attempts`` (10-30 s). On the event loop's default
executor (``CPU count + 4`` threads, shared with anything else run there) a handful of such
names would hold every thread, and the lookups of every healthy host would queue behind
them: one site's broken DNS would slow the whole crawl. :class:`NameLookups` keeps the
fault as small as its cause:

- its own threads (up to :data:`LOOKUP_THREADS`, started when needed), daemons, so a lookup
  that never returns cannot hold up the process's exit either;
- one lookup in flight per name: the URLs of a host whose name hangs all wait on the same
  thread, so a hung name costs one thread however many URLs it has;
- a lookup not answered within ``timeout`` (the fetch's ``connect_timeout``) fails as the
  system resolver would have failed it in the end, ``EAI_AGAIN``: a name not resolved,
  which counts towards a dead host. The thread stays with its lookup until the system gives
  up; a later lookup of the name waits on it again.
"""

from __future__ import annotations

import asyncio
import contextlib
import queue
import socket
import threading
from collections.abc import Callable
from typing import Any

#: At most this many lookups run at once: as many names as this must hang together
#: before a healthy name's lookup waits for a thread.
LOOKUP_THREADS = 64

#: ``socket.getaddrinfo``'s signature: (host, port, family, type, proto, flags).
Lookup = Callable[..., list[tuple[Any, ...]]]

_Job = tuple[Callable[[], Any], asyncio.AbstractEventLoop, "asyncio.Future[Any]"]


class NameLookups:
    """``loop.getaddrinfo`` and ``loop.getnameinfo`` (the two a resolver calls) on threads
    of their own, each ``getaddrinfo`` coalesced per name and bounded by ``timeout``.

    ``lookup`` is the blocking function asked (``socket.getaddrinfo``).
    """

    def __init__(
        self, timeout: float, *, threads: int = LOOKUP_THREADS, lookup: Lookup = socket.getaddrinfo
    ) -> None:
        self.timeout = timeout
        self._lookup = lookup
        self._pool = _DaemonPool(threads)
        self._in_flight: dict[tuple[Any, ...], asyncio.Future[list[tuple[Any, ...]]]] = {}

    async def getaddrinfo(  # the event loop's signature, which ThreadedResolver calls
        self,
        host: str,
        port: Any,
        *,
        family: int = 0,
        type: int = 0,
        proto: int = 0,
        flags: int = 0,
    ) -> list[tuple[Any, ...]]:
        key = (host, port, family, type, proto, flags)
        lookup = self._in_flight.get(key)
        if lookup is None:
            lookup = self._pool.submit(lambda: self._lookup(host, port, family, type, proto, flags))
            self._in_flight[key] = lookup
            lookup.add_done_callback(lambda done: self._finished(key, done))
        try:
            # Shielded: a waiter that gives up leaves the lookup to the others waiting on it.
            return await asyncio.wait_for(asyncio.shield(lookup), self.timeout)
        except TimeoutError:
            error = f"name lookup of {host} not answered within {self.timeout:g}s"
            raise socket.gaierror(socket.EAI_AGAIN, error) from None

    async def getnameinfo(self, sockaddr: tuple[Any, ...], flags: int = 0) -> tuple[str, str]:
        result: tuple[str, str] = await self._pool.submit(
            lambda: socket.getnameinfo(sockaddr, flags)
        )
        return result

    def _finished(self, key: tuple[Any, ...], done: asyncio.Future[Any]) -> None:
        if self._in_flight.get(key) is done:
            del self._in_flight[key]
        if not done.cancelled():
            done.exception()  # retrieved: a lookup every waiter gave up on is not an error

    @property
    def in_flight(self) -> int:
        """Lookups asked of the system and not yet answered (or failed) there."""
        return len(self._in_flight)

    @property
    def threads(self) -> int:
        """Threads started so far (busy or idle)."""
        return len(self._pool.threads)

    @property
    def live_threads(self) -> int:
        """Threads still running (after :meth:`close`: those still in a lookup)."""
        return sum(thread.is_alive() for thread in self._pool.threads)

    def close(self) -> None:
        """Let every thread go: idle ones at once, one still in a lookup once it returns.

        A long-lived ``worker --serve`` makes a fetcher, so a ``NameLookups``, for every run
        it serves: without this each would keep its idle threads for good.
        """
        self._pool.close()


class _DaemonPool:
    """Up to ``size`` daemon threads taking jobs from one queue, started as jobs need them.

    Not a ``ThreadPoolExecutor``: its threads are joined at the interpreter's exit, so a
    lookup stuck in the system's resolver would hold a finished crawl open until it gave up.
    A job is queued behind others only when all ``size`` threads are busy.
    """

    def __init__(self, size: int) -> None:
        self._size = size
        self._jobs: queue.SimpleQueue[_Job | None] = queue.SimpleQueue()  # None: leave
        self._lock = threading.Lock()
        self._idle = 0  # threads waiting for a job that no job has been promised to
        self._backlog = 0  # jobs queued while every thread was busy
        self._closed = False
        self.threads: list[threading.Thread] = []  # every one started, none ever removed

    def submit(self, call: Callable[[], Any]) -> asyncio.Future[Any]:
        loop = asyncio.get_running_loop()
        future: asyncio.Future[Any] = loop.create_future()
        new: threading.Thread | None = None
        with self._lock:
            if self._closed:
                raise RuntimeError("name lookups already closed")
            if self._idle:
                self._idle -= 1  # promised to this job
            elif len(self.threads) < self._size:
                new = threading.Thread(target=self._work, name="sitesync-lookup", daemon=True)
                self.threads.append(new)
            else:
                self._backlog += 1
        self._jobs.put((call, loop, future))
        if new is not None:
            new.start()
        return future

    def close(self) -> None:
        with self._lock:
            if self._closed:
                return
            self._closed = True
            count = len(self.threads)
        for _ in range(count):  # behind the jobs already queued: each thread takes one
            self._jobs.put(None)

    def _work(self) -> None:
        while True:
            job = self._jobs.get()
            if job is None:
                return
            call, loop, future = job
            try:
                result = call()
            except BaseException as exc:  # handed to the waiter, whatever it is
                _settle(loop, future, None, exc)
            else:
                _settle(loop, future, result, None)
            with self._lock:
                if self._backlog:
                    self._backlog -= 1  # takes a job that waited for a thread
                else:
                    self._idle += 1


def _settle(
    loop: asyncio.AbstractEventLoop,
    future: asyncio.Future[Any],
    result: Any,
    exc: BaseException | None,
) -> None:
    def settle() -> None:
        if future.done():
            return
        if exc is not None:
            future.set_exception(exc)
        else:
            future.set_result(result)

    with contextlib.suppress(RuntimeError):  # the loop closed meanwhile: no one waits
        loop.call_soon_threadsafe(settle)
