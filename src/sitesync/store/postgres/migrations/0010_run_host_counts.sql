-- No hot row (issue 13): a run's task counters move in per-host rows instead of the run's
-- own row, so writers of one run no longer queue on one row. A host is claimed by one
-- worker at a time, so its row is touched by one writer at a time in the common case;
-- the run's counters are the sum of its host rows (run_view), folded on read.
CREATE TABLE run_host_counts (
    run_id        bigint NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
    host          text   NOT NULL,  -- '' holds what older versions counted for the run only
    tasks_total   bigint NOT NULL DEFAULT 0,
    pending       bigint NOT NULL DEFAULT 0,
    assigned      bigint NOT NULL DEFAULT 0,
    completed     bigint NOT NULL DEFAULT 0,
    failed        bigint NOT NULL DEFAULT 0,
    pages_fetched bigint NOT NULL DEFAULT 0,
    bytes_fetched bigint NOT NULL DEFAULT 0,
    retries       bigint NOT NULL DEFAULT 0,
    updated_at    double precision NOT NULL,  -- the last task transition on the host
    PRIMARY KEY (run_id, host)
);
-- The claim refresh: hosts with pending work, without reading the frontier.
CREATE INDEX run_host_counts_with_work ON run_host_counts (run_id, host) WHERE pending > 0;

-- The backfill: task states recounted per host; what only the run row knew (pages and bytes
-- fetched, retries) kept whole in the run's '' row.
INSERT INTO run_host_counts (run_id, host, tasks_total, pending, assigned, completed, failed,
                             updated_at)
SELECT t.run_id, t.host, COUNT(*),
       COUNT(*) FILTER (WHERE t.state = 'pending'),
       COUNT(*) FILTER (WHERE t.state = 'assigned'),
       COUNT(*) FILTER (WHERE t.state = 'completed'),
       COUNT(*) FILTER (WHERE t.state = 'failed'),
       MAX(t.updated_at)
  FROM tasks AS t
 GROUP BY t.run_id, t.host;
INSERT INTO run_host_counts (run_id, host, pages_fetched, bytes_fetched, retries, updated_at)
SELECT id, '', pages_fetched, bytes_fetched, retries, COALESCE(last_activity_at, created_at)
  FROM runs
 WHERE pages_fetched <> 0 OR bytes_fetched <> 0 OR retries <> 0;

ALTER TABLE runs DROP COLUMN tasks_total, DROP COLUMN pending, DROP COLUMN assigned,
    DROP COLUMN completed, DROP COLUMN failed, DROP COLUMN pages_fetched,
    DROP COLUMN bytes_fetched, DROP COLUMN retries;

-- The first pending task of a host (the claim refresh's "oldest work first") is one probe.
DROP INDEX tasks_pending_by_host;
CREATE INDEX tasks_pending_by_host ON tasks (run_id, host, id) WHERE state = 'pending';

-- A run with its counters folded from its host rows: what every read of a run selects.
CREATE VIEW run_view AS
SELECT r.id, r.status, r.config, r.created_at, r.started_at, r.ended_at,
       GREATEST(r.last_activity_at, c.moved_at) AS last_activity_at,
       r.status_reason,
       COALESCE(c.tasks_total, 0) AS tasks_total, COALESCE(c.pending, 0) AS pending,
       COALESCE(c.assigned, 0) AS assigned, COALESCE(c.completed, 0) AS completed,
       COALESCE(c.failed, 0) AS failed, COALESCE(c.pages_fetched, 0) AS pages_fetched,
       COALESCE(c.bytes_fetched, 0) AS bytes_fetched, COALESCE(c.retries, 0) AS retries,
       r.seeded_at, r.heartbeat_at, r.supervisor_id, r.crash_retries, r.scan_applied_at, r.scope
  FROM runs AS r
  LEFT JOIN LATERAL (
       SELECT SUM(h.tasks_total)::bigint AS tasks_total, SUM(h.pending)::bigint AS pending,
              SUM(h.assigned)::bigint AS assigned, SUM(h.completed)::bigint AS completed,
              SUM(h.failed)::bigint AS failed, SUM(h.pages_fetched)::bigint AS pages_fetched,
              SUM(h.bytes_fetched)::bigint AS bytes_fetched, SUM(h.retries)::bigint AS retries,
              MAX(h.updated_at) AS moved_at
         FROM run_host_counts AS h
        WHERE h.run_id = r.id) AS c ON true;
