-- Runs and the domains their roots redirect to (PostgreSQL). Query names match the
-- SQLite store's wherever both backends have the query, so the files read side by side.

-- name: insert_run
INSERT INTO runs (status, config, created_at, last_activity_at)
VALUES (%(status)s, %(config)s, %(now)s, %(now)s)
RETURNING *;

-- name: select_run
SELECT * FROM runs WHERE id = %(run_id)s;

-- name: select_runs
SELECT * FROM runs ORDER BY id DESC LIMIT %(limit)s;

-- name: update_run_status
UPDATE runs
   SET status = %(status)s,
       status_reason = %(reason)s,
       started_at = COALESCE(started_at, CASE WHEN %(status)s::text = 'running' THEN %(now)s END),
       ended_at = CASE WHEN %(terminal)s THEN %(now)s ELSE NULL END,
       last_activity_at = %(now)s
 WHERE id = %(run_id)s AND status = %(expected)s
RETURNING *;

-- name: complete_run_if_drained
UPDATE runs
   SET status = 'completed', ended_at = %(now)s, last_activity_at = %(now)s, status_reason = NULL
 WHERE id = %(run_id)s AND status = 'running' AND pending = 0 AND assigned = 0
   AND seeded_at IS NOT NULL;  -- sitemaps may still add work until seeding is done

-- name: mark_seeded
UPDATE runs SET seeded_at = %(now)s WHERE id = %(run_id)s AND seeded_at IS NULL;

-- name: update_run_config
UPDATE runs SET config = %(config)s WHERE id = %(run_id)s
RETURNING *;

-- name: select_domain
SELECT * FROM domains WHERE host = %(host)s;

-- name: upsert_domain_redirect
-- Aliases accumulate in the row itself, in order of first sighting and never naming the
-- canonical host, so two workers recording the same host at once both keep theirs.
INSERT INTO domains (host, canonical_host, aliases, first_seen_at, updated_at)
VALUES (%(host)s, %(canonical_host)s, %(aliases)s::text[], %(now)s, %(now)s)
ON CONFLICT (host) DO UPDATE
   SET canonical_host = excluded.canonical_host,
       aliases = ARRAY(SELECT alias
                         FROM unnest(domains.aliases || excluded.aliases)
                              WITH ORDINALITY AS seen (alias, position)
                        WHERE alias <> excluded.canonical_host
                        GROUP BY alias
                        ORDER BY MIN(position)),
       updated_at = excluded.updated_at
RETURNING *;

-- name: lock_run
-- Every transaction that moves counters or admits tasks takes the run row first, so
-- writers of one run queue here: the max_pages check and the counter updates see the
-- latest committed row, and task rows are only ever locked after the run row (one lock
-- order, no deadlocks). NO KEY UPDATE is the lock the counter UPDATE takes anyway; it
-- does not block the foreign-key checks of task inserts.
SELECT * FROM runs WHERE id = %(run_id)s FOR NO KEY UPDATE;
