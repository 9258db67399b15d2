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
