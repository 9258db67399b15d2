"""How long a URL whose request failed waits before its next attempt.

The retry policy's exponential backoff (:class:`~sitesync.frontier.retry.RetryPolicy`), made
longer by the server's Retry-After, and **never shorter than the last gap**: each gap in a
URL's attempts is at least as long as the one before. A gap is the quiet time the URL had
between two attempts: from the end of one to the next request for it, whatever made it
longer (a Retry-After, the wait for the host's turn at a slowed pace). Without that floor a
slowed host (a 25 s pace) gives a URL's first retry a gap of 26.5 s, and the host's recovery
then gives its second one 5 s: the URL is asked faster as it keeps failing.

The end of the previous attempt is read from the task's attempt history, which the store
keeps for every worker of the fleet: whichever worker made it, the floor holds.
"""

from __future__ import annotations

from dataclasses import replace

from sitesync.frontier.retry import RetryPolicy
from sitesync.models import Lease, TaskReport
from sitesync.store.base import Store


class RetryWaits:
    def __init__(self, store: Store, policy: RetryPolicy, *, max_retry_after: float) -> None:
        self.store = store
        self.policy = policy
        self.max_retry_after = max_retry_after

    def backoff(self, lease: Lease, retry_after: float | None = None) -> float:
        """The policy's wait after this attempt, lengthened (never shortened) by the
        server's Retry-After, itself capped at ``max_retry_after``."""
        delay = self.policy.delay(lease.attempt_count)
        if retry_after is not None:
            delay = max(delay, min(retry_after, self.max_retry_after))
        return delay

    async def no_shorter(self, report: TaskReport, requested_at: float) -> TaskReport:
        """``report`` with its retry wait at least the gap between the end of the previous
        attempt and this attempt's request (``requested_at``, on the store's clock). A report
        that is not retried, or of a first attempt, is returned as it is (no query)."""
        lease = report.lease
        if report.ok or report.give_up or lease.attempt_count < 2:
            return report
        ends = [
            a.ended_at
            for a in await self.store.list_attempts(lease.task_id)
            if a.attempt < lease.attempt_count
        ]
        if not ends:
            return report
        gap = requested_at - ends[-1]
        return replace(report, retry_delay=gap) if gap > report.retry_delay else report
