"""Why a crawl fetched little or nothing: its failed URLs by reason, with an example of
each and, where the user can act, what to do (printed at the end of ``sitesync crawl``)."""

from __future__ import annotations

import ipaddress
import re
from dataclasses import dataclass

from sitesync.models import FetchOutcome, Run, TaskState
from sitesync.store.base import Store

#: Failed URLs read for their examples (the counts come from the run's outcome counts).
EXAMPLES = 200
#: Reasons shown, the most frequent first.
TOP = 5

_REFUSED_ADDRESS = re.compile(r"forbidden_address: (\S+) is an? ")
#: The blocks a refused non-public address is opened by, smallest first.
_BLOCKS = [
    ipaddress.ip_network(block)
    for block in ("127.0.0.0/8", "10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16",
                  "169.254.0.0/16", "100.64.0.0/10", "::1/128", "fc00::/7", "fe80::/10")
]  # fmt: skip


@dataclass(frozen=True, slots=True)
class FailureReason:
    outcome: str
    urls: int
    example: str  # one URL's last error
    advice: str  # what the user can do; "" where there is nothing to change here


async def failure_reasons(store: Store, run: Run) -> list[FailureReason]:
    """The run's failed URLs by outcome, most frequent first (at most :data:`TOP`)."""
    if run.counters.failed == 0:
        return []
    failed = await store.list_tasks(run.id, state=TaskState.FAILED, limit=EXAMPLES)
    counts: dict[str, int] = {}
    examples: dict[str, str] = {}
    for task in failed:
        outcome = task.outcome.value if task.outcome is not None else "unknown"
        counts[outcome] = counts.get(outcome, 0) + 1
        examples.setdefault(outcome, task.last_error or outcome)
    ranked = sorted(counts, key=lambda outcome: (-counts[outcome], outcome))[:TOP]
    return [
        FailureReason(
            outcome, counts[outcome], examples[outcome], advice(outcome, examples[outcome])
        )
        for outcome in ranked
    ]


def advice(outcome: str, example: str) -> str:
    """What to do about failures of ``outcome`` (its example error names the address)."""
    if outcome == FetchOutcome.FORBIDDEN_ADDRESS.value:
        found = _REFUSED_ADDRESS.search(example)
        network = _block_of(found.group(1)) if found else None
        opening = f"--allow-network {network}" if network else "--allow-network CIDR"
        return (
            f"if you mean to crawl that network, open it with {opening}: non-public addresses "
            "are closed by default, so that a crawled site cannot make sitesync reach your "
            "own network (docs/security.md)"
        )
    return _ADVICE.get(outcome, "")


_ADVICE = {
    FetchOutcome.TIMEOUT.value: "a slow site: --total-timeout raises the limit per request",
    FetchOutcome.TOO_LARGE.value: "--max-body-bytes raises the size kept",
    FetchOutcome.BLOCKED.value: (
        "robots.txt or the server (401/403/451) refused them: `sitesync why URL` says which"
    ),
    FetchOutcome.UNREACHABLE.value: "check the URL and the host's name: no connection was made",
    FetchOutcome.REDIRECT_NOT_FOLLOWED.value: (
        "redirected out of the crawl's scope: --allow-domain adds a domain to it"
    ),
}


def _block_of(address: str) -> str | None:
    try:
        ip = ipaddress.ip_address(address.strip("[]"))
    except ValueError:
        return None
    for block in _BLOCKS:
        if ip.version == block.version and ip in block:
            return str(block)
    return f"{ip}/{ip.max_prefixlen}"
