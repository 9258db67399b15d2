"""The browser's way out: a local HTTP proxy that connects only where the network policy allows.

Chromium runs a page's JavaScript, frames, workers and redirects itself, and resolves names
itself: a check made beside it (``page.route``, the DevTools ``Fetch`` domain) sees only some
of those requests and checks a name Chromium resolves again later (DNS rebinding). So Chromium
is given this proxy for everything (``--proxy-server``, loopback included), and the proxy is
the one that resolves each host, checks the addresses (:class:`NetworkPolicy`) and connects
to a checked address. Chromium never connects anywhere else and never resolves a name.

Plain ``http://`` requests arrive in absolute form (``GET http://host/path``): the proxy
forwards that one request with ``Connection: close`` and relays the answer, so a connection
never carries a second request to another host. ``https://`` (and ``wss://``) arrive as
``CONNECT host:port``: the proxy opens a tunnel and relays bytes (TLS stays end to end).

Only its own browser may use it: each proxy makes a random credential of its own
(:attr:`GuardProxy.credentials`, given to Playwright's proxy settings, which answers the
proxy's challenge), and a request without it is answered ``407 Proxy Authentication
Required`` and goes nowhere. Another process on the machine could otherwise relay through it
to public addresses, or to the networks the run opened. The credential is compared in
constant time and never logged.

Given the crawl's gate (``admit``, see :mod:`sitesync.fetch.browser_gate`), it asks before
connecting: a request waits for its host's turn and holds its slot while relayed; one the
gate refuses (robots.txt, another worker's host) gets no answer and goes nowhere.

A refused request gets no answer (plain HTTP: the connection is closed, which Chromium
reports as ``ERR_EMPTY_RESPONSE``; CONNECT: ``403``, ``ERR_TUNNEL_CONNECTION_FAILED``) and
its ``host:port`` is remembered with the reason, so the fetcher can report the document's
outcome as ``forbidden_address``. A connection that fails (refused, timed out, no such name)
is answered the same way and remembered with Chromium's name for the error
(``net::ERR_CONNECTION_REFUSED``, ...), which is what Chromium itself would have reported.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import errno
import hmac
import secrets
import socket
import time
from collections import OrderedDict
from collections.abc import Callable
from contextlib import AbstractAsyncContextManager
from urllib.parse import urlsplit

from sitesync.fetch.lookups import NameLookups
from sitesync.fetch.netpolicy import ForbiddenAddress, NetworkPolicy, parse_address

_HEAD_LIMIT = 64 * 1024  # request line and headers; Chromium's are a few KB
_HEAD_TIMEOUT = 30.0
_REMEMBERED = 10_000  # refused host:port pairs kept for the fetcher to look up
#: The crawl's gate for a request: (URL, whether its path is known) -> a block that yields
#: None while the request may go (its host's slot held), or why it may not go.
Admit = Callable[[str, bool], AbstractAsyncContextManager[str | None]]

_CHALLENGE = (
    b"HTTP/1.1 407 Proxy Authentication Required\r\n"
    b'Proxy-Authenticate: Basic realm="sitesync guard proxy"\r\n'
    b"Content-Length: 0\r\nConnection: close\r\n\r\n"
)
_HOP_HEADERS = frozenset(
    {b"connection", b"proxy-connection", b"proxy-authorization", b"keep-alive"}
)


class GuardProxy:
    """One listening proxy on loopback for one browser; it remembers what it refused and
    which connections failed (:meth:`problem`)."""

    def __init__(
        self,
        policy: NetworkPolicy,
        *,
        connect_timeout: float = 10.0,
        lookups: NameLookups | None = None,
        admit: Admit | None = None,
    ) -> None:
        self.policy = policy
        self._admit = admit
        self.connect_timeout = connect_timeout
        # Bounded by connect_timeout, on threads of their own (fetch/lookups.py); its own
        # are let go at close.
        self._own_lookups = lookups is None
        self._lookups = lookups or NameLookups(connect_timeout)
        self._server: asyncio.Server | None = None
        self._problems: OrderedDict[str, tuple[float, bool, str]] = OrderedDict()
        self._connections: set[asyncio.Task[None]] = set()
        #: (username, password) its browser presents; random, for this proxy alone.
        self.credentials = (f"sitesync-{secrets.token_hex(4)}", secrets.token_urlsafe(24))
        token = base64.b64encode(":".join(self.credentials).encode()).decode()
        self._expected = f"Basic {token}".encode()

    async def start(self) -> str:
        """Listen on a free loopback port; the proxy URL to give Chromium."""
        self._server = await asyncio.start_server(self._serve, "127.0.0.1", 0, limit=_HEAD_LIMIT)
        port = self._server.sockets[0].getsockname()[1]
        return f"http://127.0.0.1:{port}"

    async def close(self) -> None:
        if self._server is not None:
            self._server.close()
            self._server = None
        for task in list(self._connections):
            task.cancel()
        if self._own_lookups:
            self._lookups.close()

    def problem(self, host: str, port: int, *, since: float) -> tuple[bool, str] | None:
        """(refused, why) for the last request to ``host:port`` since ``since`` (monotonic)
        that was refused by the policy (True) or could not connect (False); None if none."""
        found = self._problems.get(_key(host, port))
        if found is None or found[0] < since:
            return None
        return found[1], found[2]

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        if task is not None:
            self._connections.add(task)
        try:
            await self._relay(reader, writer)
        except (OSError, asyncio.IncompleteReadError, asyncio.LimitOverrunError, ValueError):
            pass  # a client or upstream gone mid-way: nothing to report to anyone
        except TimeoutError:
            pass
        finally:
            writer.close()
            if task is not None:
                self._connections.discard(task)

    async def _relay(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), _HEAD_TIMEOUT)
        line, _, headers = head.partition(b"\r\n")
        if not self._authorized(headers):
            writer.write(_CHALLENGE)
            await writer.drain()
            return
        method, target, version = line.decode("latin-1").split(" ", 2)
        tunnel = method.upper() == "CONNECT"
        host, port, path = _destination(target, tunnel)
        if self._admit is None:
            await self._forward(reader, writer, (method, path, version, headers), host, port)
            return
        authority = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
        url = f"https://{authority}/" if tunnel else target
        async with self._admit(url, not tunnel) as refusal:
            if refusal is not None:  # a subresource the crawl may not ask for: it fails to load
                await _no_answer(writer, tunnel, b"403 Forbidden")
                return
            if reader.at_eof():  # the page ended while this waited for its host's turn
                return
            await self._forward(reader, writer, (method, path, version, headers), host, port)

    async def _forward(
        self,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
        head: tuple[str, str, str, bytes],
        host: str,
        port: int,
    ) -> None:
        """Connect to a checked address of ``host`` and relay the request (or the tunnel)."""
        method, path, version, headers = head
        tunnel = method.upper() == "CONNECT"
        try:
            upstream_reader, upstream_writer = await self._connect(host, port)
        except ForbiddenAddress as refused:
            self._remember(host, port, True, str(refused.strerror))
            await _no_answer(writer, tunnel, b"403 Forbidden")
            return
        except (OSError, TimeoutError) as exc:
            self._remember(host, port, False, f"{_net_error(exc)} at {host}:{port} (proxy)")
            await _no_answer(writer, tunnel, b"502 Bad Gateway")
            return
        try:
            if tunnel:
                writer.write(b"HTTP/1.1 200 Connection Established\r\n\r\n")
                await writer.drain()
                await _pipe_both(reader, writer, upstream_reader, upstream_writer)
            else:
                request = _origin_form(method, path, version, headers)
                upstream_writer.write(request)
                await _forward_body(reader, upstream_writer, headers)
                await _answer(reader, upstream_reader, writer)
        finally:
            upstream_writer.close()

    @property
    def authorization(self) -> str:
        """The ``Proxy-Authorization`` value its browser sends (for a client of its own)."""
        return self._expected.decode()

    def _authorized(self, headers: bytes) -> bool:
        """Whether the request carries this proxy's credential (compared in constant time)."""
        given = b""
        for line in headers.split(b"\r\n"):
            name, _, value = line.partition(b":")
            if name.strip().lower() == b"proxy-authorization":
                given = value.strip()
        return hmac.compare_digest(given, self._expected)

    async def _connect(
        self, host: str, port: int
    ) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
        """Resolve ``host`` here, and connect to the first address the policy allows."""
        literal = parse_address(host)
        if literal is not None:
            self.policy.check(literal)
            return await self._open(str(literal), port)
        infos = await self._lookups.getaddrinfo(host, port, type=socket.SOCK_STREAM)
        first_refusal: ForbiddenAddress | None = None
        last_error: OSError | None = None
        for *_, sockaddr in infos:
            ip = parse_address(str(sockaddr[0]))
            refused = self.policy.refusal(ip) if ip is not None else None
            if ip is None or refused is not None:
                first_refusal = first_refusal or refused
                continue
            try:
                return await self._open(str(ip), port)
            except OSError as exc:
                last_error = exc
        if last_error is not None:
            raise last_error
        if first_refusal is not None:
            raise ForbiddenAddress(f"{host} ({first_refusal.address})", first_refusal.kind)
        raise socket.gaierror(socket.EAI_NONAME, f"{host} has no address")

    async def _open(self, ip: str, port: int) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
        async with asyncio.timeout(self.connect_timeout):
            return await asyncio.open_connection(ip, port)

    def _remember(self, host: str, port: int, refused: bool, why: str) -> None:
        key = _key(host, port)
        self._problems[key] = (time.monotonic(), refused, why)
        self._problems.move_to_end(key)
        while len(self._problems) > _REMEMBERED:
            self._problems.popitem(last=False)


