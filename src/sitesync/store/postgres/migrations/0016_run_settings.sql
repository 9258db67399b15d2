-- A run's settings travel with it: what it was created with (every setting that decides
-- what is crawled and how), a version that grows with each change, so every worker of the
-- run notices a change on its next status read, and each change with its time. Runs
-- created before have no settings (NULL): their processes use their own.
ALTER TABLE runs ADD COLUMN settings jsonb;
ALTER TABLE runs ADD COLUMN settings_version integer NOT NULL DEFAULT 0;
CREATE TABLE run_setting_changes (
    run_id     bigint           NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
    version    integer          NOT NULL,  -- the run's settings_version after the change
    name       text             NOT NULL,
    old_value  jsonb            NOT NULL,
    new_value  jsonb            NOT NULL,
    changed_at double precision NOT NULL,
    PRIMARY KEY (run_id, version, name)
);
-- A schedule's settings: each scan it starts is created with them.
ALTER TABLE schedules ADD COLUMN settings jsonb;
-- Reads of a run show its settings (new columns go last in a replaced view).
CREATE OR REPLACE VIEW run_view AS
SELECT r.id, r.status, r.config, r.created_at, r.started_at, r.ended_at,
       GREATEST(r.last_activity_at, c.moved_at) AS last_activity_at,
       r.status_reason,
       COALESCE(c.tasks_total, 0) AS tasks_total, COALESCE(c.pending, 0) AS pending,
       COALESCE(c.assigned, 0) AS assigned, COALESCE(c.completed, 0) AS completed,
       COALESCE(c.failed, 0) AS failed, COALESCE(c.pages_fetched, 0) AS pages_fetched,
       COALESCE(c.bytes_fetched, 0) AS bytes_fetched, COALESCE(c.retries, 0) AS retries,
       r.seeded_at, r.heartbeat_at, r.supervisor_id, r.crash_retries, r.scan_applied_at, r.scope,
       r.settings, r.settings_version
  FROM runs AS r
  LEFT JOIN LATERAL (
       SELECT SUM(h.tasks_total)::bigint AS tasks_total, SUM(h.pending)::bigint AS pending,
              SUM(h.assigned)::bigint AS assigned, SUM(h.completed)::bigint AS completed,
              SUM(h.failed)::bigint AS failed, SUM(h.pages_fetched)::bigint AS pages_fetched,
              SUM(h.bytes_fetched)::bigint AS bytes_fetched, SUM(h.retries)::bigint AS retries,
              MAX(h.updated_at) AS moved_at
         FROM run_host_counts AS h
        WHERE h.run_id = r.id) AS c ON true;
