-- Supervision: who runs a run, when it last showed signs of life, how often it crashed.
ALTER TABLE runs ADD COLUMN heartbeat_at double precision;
ALTER TABLE runs ADD COLUMN supervisor_id text;
ALTER TABLE runs ADD COLUMN crash_retries integer NOT NULL DEFAULT 0;

-- Recurring scans: a run may belong to a scope (e.g. a country's domain list), and a
-- scope has at most one active run: the index makes a second start fail, atomically.
-- The stale lifecycle was applied for this scan (once, whoever finishes the run).
ALTER TABLE runs ADD COLUMN scan_applied_at double precision;
ALTER TABLE runs ADD COLUMN scope text;
CREATE UNIQUE INDEX runs_one_active_per_scope ON runs (scope)
    WHERE scope IS NOT NULL AND status IN ('queued', 'running', 'paused');

-- The domain registry: registered sites, their scope and their stale lifecycle.
ALTER TABLE domains ADD COLUMN scope text;
ALTER TABLE domains ADD COLUMN active boolean NOT NULL DEFAULT true;
ALTER TABLE domains ADD COLUMN stale boolean NOT NULL DEFAULT false;
ALTER TABLE domains ADD COLUMN unreachable_streak integer NOT NULL DEFAULT 0;
CREATE INDEX domains_by_scope ON domains (scope, active);

CREATE TABLE schedules (
    scope        text PRIMARY KEY,
    cadence      text NOT NULL,      -- cron syntax, e.g. '0 3 1 * *' (monthly)
    next_run_at  double precision NOT NULL,
    last_run_id  bigint,
    updated_at   double precision NOT NULL
);