async def _no_answer(writer: asyncio.StreamWriter, tunnel: bool, status: bytes) -> None:
    """Plain HTTP: no answer at all, so nothing can pass for the page; CONNECT: a refusal."""
    if tunnel:
        writer.write(b"HTTP/1.1 " + status + b"\r\nContent-Length: 0\r\n\r\n")
        await writer.drain()


def _net_error(exc: BaseException) -> str:
    """Chromium's name for a connection failure, as it would have reported it itself."""
    if isinstance(exc, TimeoutError):
        return "net::ERR_CONNECTION_TIMED_OUT"
    if isinstance(exc, socket.gaierror):
        return "net::ERR_NAME_NOT_RESOLVED"
    if isinstance(exc, OSError) and exc.errno == errno.ECONNREFUSED:
        return "net::ERR_CONNECTION_REFUSED"
    if isinstance(exc, OSError) and exc.errno == errno.ECONNRESET:
        return "net::ERR_CONNECTION_RESET"
    return "net::ERR_CONNECTION_FAILED"


def _key(host: str, port: int) -> str:
    return f"{host.strip('[]').lower()}:{port}"


def _destination(target: str, tunnel: bool) -> tuple[str, int, str]:
    """(host, port, path) of a proxy request target."""
    if tunnel:  # "host:443" or "[::1]:443"
        host, _, port = target.rpartition(":")
        return host.strip("[]"), int(port), ""
    parts = urlsplit(target)
    if parts.scheme != "http" or not parts.hostname:
        raise ValueError(f"not an absolute http URL: {target!r}")
    path = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
    return parts.hostname, parts.port or 80, path


