-- The admission budget of a run with max_pages, in slots (budget.py).

-- name: insert_admission_budget
-- A new capped run's slots, all of its cap.
INSERT INTO run_admission_budget (run_id, slot, remaining)
SELECT %(run_id)s, slot, remaining
  FROM unnest(%(slots)s::smallint[], %(remaining)s::bigint[]) AS budget (slot, remaining);

-- name: take_admission_slot
-- One slot with budget left that no other transaction holds, locked for the caller's
-- transaction. SKIP LOCKED: an admission never waits for another's slot, so slots add no
-- lock wait and no deadlock. The search starts at the caller's slot so that admissions
-- side by side take different slots. A row another transaction spent and committed after
-- this statement's snapshot is read again before it is locked (remaining is current).
SELECT slot, remaining
  FROM run_admission_budget
 WHERE run_id = %(run_id)s AND remaining > 0 AND slot <> ALL (%(held)s::smallint[])
 ORDER BY (slot - %(start)s + %(slots)s) %% %(slots)s
 LIMIT 1
   FOR UPDATE SKIP LOCKED;

-- name: spend_admission_budget
-- What the caller's admissions took, off the slots it holds.
UPDATE run_admission_budget AS b
   SET remaining = spent.remaining
  FROM unnest(%(slots)s::smallint[], %(remaining)s::bigint[]) AS spent (slot, remaining)
 WHERE b.run_id = %(run_id)s AND b.slot = spent.slot;

-- name: select_admission_budget_left
-- What the run may still admit, as committed (locked slots included); for a debug line.
SELECT COALESCE(SUM(remaining), 0) AS left FROM run_admission_budget WHERE run_id = %(run_id)s;
