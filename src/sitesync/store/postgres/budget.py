"""What a run with ``max_pages`` may still admit on PostgreSQL, held in slots.

A capped run's budget (its cap less the tasks it holds) is split over :data:`SLOTS` rows of
``run_admission_budget``. An admission locks one slot that no other transaction holds
(``SKIP LOCKED``: it never waits for a slot), admits up to what the slot holds, and takes
another slot while its batch still has new URLs; what it admitted comes off its slots in
the same transaction. So:

- the admissions of a capped run go side by side, like those of an uncapped run, instead of
  queuing on the run's row;
- at every commit the slots sum to ``max_pages`` less the run's ``tasks_total``: the cap
  holds exactly, and a crash loses no budget (its transaction rolls back whole);
- a slot is never waited for, so slots add no lock wait and no deadlock.

The price is near the cap: while every slot that has budget left is held by another
admission in flight, a new URL is turned away although budget remains. Only a URL found
again later can use that budget; one transaction alone (as on one worker) never meets it.
"""

from __future__ import annotations

import logging
import random

from sitesync.store.postgres._db import Conn, Q, one

log = logging.getLogger(__name__)

#: Slots per capped run: more admissions side by side than a run has writers in flight.
SLOTS = 16


def split(budget: int, slots: int = SLOTS) -> list[int]:
    """``budget`` spread as evenly as whole numbers allow, the first slots taking the
    remainder (as migration 0012 spreads the budget of runs that already exist)."""
    share, extra = divmod(max(0, budget), slots)
    return [share + (1 if slot < extra else 0) for slot in range(slots)]


async def create(conn: Conn, run_id: int, max_pages: int) -> None:
    """A new capped run's slots, holding all of its cap."""
    shares = split(max_pages)
    params = {"run_id": run_id, "slots": list(range(SLOTS)), "remaining": shares}
    await conn.execute(Q["insert_admission_budget"], params)


class AdmissionBudget:
    """The slots one admission holds, and what is left in them."""

    def __init__(self, run_id: int) -> None:
        self._run_id = run_id
        self._held: dict[int, int] = {}  # slot -> remaining, in the order taken
        self._taken: dict[int, int] = {}  # slot -> remaining when taken
        self._start = random.randrange(SLOTS)

    @property
    def room(self) -> int:
        return sum(self._held.values())

    async def take(self, conn: Conn) -> bool:
        """Lock one more slot with budget left that no one else holds; whether there was one."""
        params = {
            "run_id": self._run_id,
            "held": list(self._held),
            "start": self._start,
            "slots": SLOTS,
        }
        row = await one(conn, "take_admission_slot", params)
        if row is None:
            if log.isEnabledFor(logging.DEBUG):  # an extra read, only when asked for
                await self._log_turn_away(conn)
            return False
        self._held[row["slot"]] = self._taken[row["slot"]] = row["remaining"]
        return True

    async def _log_turn_away(self, conn: Conn) -> None:
        row = await one(conn, "select_admission_budget_left", {"run_id": self._run_id})
        # Committed, the slots this admission holds still show what they held when taken.
        elsewhere = (int(row["left"]) if row is not None else 0) - sum(self._taken.values())
        if elsewhere > 0:
            log.debug(
                "run %d: an admission found no free budget slot, %d held by admissions in "
                "flight; new URLs past its room were turned away",
                self._run_id,
                elsewhere,
            )

    def spend(self, admitted: int) -> None:
        """Take ``admitted`` off the slots held, in the order they were taken."""
        if admitted > self.room:
            raise AssertionError(f"admitted {admitted} with room for {self.room}")
        for slot, remaining in self._held.items():
            used = min(remaining, admitted)
            self._held[slot] = remaining - used
            admitted -= used

    async def settle(self, conn: Conn) -> None:
        """Write what was spent, in the caller's transaction (with the tasks admitted)."""
        spent = {slot: left for slot, left in self._held.items() if left != self._taken[slot]}
        if spent:
            params = {
                "run_id": self._run_id,
                "slots": list(spent),
                "remaining": list(spent.values()),
            }
            await conn.execute(Q["spend_admission_budget"], params)
