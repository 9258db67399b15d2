"""Which addresses a crawl may connect to: public ones, and the private ones opened.

Crawled pages and catalogue entries are untrusted: a redirect, a robots.txt, a sitemap, an
``<img src>`` or a script may point at ``127.0.0.1``, ``169.254.169.254`` (cloud metadata)
or an intranet host. By default every address that is not globally routable is refused:
loopback, private (RFC 1918, RFC 4193), link-local, shared (100.64/10), multicast,
unspecified and reserved, including the IPv6 forms that embed an IPv4 address
(``::ffff:127.0.0.1``, SIIT ``::ffff:0:0:0/96``, NAT64 ``64:ff9b::/96``, 6to4 ``2002::/16``;
the deprecated IPv4-compatible ``::/96`` is refused whatever it embeds).

The check is made on the address actually connected to (:meth:`NetworkPolicy.socket_factory`,
called by aiohttp right before each connect), so a name that resolves to a public address
when checked and to a private one when used (DNS rebinding) is refused all the same.
"""

from __future__ import annotations

import errno
import ipaddress
import socket
from dataclasses import dataclass
from typing import Any

from sitesync.networks import IPAddress, IPNetwork, parse_address, parse_networks

OPEN_HINT = "open it with allowed_networks or allow_private_networks"

_V4_RANGES: tuple[tuple[str, str], ...] = (
    ("0.0.0.0/8", "unspecified"),
    ("127.0.0.0/8", "loopback"),
    ("10.0.0.0/8", "private"),
    ("172.16.0.0/12", "private"),
    ("192.168.0.0/16", "private"),
    ("169.254.0.0/16", "link-local"),
    ("100.64.0.0/10", "shared"),
    ("224.0.0.0/4", "multicast"),
    ("192.0.0.0/24", "reserved"),  # IETF protocol assignments (Python calls some global)
)
_V6_RANGES: tuple[tuple[str, str], ...] = (
    ("::/128", "unspecified"),
    ("::1/128", "loopback"),
    ("fc00::/7", "private"),
    ("fec0::/10", "private"),  # site-local: deprecated, still routed inside sites
    ("fe80::/10", "link-local"),
    ("ff00::/8", "multicast"),
    ("::/96", "reserved"),  # IPv4-compatible (deprecated): never a real destination
    ("64:ff9b:1::/48", "reserved"),  # local-use NAT64 (RFC 8215): translates to anything
    ("3fff::/20", "reserved"),  # documentation (RFC 9637), newer than Python's tables
)
_NAMED = tuple((ipaddress.ip_network(cidr), name) for cidr, name in (*_V4_RANGES, *_V6_RANGES))
_NAT64 = ipaddress.IPv6Network("64:ff9b::/96")
_SIIT = ipaddress.IPv6Network("::ffff:0:0:0/96")  # IPv4-translated (RFC 2765)


class ForbiddenAddress(OSError):
    """A connection to an address the network policy refuses.

    An ``OSError`` (with errno EACCES) so that aiohttp and aiohappyeyeballs carry it through
    their connect paths as the reason the connection failed.
    """

    def __init__(self, address: str, kind: str) -> None:
        self.address = address
        self.kind = kind
        super().__init__(errno.EACCES, f"{address} is a {kind} address ({OPEN_HINT})")


def embedded_ipv4(ip: ipaddress.IPv6Address) -> ipaddress.IPv4Address | None:
    """The IPv4 address an IPv6 address stands for, if it embeds one."""
    if ip.ipv4_mapped is not None:
        return ip.ipv4_mapped
    if ip in _NAT64 or ip in _SIIT:
        return ipaddress.IPv4Address(int(ip) & 0xFFFFFFFF)
    if ip.sixtofour is not None:
        return ip.sixtofour
    return None


def address_kind(ip: IPAddress) -> str | None:
    """What kind of non-public address ``ip`` is ("loopback", "private", ...); None if public."""
    if isinstance(ip, ipaddress.IPv6Address):
        inner = embedded_ipv4(ip)
        if inner is not None:
            kind = address_kind(inner)
            return None if kind is None else f"{kind} (IPv4 embedded in IPv6)"
    for network, name in _NAMED:
        if ip.version == network.version and ip in network:
            return name
    if not ip.is_global or ip.is_reserved:
        return "reserved"  # documentation, benchmarking, 240/4, unassigned IPv6, ...
    return None


@dataclass(frozen=True, slots=True)
class NetworkPolicy:
    """Public addresses always; non-public ones only when opened (all, or by network)."""

    allow_private: bool = False
    allowed: tuple[IPNetwork, ...] = ()

    @classmethod
    def opening(cls, *cidrs: str) -> NetworkPolicy:
        """A policy that opens these networks (and keeps the rest closed)."""
        return cls(allowed=parse_networks(cidrs))

    def refusal(self, ip: IPAddress) -> ForbiddenAddress | None:
        """Why a connection to ``ip`` is refused, or None when it may go ahead."""
        kind = address_kind(ip)
        if kind is None or self.allow_private or self._opened(ip):
            return None
        return ForbiddenAddress(str(ip), kind)

    def check(self, ip: IPAddress) -> None:
        refused = self.refusal(ip)
        if refused is not None:
            raise refused

    def socket_factory(self, addr_info: tuple[Any, ...]) -> socket.socket:
        """aiohttp's ``TCPConnector(socket_factory=...)``: a socket, only for a permitted
        address. Called with the resolved address right before connecting, for names and
        IP literals alike."""
        family, type_, proto, _, sockaddr = addr_info
        ip = parse_address(str(sockaddr[0]))
        if ip is None:  # never happens with resolved addresses; refuse rather than guess
            raise ForbiddenAddress(str(sockaddr[0]), "unparsable")
        self.check(ip)
        return socket.socket(family=family, type=type_, proto=proto)

    def _opened(self, ip: IPAddress) -> bool:
        forms: list[IPAddress] = [ip]
        if isinstance(ip, ipaddress.IPv6Address) and (inner := embedded_ipv4(ip)) is not None:
            forms.append(inner)
        return any(
            form.version == net.version and form in net for form in forms for net in self.allowed
        )


def forbidden_cause(exc: BaseException) -> ForbiddenAddress | None:
    """The :class:`ForbiddenAddress` behind an aiohttp connection error, if that was why."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        if isinstance(current, ForbiddenAddress):
            return current
        seen.add(id(current))
        os_error = getattr(current, "os_error", None)
        if isinstance(os_error, ForbiddenAddress):
            return os_error
        current = current.__cause__ or current.__context__
    return None


__all__ = [
    "ForbiddenAddress",
    "IPAddress",
    "IPNetwork",
    "NetworkPolicy",
    "address_kind",
    "embedded_ipv4",
    "forbidden_cause",
    "parse_address",
    "parse_networks",
]
