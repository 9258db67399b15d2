"""Report batching: finished attempts committed in batches (one transaction per batch),
so that durability costs one commit per batch instead of one per page."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from sitesync.engine.options import WorkerOptions
from sitesync.engine.waits import wait_set
from sitesync.errors import StoreUnavailable
from sitesync.fetch.text import safe_text
from sitesync.models import NewTask, ReportVerdict, TaskReport
from sitesync.store.base import Store

log = logging.getLogger(__name__)


@dataclass(slots=True)
class WorkerStats:
    fetched: int = 0  # attempts that got an HTTP response
    errors: int = 0  # attempts that failed (network, timeout, 5xx, ...)
    committed: int = 0
    lease_lost: int = 0  # late reports rejected because the lease was taken over
    started: float = field(default_factory=time.monotonic)

    def count(self, report: TaskReport) -> None:
        if report.http_status > 0:
            self.fetched += 1
        if not report.ok:
            self.errors += 1


def one_line(exc: BaseException) -> str:
    """An exception as one storable line (its message may quote server data)."""
    return safe_text(" ".join(f"{type(exc).__name__}: {exc}".split()))


class ReportBatcher:
    def __init__(
        self,
        store: Store,
        *,
        run_id: int,
        options: WorkerOptions,
        stats: WorkerStats,
        let_go: Callable[[str], None],
        admitted: Callable[[Sequence[NewTask]], None] | None = None,
    ) -> None:
        self.store = store
        self.run_id = run_id
        self.options = options
        self.stats = stats
        self._let_go = let_go  # a reported lease is no longer held
        self._admitted = admitted  # links the store took in with an accepted report
        self._reports: list[TaskReport] = []
        self._now = asyncio.Event()
        self._closing = False  # shutting down: the loop ends after its current write
        self._uncounted = 0  # pages reported since the last per-host counter flush

    def add(self, report: TaskReport) -> None:
        self.stats.count(report)
        self._reports.append(report)
        if len(self._reports) >= self._flush_at:
            self._now.set()

    @property
    def _flush_at(self) -> int:
        """Reports that are committed at once, before ``report_interval`` is up: a batch,
        or half of the leases the worker may hold, whose other half is then still being
        fetched (on a fast site, 304s most of all, the held leases were all waiting for
        the interval while the fetch slots stood free)."""
        return max(1, min(self.options.report_batch, self.options.held_limit // 2))

    def close(self) -> None:
        """End the loop after the write under way (if any), never in the middle of one."""
        self._closing = True
        self._now.set()

    async def flush_forever(self) -> None:
        while not self._closing:
            await wait_set(self._now, self.options.report_interval)
            self._now.clear()
            await self.flush()

    async def flush(self) -> None:
        if not self._reports:
            return
        batch, self._reports = self._reports, []
        admitted = self._admitted
        try:
            verdicts = await self.store.report(self.run_id, batch)
        except StoreUnavailable:
            raise  # the store is down, not the batch: nothing to blame on one report
        except Exception as exc:
            # One report the store refuses must not take its batch (and the worker) with it.
            log.warning(
                "a batch of %d reports failed (%s); storing them one by one",
                len(batch), one_line(exc),
            )  # fmt: skip
            verdicts = [await self._report_alone(report) for report in batch]
            admitted = None  # a report stored alone may have lost its links: not known
        for report, verdict in zip(batch, verdicts, strict=True):
            self._let_go(report.lease.host)
            if verdict is ReportVerdict.LEASE_LOST:
                self.stats.lease_lost += 1
                log.warning(
                    "late result for %s rejected: its lease expired and was taken over",
                    report.lease.url,
                )
            else:
                self.stats.committed += 1
                self._uncounted += 1
                if admitted is not None and report.discovered:
                    admitted(report.discovered)
        interval = self.options.stats_flush_interval
        if interval and self._uncounted >= interval:
            self._uncounted = 0
            await self.store.flush_host_stats(self.run_id)

    async def _report_alone(self, report: TaskReport) -> ReportVerdict:
        """Store one report; if the store refuses it, fail its task with the reason instead.

        The bare failure carries nothing the page produced (records, links), so what the store
        refused cannot be in it; if even that fails, the store itself is in trouble and the
        exception goes up.
        """
        try:
            [verdict] = await self.store.report(self.run_id, [report])
            return verdict
        except StoreUnavailable:
            raise
        except Exception as exc:
            error = f"report could not be stored: {one_line(exc)}"
            log.error("%s: %s", report.lease.url, error)
        bare = TaskReport(
            lease=report.lease, ok=False, http_status=report.http_status, error=error,
            give_up=True, outcome=report.outcome, final_url=report.final_url,
        )  # fmt: skip
        [verdict] = await self.store.report(self.run_id, [bare])
        return verdict
