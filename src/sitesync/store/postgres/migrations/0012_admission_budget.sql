-- A capped run without a hot row (issue 13): the budget of a run with max_pages (what it
-- may still admit) is split over slots that its admissions lock one at a time, passing
-- over those another admission holds, instead of all of them queuing on the run's row.
-- The slots of a run always sum to max_pages less the tasks it holds (store/postgres/budget.py).
CREATE TABLE run_admission_budget (
    run_id    bigint   NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
    slot      smallint NOT NULL,
    remaining bigint   NOT NULL CHECK (remaining >= 0),
    PRIMARY KEY (run_id, slot)
);

-- Runs that already exist: their budget is what their cap leaves, spread as evenly as
-- whole numbers allow over 16 slots (budget.SLOTS), the first slots taking the remainder.
INSERT INTO run_admission_budget (run_id, slot, remaining)
SELECT capped.id, slot, capped.left_over / 16 + CASE WHEN slot < capped.left_over % 16 THEN 1 ELSE 0 END
  FROM (SELECT r.id,
               GREATEST(0, (r.config ->> 'max_pages')::bigint
                           - COALESCE((SELECT SUM(h.tasks_total) FROM run_host_counts AS h
                                        WHERE h.run_id = r.id), 0)) AS left_over
          FROM runs AS r
         WHERE r.config ->> 'max_pages' IS NOT NULL) AS capped,
       generate_series(0, 15) AS slot;
