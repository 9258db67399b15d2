"""A page's turn at the gate: every request a page attempt sends (robots.txt, each redirect
hop) starts here, so that the pause check and the count of requests under way are kept in
one place, the one the worker's drain reads.
"""

from __future__ import annotations

from collections.abc import Callable

from sitesync.fetch.gate import GateTurn, RequestGate
from sitesync.models import Lease


class Halted(Exception):
    """The worker is leaving (the run was paused, stopped or cancelled): start nothing."""


class PageTurns:
    def __init__(self, gate: RequestGate, halted: Callable[[], bool]) -> None:
        self.gate = gate
        #: Whether the worker is leaving (read before each attempt and in each turn).
        self.halted = halted
        #: The gate's: the host's pace learned from the answer to a turn's request.
        self.learn = gate.learn
        #: Tasks a request has started for (a turn taken past the pause check), until the
        #: worker hands in their outcome: a pause waits for these, and only these.
        self.under_way: set[int] = set()

    def turn(self, host: str, lease: Lease) -> GateTurn:
        """The host's turn for a request on behalf of ``lease``: the gate's slot and claim,
        and with the slot in hand no request after a pause (the wait for a turn can outlast
        one by a whole delay); counted as under way once the claim is confirmed."""
        return self.gate.turn(
            host, before=self._not_halted, after=lambda: self.under_way.add(lease.task_id)
        )

    def _not_halted(self) -> None:
        if self.halted():
            raise Halted
