-- Runs and the domains their roots redirect to (SQLite).

-- name: insert_run
INSERT INTO runs (status, config, settings, created_at, last_activity_at)
VALUES (:status, :config, :settings, :now, :now)
RETURNING id;

-- name: select_run
SELECT * FROM runs WHERE id = :run_id;

-- name: select_runs
SELECT * FROM runs ORDER BY id DESC LIMIT :limit;

-- name: update_run_status
UPDATE runs
   SET status = :status,
       status_reason = :reason,
       started_at = COALESCE(started_at, CASE WHEN :status = 'running' THEN :now END),
       ended_at = CASE WHEN :terminal THEN :now ELSE NULL END,
       last_activity_at = CASE WHEN :pause_or_resume THEN last_activity_at ELSE :now END,
       heartbeat_at = CASE WHEN :pause_or_resume THEN :now ELSE heartbeat_at END
 WHERE id = :run_id AND status = :expected;

-- name: complete_run_if_drained
UPDATE runs
   SET status = 'completed', ended_at = :now, last_activity_at = :now, status_reason = NULL
 WHERE id = :run_id AND status = 'running' AND pending = 0 AND assigned = 0
   AND seeded_at IS NOT NULL;  -- sitemaps may still add work until seeding is done

-- name: mark_seeded
UPDATE runs SET seeded_at = :now WHERE id = :run_id AND seeded_at IS NULL;

-- name: update_run_config
UPDATE runs SET config = :config WHERE id = :run_id;

-- name: select_domain
SELECT * FROM domains WHERE host = :host;

-- name: select_domains_of_hosts
SELECT * FROM domains WHERE host IN (SELECT value FROM json_each(:hosts));

-- name: upsert_domain_redirect
INSERT INTO domains (host, canonical_host, aliases, first_seen_at, updated_at)
VALUES (:host, :canonical_host, :aliases, :now, :now)
ON CONFLICT (host) DO UPDATE
   SET canonical_host = excluded.canonical_host,
       aliases = excluded.aliases,
       updated_at = excluded.updated_at;

-- name: update_run_settings
-- Changed only from the version read: two changes at once do not both apply to one base.
UPDATE runs
   SET settings = :settings, settings_version = settings_version + 1
 WHERE id = :run_id AND settings_version = :version;

-- name: insert_setting_change
INSERT INTO run_setting_changes (run_id, version, name, old_value, new_value, changed_at)
VALUES (:run_id, :version, :name, :old_value, :new_value, :now);

-- name: select_setting_changes
SELECT * FROM run_setting_changes WHERE run_id = :run_id ORDER BY version, name;
