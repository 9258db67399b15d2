"""The HTTP fetcher's resolver: names looked up on bounded threads of their own
(:mod:`sitesync.fetch.lookups`), the addresses the network policy refuses left out.

Kept apart from :mod:`sitesync.fetch.netpolicy` so that the policy (which the CLI uses to
read domain lists) does not load aiohttp.
"""

from __future__ import annotations

import asyncio
import socket
from typing import cast

from aiohttp.abc import AbstractResolver, ResolveResult
from aiohttp.resolver import ThreadedResolver

from sitesync.fetch.lookups import NameLookups
from sitesync.fetch.netpolicy import ForbiddenAddress, NetworkPolicy, parse_address


class GuardedResolver(AbstractResolver):
    """aiohttp's threaded resolver over :class:`NameLookups`, minus the addresses the policy
    refuses.

    Not the guard itself (that is :meth:`NetworkPolicy.socket_factory`, on the address
    connected to): it lets a name with both public and refused addresses connect to the
    public ones, and a name with only refused ones fail with :class:`ForbiddenAddress`.
    """

    def __init__(self, policy: NetworkPolicy, lookups: NameLookups) -> None:
        self._policy = policy
        # aiohttp's own resolver, asking ``lookups`` instead of the event loop for the two
        # calls it makes (getaddrinfo, getnameinfo): its threads and time bound, not the
        # loop's shared executor (see fetch/lookups.py).
        self._inner = ThreadedResolver(loop=cast(asyncio.AbstractEventLoop, lookups))

    async def resolve(
        self, host: str, port: int = 0, family: socket.AddressFamily = socket.AF_INET
    ) -> list[ResolveResult]:
        resolved = await self._inner.resolve(host, port, family)
        kept: list[ResolveResult] = []
        first_refusal: ForbiddenAddress | None = None
        for entry in resolved:
            ip = parse_address(entry["host"])
            refused = self._policy.refusal(ip) if ip is not None else None
            if refused is None:
                kept.append(entry)
            elif first_refusal is None:
                first_refusal = refused
        if not kept and first_refusal is not None:
            raise ForbiddenAddress(f"{host} ({first_refusal.address})", first_refusal.kind)
        return kept

    async def close(self) -> None:
        await self._inner.close()