def _origin_form(method: str, path: str, version: str, headers: bytes) -> bytes:
    """The request as the origin server expects it: its path, and one request per connection."""
    kept = [
        line
        for line in headers.split(b"\r\n")
        if line and line.split(b":", 1)[0].strip().lower() not in _HOP_HEADERS
    ]
    lines = [f"{method} {path} {version}".encode("latin-1"), *kept, b"Connection: close"]
    return b"\r\n".join(lines) + b"\r\n\r\n"


async def _forward_body(
    reader: asyncio.StreamReader, upstream: asyncio.StreamWriter, headers: bytes
) -> None:
    """Send the request body on: Content-Length bytes, or all of a chunked one."""
    fields = {
        name.strip().lower(): value.strip()
        for name, _, value in (line.partition(b":") for line in headers.split(b"\r\n"))
    }
    if b"chunked" in fields.get(b"transfer-encoding", b"").lower():
        await _copy(reader, upstream)  # rare for a page; the connection then ends with it
        return
    length = int(fields.get(b"content-length", b"0") or 0)
    if length:
        upstream.write(await reader.readexactly(length))
    await upstream.drain()


async def _copy(source: asyncio.StreamReader, sink: asyncio.StreamWriter) -> None:
    while chunk := await source.read(64 * 1024):
        sink.write(chunk)
        await sink.drain()
    with contextlib.suppress(OSError):
        if sink.can_write_eof():
            sink.write_eof()


async def _answer(
    reader: asyncio.StreamReader,
    upstream_reader: asyncio.StreamReader,
    writer: asyncio.StreamWriter,
) -> None:
    """Relay the answer until the server closes (it was asked to). Should the client send
    anything more (its next request, on a server that ignored ``Connection: close``), the
    connection ends instead: Chromium then asks again on a new one, never through this one."""
    back = asyncio.ensure_future(_copy(upstream_reader, writer))
    more = asyncio.ensure_future(reader.read(1))
    try:
        await asyncio.wait({back, more}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for task in (back, more):
            task.cancel()
        await asyncio.gather(back, more, return_exceptions=True)


async def _pipe_both(
    reader: asyncio.StreamReader,
    writer: asyncio.StreamWriter,
    upstream_reader: asyncio.StreamReader,
    upstream_writer: asyncio.StreamWriter,
) -> None:
    """Relay a tunnel both ways until either side closes."""
    out = asyncio.ensure_future(_copy(reader, upstream_writer))
    back = asyncio.ensure_future(_copy(upstream_reader, writer))
    try:
        await asyncio.wait({out, back}, return_when=asyncio.FIRST_COMPLETED)
        if out.done() and not back.done():
            await back  # the client only stopped sending: its answer may still be coming
    finally:
        for task in (out, back):
            task.cancel()
        await asyncio.gather(out, back, return_exceptions=True)


__all__ = ["GuardProxy"]
