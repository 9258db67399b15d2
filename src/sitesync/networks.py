"""IP addresses and networks as settings and domain lists write them: parsed, no I/O.

Kept apart from :mod:`sitesync.fetch.netpolicy` (which enforces them on connections and
needs aiohttp) so that validating settings loads no network stack.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
IPNetwork = ipaddress.IPv4Network | ipaddress.IPv6Network


def parse_networks(entries: Iterable[str]) -> tuple[IPNetwork, ...]:
    """CIDRs (or bare addresses) as networks; a ``ValueError`` names the bad entry."""
    networks = []
    for entry in entries:
        text = entry.strip().strip("[]")
        try:
            networks.append(ipaddress.ip_network(text, strict=False))
        except ValueError:
            raise ValueError(f"{entry!r} is not an IP network in CIDR form") from None
    return tuple(networks)


def parse_address(host: str) -> IPAddress | None:
    """``host`` as an IP address (IPv6 brackets and zone ids allowed); None for a name."""
    text = host.strip().strip("[]").split("%", 1)[0]
    try:
        return ipaddress.ip_address(text)
    except ValueError:
        return None


def numeric_ipv4_host(host: str) -> ipaddress.IPv4Address | None:
    """The IPv4 address a host written as numbers means, as the WHATWG URL standard (and so
    every browser, and ``inet_aton``) reads it: ``0x7f.1``, ``0177.0.0.1``, ``2130706433``
    and ``127.1`` are all 127.0.0.1. None for a host that does not end in a number (a name);
    ``ValueError`` for one that does but is no address (``1.2.3.4.5``, ``256.1.1.1``).
    """
    parts = host.split(".")
    if len(parts) > 1 and parts[-1] == "":
        parts.pop()  # a trailing dot
    last = parts[-1]
    if not last or not ((last.isascii() and last.isdigit()) or _ipv4_number(last) is not None):
        return None
    numbers = [_ipv4_number(part) for part in parts]
    if len(parts) > 4 or None in numbers:
        raise ValueError(f"{host} ends in a number but is no IPv4 address")
    values = [number for number in numbers if number is not None]
    if any(value > 255 for value in values[:-1]) or values[-1] >= 256 ** (5 - len(values)):
        raise ValueError(f"{host} ends in a number but is no IPv4 address (a part too large)")
    address = values[-1] + sum(
        value << (8 * (3 - index)) for index, value in enumerate(values[:-1])
    )
    return ipaddress.IPv4Address(address)


def _ipv4_number(part: str) -> int | None:
    """One dot-separated part of a numeric IPv4 host: decimal, ``0x`` hex or ``0`` octal."""
    if not part or not part.isascii():
        return None
    digits, base = part, 10
    if part[:2].lower() == "0x":
        digits, base = part[2:], 16
    elif len(part) > 1 and part[0] == "0":
        digits, base = part[1:], 8
    if not digits:
        return 0  # "0x" alone is zero
    allowed = {10: "0123456789", 16: "0123456789abcdefABCDEF", 8: "01234567"}[base]
    if len(digits) > 32 or any(char not in allowed for char in digits):
        return None
    return int(digits, base)
