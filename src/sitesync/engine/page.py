"""One attempt at one leased URL, read top to bottom in :meth:`PageAttempts._attempt`: what
ends it before any request (:mod:`~sitesync.engine.beforefetch`), the page's requests hop by
hop (:mod:`~sitesync.engine.hops`), what the answer says about its host
(:mod:`~sitesync.engine.hostsignals`), and what the answer becomes
(:mod:`~sitesync.engine.pageanswers`). Each step is a part of its own, holding only the
few collaborators it uses; :func:`sitesync.engine.pageparts.page_attempts` puts them
together.

Everything a server can do ends in a :class:`TaskReport` (or a :class:`Deferral` when the
host asked us to back off before we even tried), never in an exception.
"""

from __future__ import annotations

from dataclasses import replace

from sitesync.engine.beforefetch import BeforeFetch
from sitesync.engine.deferral import Deferral
from sitesync.engine.hops import HopFetcher
from sitesync.engine.hostsignals import HostSignals
from sitesync.engine.pageanswers import PageAnswers
from sitesync.engine.pageturns import Halted, PageTurns
from sitesync.engine.retrywait import RetryWaits
from sitesync.fetch.gate import HostNotHeld
from sitesync.models import Lease, TaskReport
from sitesync.plugins.offloop import Abandoned
from sitesync.store.base import Store


class PageAttempts:
    """The steps of a page attempt, in the order they run, and the attempt's history row."""

    def __init__(
        self,
        *,
        store: Store,
        turns: PageTurns,
        before: BeforeFetch,
        hops: HopFetcher,
        signals: HostSignals,
        answers: PageAnswers,
        waits: RetryWaits,
        worker_id: str | None = None,
    ) -> None:
        self.store = store  # its clock: when an attempt started and ended
        self.turns = turns  # every request's turn at the gate (the drain reads what is under way)
        self.before = before
        self.hops = hops
        self.signals = signals
        self.answers = answers
        self.waits = waits  # a retry's wait never shorter than the last gap
        self.worker_id = worker_id

    @property
    def under_way(self) -> set[int]:
        """Tasks a request has started for: what the worker's pause waits for."""
        return self.turns.under_way

    async def attempt(self, lease: Lease) -> TaskReport | Deferral:
        started = self.store.now()
        try:
            outcome = await self._attempt(lease)
        except (Halted, HostNotHeld, Abandoned):
            # Paused (or stopped) while this lease waited for its host's turn, or the
            # host's claim was let go meanwhile (whoever holds it now fetches the page): it
            # goes back untried, and no request starts after the pause.
            return Deferral(lease, self.store.now())
        if isinstance(outcome, Deferral):
            return outcome
        # The attempt's history row: when it ran, and on which worker.
        return replace(
            outcome, started_at=started, ended_at=self.store.now(), worker_id=self.worker_id
        )

    async def _attempt(self, lease: Lease) -> TaskReport | Deferral:
        before = await self.before.ended(lease)
        if before is not None:
            return before
        result, requested_at, revalidated = await self.hops.fetch(lease)
        heard = await self.signals.heard(lease, result)
        if heard is not None:
            return heard
        if lease.depth == 0 and result.redirects:
            await self.hops.record_root_redirect(lease, result)
        report = await self.answers.report(lease, result, revalidated)
        return await self.waits.no_shorter(report, requested_at)
