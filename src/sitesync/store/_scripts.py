"""Store calls of several statements that both backends make alike, each written once.

Each is a script of steps (:mod:`sitesync.store._steps`) that the backend's plumbing runs
in one transaction (``self._db.run``): the statements, their order and every decision
between them are here, the backends only answer the steps. A backend's area inherits these
calls, as it inherits the one-query calls of :mod:`sitesync.store._plain`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from sitesync.models import Claim, ClaimGrant, Run, RunDiff, WorkerInfo
from sitesync.store._plain import P, PlainCoordination, PlainRecords, PlainSupervision
from sitesync.store._records import change_from_row, one_sided_change
from sitesync.store._rows import claim_from_row
from sitesync.store._steps import Fetch, HoldRun, Script, Write
from sitesync.store.rules import Row, claim_step, fair_share, gone_worker_params, recovery_step


class ScriptedCoordination(PlainCoordination[P]):
    """Claims and gone workers: several statements, one decision of the run at a time."""

    async def claim_hosts(
        self,
        run_id: int,
        *,
        worker_id: str,
        claim_seconds: float,
        worker_ttl: float,
        max_hosts: int | None = None,
        busy_hosts: Sequence[str] = (),
    ) -> ClaimGrant:
        busy, clock = self._db.text_list(busy_hosts), self._db.clock
        args = (run_id, worker_id, claim_seconds, worker_ttl, max_hosts, busy)
        return await self._db.run(lambda: claim_hosts(clock, *args))

    async def release_gone_worker(self, run_id: int, worker: WorkerInfo) -> int:
        return await self._db.run(lambda: release_gone_worker(self._db.clock, run_id, worker))


class ScriptedRecords(PlainRecords[P]):
    """Reads of records that take several statements."""

    async def diff_runs(self, run_a: int, run_b: int) -> RunDiff:
        # SQLite reads outside a transaction, as ever; PostgreSQL in one, so that the three
        # answers describe one moment.
        return await self._db.run(lambda: diff_runs(run_a, run_b), reads_only=True)


class ScriptedSupervision(PlainSupervision[P]):
    """The watchdog's and the operator's calls on runs and claims."""

    async def start_queued_run(self, run_id: int, *, supervisor_id: str) -> Run | None:
        read, clock = self._db.decode.run, self._db.clock
        return await self._db.run(lambda: start_queued_run(read, clock, run_id, supervisor_id))

    async def recover_stale_runs(self, *, stale_after: float, max_crash_retries: int) -> list[Run]:
        read, clock = self._db.decode.run, self._db.clock
        args = (stale_after, max_crash_retries)
        return await self._db.run(lambda: recover_stale_runs(read, clock, *args))

    async def release_claims_where(
        self, *, expired_only: bool, worker_id: str | None, dry_run: bool
    ) -> list[Claim]:
        args = (expired_only, worker_id, dry_run)
        return await self._db.run(lambda: release_claims_where(self._db.clock, *args))


def claim_hosts(
    clock: Callable[[], float],
    run_id: int,
    worker_id: str,
    claim_seconds: float,
    worker_ttl: float,
    max_hosts: int | None,
    busy: Any,
) -> Script[ClaimGrant]:
    """The worker's heartbeat and claims renewed, finished hosts let go, then its fair share
    of the hosts with work: the surplus dropped or free hosts claimed (:func:`claim_step`)."""
    if not (yield HoldRun(run_id)):
        return ClaimGrant(claims=(), share=0)
    now = clock()
    mine = {"run_id": run_id, "worker_id": worker_id, "now": now, "busy": busy}
    yield Write("heartbeat_worker", mine)
    yield Write("renew_claims", {**mine, "expires_at": now + claim_seconds})
    yield Write("drop_finished_claims", mine)
    [live] = yield Fetch("count_live_workers", {"run_id": run_id, "alive_after": now - worker_ttl})
    [hosts] = yield Fetch("count_hosts_with_work", {"run_id": run_id})
    share = fair_share(hosts["n"], live["n"], max_hosts)
    held = len((yield Fetch("select_my_claims", mine)))
    if step := claim_step(held, share):
        query, extra = step
        yield Write(query, {**mine, **extra, "expires_at": now + claim_seconds})
    rows = yield Fetch("select_my_claims", mine)
    return ClaimGrant(claims=tuple(claim_from_row(row) for row in rows), share=share)


def release_gone_worker(clock: Callable[[], float], run_id: int, worker: WorkerInfo) -> Script[int]:
    """A worker proven gone (its row still shows every fact of the proof): stopped, its
    claims and leases expired now; how many leases it held (0: not ours to stop)."""
    if not (yield HoldRun(run_id)):
        return 0
    params = {**gone_worker_params(worker), "run_id": run_id, "now": clock()}
    if (yield Write("stop_gone_worker", params)) != 1:
        return 0
    yield Write("end_worker_claims", params)
    leases: int = yield Write("end_worker_leases", params)
    return leases


def diff_runs(run_a: int, run_b: int) -> Script[RunDiff]:
    """Keys run_b saw and run_a did not (added), the other way round (removed), and keys both
    saw with different content (changed)."""
    added = yield Fetch("diff_only_in", {"run_id": run_b, "other_run_id": run_a})
    removed = yield Fetch("diff_only_in", {"run_id": run_a, "other_run_id": run_b})
    changed = yield Fetch("diff_changed", {"run_a": run_a, "run_b": run_b})
    return RunDiff(
        run_a=run_a,
        run_b=run_b,
        added=tuple(one_sided_change(row, side="b") for row in added),
        removed=tuple(one_sided_change(row, side="a") for row in removed),
        changed=tuple(change_from_row(row) for row in changed),
    )


def start_queued_run(
    read: Callable[[Row], Run], clock: Callable[[], float], run_id: int, supervisor_id: str
) -> Script[Run | None]:
    """The queued run started by this supervisor; None when it was not queued (any more)."""
    if not (yield HoldRun(run_id)):
        return None
    params = {"run_id": run_id, "supervisor_id": supervisor_id, "now": clock()}
    if (yield Write("start_queued_run", params)) != 1:
        return None
    [row] = yield Fetch("select_run", {"run_id": run_id})
    return read(row)


def recover_stale_runs(
    read: Callable[[Row], Run], clock: Callable[[], float], stale_after: float,
    max_crash_retries: int,
) -> Script[list[Run]]:  # fmt: skip
    """Each running run without a heartbeat for ``stale_after`` seconds, re-queued or failed
    as :func:`recovery_step` says; the runs as they became."""
    now = clock()
    stale = yield Fetch("select_stale_running", {"stale_before": now - stale_after})
    recovered = []
    for row in stale:
        if not (yield HoldRun(row["id"])):
            continue
        query, extra = recovery_step(
            row, stale_after=stale_after, max_crash_retries=max_crash_retries
        )
        yield Write(query, {"run_id": row["id"], "now": now, **extra})
        [run] = yield Fetch("select_run", {"run_id": row["id"]})
        recovered.append(read(run))
    return recovered


def release_claims_where(
    clock: Callable[[], float], expired_only: bool, worker_id: str | None, dry_run: bool
) -> Script[list[Claim]]:
    """The claims an operator asked to release (expired ones, a worker's), deleted unless
    ``dry_run``, each fenced on its holder and expiry as read."""
    params = {"expired_only": expired_only, "worker_id": worker_id, "now": clock()}
    claims = [claim_from_row(row) for row in (yield Fetch("select_claims_to_release", params))]
    if not dry_run:
        for claim in claims:
            yield Write("delete_claim", {"run_id": claim.run_id, "host": claim.host,
                                         "worker_id": claim.worker_id,
                                         "expires_at": claim.expires_at})  # fmt: skip
    return claims
