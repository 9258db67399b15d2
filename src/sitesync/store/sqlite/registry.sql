-- The domain registry, scans of scopes and their schedules (SQLite).
-- Hosts travel as one JSON array (:hosts), read with json_each: one statement per batch.

-- name: count_registered
SELECT COUNT(*) AS n FROM domains
 WHERE scope IS NOT NULL AND host IN (SELECT value FROM json_each(:hosts));

-- name: register_domains
-- A known host (crawled before, or registered in another scope) moves to this scope and
-- back into the active scan set; its stale state and streak stay as the last scans left them.
INSERT INTO domains (host, first_seen_at, updated_at, scope, active)
SELECT value, :now, :now, :scope, 1 FROM json_each(:hosts) WHERE true
ON CONFLICT (host) DO UPDATE
   SET scope = excluded.scope, active = 1, updated_at = excluded.updated_at;

-- name: select_domains
-- Registered domains only: rows of hosts merely crawled (scope NULL) are not in the registry.
SELECT * FROM domains
 WHERE scope IS NOT NULL
   AND (:scope IS NULL OR scope = :scope)
   AND (:stale IS NULL OR stale = :stale)
   AND (:active IS NULL OR active = :active)
 ORDER BY scope, host;

-- name: insert_scan_run
-- runs_one_active_per_scope makes this fail while the scope has a queued, running or
-- paused run: the conflict check and the insert are one atomic step.
INSERT INTO runs (status, config, created_at, last_activity_at, scope)
VALUES ('queued', :config, :now, :now, :scope)
RETURNING *;

-- name: select_active_scan
SELECT id FROM runs
 WHERE scope = :scope AND status IN ('queued', 'running', 'paused')
 ORDER BY id LIMIT 1;

-- name: claim_scan_results
-- Marks the scan applied and says so only the first time: whoever finishes the run last
-- (or twice) changes nothing more.
UPDATE runs SET scan_applied_at = :now
 WHERE id = :run_id AND scope IS NOT NULL AND status = 'completed' AND scan_applied_at IS NULL
RETURNING scope;

-- name: select_unapplied_scans
-- Completed scans whose lifecycle nobody applied yet (their worker died first).
SELECT id FROM runs
 WHERE scope IS NOT NULL AND status = 'completed' AND scan_applied_at IS NULL
 ORDER BY id;

-- name: select_scan_roots
-- Each domain of the scope with its root task(s) in the run (depth 0 on its own host).
-- A root still pending or leased says nothing, so only finished ones come back.
SELECT domains.host, domains.active, domains.unreachable_streak,
       tasks.state, tasks.outcome, tasks.http_status,
       EXISTS (SELECT 1 FROM run_hosts
                WHERE run_hosts.run_id = tasks.run_id AND run_hosts.host = tasks.host
                  AND run_hosts.status = 'blocked'
                  -- ended as a dead host (robots.txt unavailable): no answer, not a "no"
                  AND run_hosts.ended_as IS NULL) AS site_blocked
  FROM domains
  JOIN tasks ON tasks.run_id = :run_id AND tasks.host = domains.host AND tasks.depth = 0
 WHERE domains.scope = :scope AND tasks.state IN ('completed', 'failed')
 ORDER BY domains.host, tasks.id;

-- name: update_domain_lifecycle
UPDATE domains
   SET active = :active, stale = :stale, unreachable_streak = :streak,
       last_run_id = :run_id, last_crawled_at = :now, updated_at = :now
 WHERE host = :host;

-- name: upsert_schedule
INSERT INTO schedules (scope, cadence, next_run_at, updated_at)
VALUES (:scope, :cadence, :next_run_at, :now)
ON CONFLICT (scope) DO UPDATE
   SET cadence = excluded.cadence, next_run_at = excluded.next_run_at,
       updated_at = excluded.updated_at;

-- name: select_schedules
SELECT * FROM schedules ORDER BY scope;

-- name: advance_schedule
-- A scan that could not start (the scope was busy) leaves the last run id as it was.
UPDATE schedules
   SET next_run_at = :next_run_at, last_run_id = COALESCE(:last_run_id, last_run_id),
       updated_at = :now
 WHERE scope = :scope;
