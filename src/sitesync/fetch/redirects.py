"""The one redirect walker: every request sitesync sends follows redirects here, hop by hop.

A fetcher makes one request and stops at a redirect; :func:`walk` decides
whether to take the next hop and sends it as a request of its own, so that each hop passes
what its caller checks for any request (scope, the host's claim, robots.txt, the host's
pace, the network guard at connect time). Pages (sitesync.engine.hops), robots.txt
(sitesync.fetch.robots), and sitemaps and plugin downloads (sitesync.fetch.polite) walk
with their own ``check``; what no chain may do (leave http(s), loop, run too long) is
checked here for all of them.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import replace

from sitesync.fetch.base import FetchOutcome, FetchResult, RedirectHop
from sitesync.urls import resolve_link

#: Why a hop is not taken: the outcome the whole fetch ends with, and the error.
Refusal = tuple[FetchOutcome, str]
#: One request for a URL, through the caller's gate; a redirect ends it.
RequestOne = Callable[[str], Awaitable[FetchResult]]
#: The caller's checks of a hop to ``target`` (``location`` as the server sent it), given
#: the chain so far; None to take it.
CheckHop = Callable[[str, str, tuple[RedirectHop, ...]], Awaitable[Refusal | None]]


async def take_every_hop(target: str, location: str, chain: tuple[RedirectHop, ...]) -> None:
    """A ``check`` with nothing to add to the walker's own."""
    return None


async def walk(
    url: str, request: RequestOne, check: CheckHop, *, max_redirects: int
) -> FetchResult:
    """Fetch ``url`` with ``request``, following its redirects while ``check`` lets each
    hop through. The result answers ``url``, with the whole chain in ``redirects``; a hop
    not taken ends it with the 3xx (or ``INVALID`` for a broken chain) and that reason."""
    chain: list[RedirectHop] = []
    current = url
    while True:
        result = await request(current)
        if result.outcome is not FetchOutcome.REDIRECT_NOT_FOLLOWED or not result.redirects:
            return _chained(url, result, chain)
        hop = result.redirects[-1]
        chain.append(hop)
        target = resolve_link(hop.from_url, hop.to_url)
        location = result.headers.get("location") or hop.to_url  # as the server sent it
        refusal = _broken(target, location, chain, max_redirects)
        if refusal is None and target is not None:
            refusal = await check(target, location, tuple(chain))
        if refusal is not None:
            outcome, error = refusal
            if outcome is FetchOutcome.INVALID:  # no answer to show: the chain failed
                failed = FetchResult(url=url, outcome=outcome, error=error)
            else:
                failed = replace(result, url=url, outcome=outcome, error=error)
            return replace(failed, redirects=tuple(chain))
        assert target is not None
        current = target


def _broken(
    target: str | None, location: str, chain: list[RedirectHop], max_redirects: int
) -> Refusal | None:
    """What no chain may do, whoever walks it."""
    if target is None:
        return FetchOutcome.REDIRECT_NOT_FOLLOWED, f"redirect to {location} (not an http(s) URL)"
    if target in {hop.from_url for hop in chain}:
        return FetchOutcome.INVALID, f"redirect loop back to {target}"
    if len(chain) > max_redirects:
        return FetchOutcome.INVALID, f"more than {max_redirects} redirects"
    return None


def _chained(url: str, result: FetchResult, chain: list[RedirectHop]) -> FetchResult:
    """``result`` (of the last hop) as the answer to ``url``, with the whole chain."""
    if not chain:
        return result
    # No answer from the last hop (refused, unreachable): it is on the chain, not the final URL.
    final = result.final_url if result.status == 0 else (result.final_url or result.url)
    return replace(result, url=url, final_url=final, redirects=(*chain, *result.redirects))
