-- Runs and the domains their roots redirect to (PostgreSQL). Query names match the
-- SQLite store's wherever both backends have the query, so the files read side by side.

-- name: insert_run
-- No row back: a run with this call's create_token exists, made by the first attempt of
-- this transaction (its commit's acknowledgement was lost).
INSERT INTO runs (status, config, settings, created_at, last_activity_at, create_token)
VALUES (%(status)s, %(config)s, %(settings)s, %(now)s, %(now)s, %(create_token)s)
ON CONFLICT (create_token) DO NOTHING
RETURNING id;

-- name: select_run_by_create_token
SELECT id FROM runs WHERE create_token = %(create_token)s;

-- name: select_run
-- Reads of a run go through run_view: its counters are the sum of its host rows.
SELECT * FROM run_view WHERE id = %(run_id)s;

-- name: select_run_config
-- What a report needs of its run, without summing its host rows.
SELECT config FROM runs WHERE id = %(run_id)s;

-- name: select_runs
SELECT * FROM run_view ORDER BY id DESC LIMIT %(limit)s;

-- name: update_run_status
UPDATE runs
   SET status = %(status)s,
       status_reason = %(reason)s,
       started_at = COALESCE(started_at, CASE WHEN %(status)s::text = 'running' THEN %(now)s END),
       ended_at = CASE WHEN %(terminal)s THEN %(now)s ELSE NULL END,
       last_activity_at = CASE WHEN %(pause_or_resume)s THEN last_activity_at ELSE %(now)s END,
       heartbeat_at = CASE WHEN %(pause_or_resume)s THEN %(now)s ELSE heartbeat_at END
 WHERE id = %(run_id)s AND status = %(expected)s
RETURNING id;

-- name: complete_run_if_drained
-- Without a lock on anything but the run row: a task is only ever added before seeded_at
-- is set, or in the same transaction as the report that moves its still-assigned parent
-- out of 'assigned'. So every committed state of a seeded run with work left to do has a
-- host row with pending or assigned above zero, and this statement's one snapshot of the
-- committed host rows cannot see "drained" while a report that admits more is in flight
-- (its parent is still counted as assigned until the report and its links commit, together).
UPDATE runs
   SET status = 'completed', ended_at = %(now)s, last_activity_at = %(now)s, status_reason = NULL
 WHERE id = %(run_id)s AND status = 'running'
   AND seeded_at IS NOT NULL  -- sitemaps may still add work until seeding is done
   AND NOT EXISTS (SELECT 1 FROM run_host_counts AS h
                    WHERE h.run_id = runs.id AND (h.pending > 0 OR h.assigned > 0));

-- name: mark_seeded
UPDATE runs SET seeded_at = %(now)s WHERE id = %(run_id)s AND seeded_at IS NULL;

-- name: update_run_config
UPDATE runs SET config = %(config)s WHERE id = %(run_id)s
RETURNING id;

-- name: select_domain
SELECT * FROM domains WHERE host = %(host)s;

-- name: select_domains_of_hosts
SELECT * FROM domains WHERE host = ANY(%(hosts)b::text[]);

-- name: upsert_domain_redirect
-- Aliases accumulate in the row itself, in order of first sighting and never naming the
-- canonical host, so two workers recording the same host at once both keep theirs.
INSERT INTO domains (host, canonical_host, aliases, first_seen_at, updated_at)
VALUES (%(host)s, %(canonical_host)s, %(aliases)b::text[], %(now)s, %(now)s)
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
-- Taken by what changes the run itself (its status, its config), never by admissions,
-- acquire, reports or releases: those move only host rows (run_host_counts) and, under
-- max_pages, slots of the run's budget (run_admission_budget).
-- NO KEY UPDATE does not block the foreign-key checks of rows naming the run (records,
-- host rows, budget slots; tasks have no such key since 0011). The caller reads the run
-- afterwards with select_run, in a statement of its own: READ COMMITTED gives that
-- statement a snapshot taken after the lock was granted, so it sees every change made
-- under the lock before.
SELECT id FROM runs WHERE id = %(run_id)s FOR NO KEY UPDATE;

-- name: update_run_settings
-- Changed only from the version read: two changes at once do not both apply to one base.
UPDATE runs
   SET settings = %(settings)s, settings_version = settings_version + 1
 WHERE id = %(run_id)s AND settings_version = %(version)s;

-- name: insert_setting_change
INSERT INTO run_setting_changes (run_id, version, name, old_value, new_value, changed_at)
VALUES (%(run_id)s, %(version)s, %(name)s, %(old_value)s, %(new_value)s, %(now)s);

-- name: select_setting_changes
SELECT * FROM run_setting_changes WHERE run_id = %(run_id)s ORDER BY version, name;
