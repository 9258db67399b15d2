-- Pending tasks put off to a later time (a retry's backoff, Retry-After, a host's pace),
-- and when they may start: the earliest start of a run's pending tasks (what `sitesync
-- status` says an idle run waits for) without reading the pending frontier. New tasks
-- start at 0 and are not in it, so admission does not pay for it.
CREATE INDEX tasks_put_off ON tasks (run_id, next_eligible_at)
    WHERE state = 'pending' AND next_eligible_at > 0;
