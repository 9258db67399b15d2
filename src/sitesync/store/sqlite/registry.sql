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

-- name: set_domain_profile
-- A domain's own request profile, from a domain file with profile columns (NULL: none).
UPDATE domains SET request_profile = :profile WHERE host = :host;

-- name: select_domain_profiles
-- The profiles a scan of the scope records in its run's `sites` setting.
SELECT host, request_profile FROM domains
 WHERE scope = :scope AND active = 1 AND request_profile IS NOT NULL
 ORDER BY host;

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
INSERT INTO runs (status, config, settings, created_at, last_activity_at, scope)
VALUES ('queued', :config, :settings, :now, :now, :scope)
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
INSERT INTO schedules (scope, cadence, next_run_at, settings, updated_at)
VALUES (:scope, :cadence, :next_run_at, :settings, :now)
ON CONFLICT (scope) DO UPDATE
   SET cadence = excluded.cadence, next_run_at = excluded.next_run_at,
       settings = excluded.settings, updated_at = excluded.updated_at;

-- name: select_schedules
SELECT * FROM schedules ORDER BY scope;

-- name: advance_schedule
-- A scan that could not start (the scope was busy) leaves the last run id as it was.
UPDATE schedules
   SET next_run_at = :next_run_at, last_run_id = COALESCE(:last_run_id, last_run_id),
       updated_at = :now
 WHERE scope = :scope;

-- name: record_domain_scans
-- What a finished scan did on each domain of its scope, counted from the run's per-host
-- counters and assets (the domain's own host and its canonical host). A later worker seeing
-- the same end rewrites the row with the same or fuller numbers.
INSERT INTO domain_scans (host, run_id, scope, run_status, host_status, pages, errors,
                          assets_found, assets_stored, finished_at)
SELECT d.host, r.id, r.scope, r.status,
       COALESCE((SELECT h.status FROM run_hosts AS h
                  WHERE h.run_id = r.id AND h.host = d.host),
                (SELECT h.status FROM run_hosts AS h
                  WHERE h.run_id = r.id AND h.host = d.canonical_host)),
       COALESCE((SELECT SUM(h.pages_crawled) FROM run_hosts AS h
                  WHERE h.run_id = r.id AND h.host IN (d.host, d.canonical_host)), 0),
       COALESCE((SELECT SUM(h.errors) FROM run_hosts AS h
                  WHERE h.run_id = r.id AND h.host IN (d.host, d.canonical_host)), 0),
       COALESCE((SELECT SUM(a.assets_found) FROM run_host_assets AS a
                  WHERE a.run_id = r.id AND a.host IN (d.host, d.canonical_host)), 0),
       COALESCE((SELECT SUM(a.assets_stored) FROM run_host_assets AS a
                  WHERE a.run_id = r.id AND a.host IN (d.host, d.canonical_host)), 0),
       COALESCE(r.ended_at, :now)
  FROM runs AS r
  JOIN domains AS d ON d.scope = r.scope
 WHERE r.id = :run_id AND r.scope IS NOT NULL
ON CONFLICT (host, run_id) DO UPDATE
   SET run_status = excluded.run_status, host_status = excluded.host_status,
       pages = excluded.pages, errors = excluded.errors,
       assets_found = excluded.assets_found, assets_stored = excluded.assets_stored,
       finished_at = excluded.finished_at;

-- name: select_domain_history
SELECT * FROM domain_scans WHERE host = :host ORDER BY run_id DESC;

-- name: select_latest_domain_scans
-- Each domain's latest scan: one primary-key probe per domain.
SELECT s.* FROM domain_scans AS s
 WHERE (:host IS NULL OR s.host = :host)
   AND s.run_id = (SELECT MAX(o.run_id) FROM domain_scans AS o WHERE o.host = s.host)
 ORDER BY s.host;

-- name: delete_schedule
DELETE FROM schedules WHERE scope = :scope;
