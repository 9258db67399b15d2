-- The domain registry, scans of scopes and their schedules (PostgreSQL). The same query
-- names as sqlite/registry.sql. Hosts travel as one text[] (%(hosts)s): one statement per batch.

-- name: count_registered
SELECT COUNT(*) AS n FROM domains
 WHERE scope IS NOT NULL AND host = ANY (%(hosts)b::text[]);

-- name: register_domains
-- A known host (crawled before, or registered in another scope) moves to this scope and
-- back into the active scan set; its stale state and streak stay as the last scans left them.
-- Rows are written in host order, the order apply_scan_results locks them in.
INSERT INTO domains (host, first_seen_at, updated_at, scope, active)
SELECT host, %(now)s, %(now)s, %(scope)s, true
  FROM unnest(%(hosts)b::text[]) AS input (host)
 ORDER BY host
ON CONFLICT (host) DO UPDATE
   SET scope = excluded.scope, active = true, updated_at = excluded.updated_at;

-- name: set_domain_profile
-- A domain's own request profile, from a domain file with profile columns (NULL: none).
UPDATE domains SET request_profile = %(profile)s WHERE host = %(host)s;

-- name: select_domain_profiles
-- The profiles a scan of the scope records in its run's `sites` setting.
SELECT host, request_profile FROM domains
 WHERE scope = %(scope)s AND active = true AND request_profile IS NOT NULL
 ORDER BY host;

-- name: select_domains
-- Registered domains only: rows of hosts merely crawled (scope NULL) are not in the registry.
SELECT * FROM domains
 WHERE scope IS NOT NULL
   AND (%(scope)s::text IS NULL OR scope = %(scope)s::text)
   AND (%(stale)s::boolean IS NULL OR stale = %(stale)s::boolean)
   AND (%(active)s::boolean IS NULL OR active = %(active)s::boolean)
 ORDER BY scope, host;

-- name: insert_scan_run
-- runs_one_active_per_scope makes this fail while the scope has a queued, running or
-- paused run: the conflict check and the insert are one atomic step. No row back: this
-- call's create_token is taken, by its own first attempt (as insert_run). The token is
-- the ON CONFLICT arbiter, checked before the insert: a replay finds its run, not a
-- conflict with it.
INSERT INTO runs (status, config, settings, created_at, last_activity_at, scope, create_token)
VALUES ('queued', %(config)s, %(settings)s, %(now)s, %(now)s, %(scope)s, %(create_token)s)
ON CONFLICT (create_token) DO NOTHING
RETURNING id;

-- name: select_active_scan
SELECT id FROM runs
 WHERE scope = %(scope)s AND status IN ('queued', 'running', 'paused')
 ORDER BY id LIMIT 1;

-- name: claim_scan_results
-- Marks the scan applied and says so only the first time: whoever finishes the run last
-- (or twice) changes nothing more. The caller holds the run row lock already.
UPDATE runs SET scan_applied_at = %(now)s
 WHERE id = %(run_id)s AND scope IS NOT NULL AND status = 'completed'
   AND scan_applied_at IS NULL
RETURNING scope;

-- name: select_unapplied_scans
-- Completed scans whose lifecycle nobody applied yet (their worker died first).
SELECT id FROM runs
 WHERE scope IS NOT NULL AND status = 'completed' AND scan_applied_at IS NULL
 ORDER BY id;

-- name: select_scan_roots
-- Each domain of the scope with its root task(s) in the run (depth 0 on its own host).
-- A root still pending or leased says nothing, so only finished ones come back. The
-- domain rows are locked (in host order) so an import at the same time cannot be lost.
SELECT domains.host, domains.active, domains.unreachable_streak,
       tasks.state, tasks.outcome, tasks.http_status,
       EXISTS (SELECT 1 FROM run_hosts
                WHERE run_hosts.run_id = tasks.run_id AND run_hosts.host = tasks.host
                  AND run_hosts.status = 'blocked'
                  -- ended as a dead host (robots.txt unavailable): no answer, not a "no"
                  AND run_hosts.ended_as IS NULL) AS site_blocked
  FROM domains
  JOIN tasks ON tasks.run_id = %(run_id)s AND tasks.host = domains.host AND tasks.depth = 0
 WHERE domains.scope = %(scope)s AND tasks.state IN ('completed', 'failed')
 ORDER BY domains.host, tasks.id
   FOR UPDATE OF domains;

-- name: update_domain_lifecycle
UPDATE domains
   SET active = %(active)s, stale = %(stale)s, unreachable_streak = %(streak)s,
       last_run_id = %(run_id)s, last_crawled_at = %(now)s, updated_at = %(now)s
 WHERE host = %(host)s;

-- name: upsert_schedule
INSERT INTO schedules (scope, cadence, next_run_at, settings, updated_at)
VALUES (%(scope)s, %(cadence)s, %(next_run_at)s, %(settings)s, %(now)s)
ON CONFLICT (scope) DO UPDATE
   SET cadence = excluded.cadence, next_run_at = excluded.next_run_at,
       settings = excluded.settings, updated_at = excluded.updated_at;

-- name: select_schedules
SELECT * FROM schedules ORDER BY scope;

-- name: advance_schedule
-- A scan that could not start (the scope was busy) leaves the last run id as it was.
UPDATE schedules
   SET next_run_at = %(next_run_at)s,
       last_run_id = COALESCE(%(last_run_id)s::bigint, last_run_id),
       updated_at = %(now)s
 WHERE scope = %(scope)s;

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
       COALESCE(r.ended_at, %(now)s)
  FROM runs AS r
  JOIN domains AS d ON d.scope = r.scope
 WHERE r.id = %(run_id)s AND r.scope IS NOT NULL
ON CONFLICT (host, run_id) DO UPDATE
   SET run_status = excluded.run_status, host_status = excluded.host_status,
       pages = excluded.pages, errors = excluded.errors,
       assets_found = excluded.assets_found, assets_stored = excluded.assets_stored,
       finished_at = excluded.finished_at;

-- name: select_domain_history
SELECT * FROM domain_scans WHERE host = %(host)s ORDER BY run_id DESC;

-- name: select_latest_domain_scans
-- Each domain's latest scan: one primary-key probe per domain.
SELECT s.* FROM domain_scans AS s
 WHERE (%(host)s::text IS NULL OR s.host = %(host)s)
   AND s.run_id = (SELECT MAX(o.run_id) FROM domain_scans AS o WHERE o.host = s.host)
 ORDER BY s.host;

-- name: delete_schedule
DELETE FROM schedules WHERE scope = %(scope)s;
