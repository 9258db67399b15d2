-- Heartbeats, the watchdog and the operator's clean-up tools (PostgreSQL).

-- name: heartbeat_run
UPDATE runs SET heartbeat_at = %(now)s WHERE id = %(run_id)s;

-- name: start_queued_run
UPDATE runs
   SET status = 'running', supervisor_id = %(supervisor_id)s, heartbeat_at = %(now)s,
       started_at = COALESCE(started_at, %(now)s), ended_at = NULL,
       last_activity_at = %(now)s, status_reason = NULL
 WHERE id = %(run_id)s AND status = 'queued';

-- name: select_stale_running
-- The last sign of life: a heartbeat, or failing that the run's own activity.
SELECT id, crash_retries FROM runs
 WHERE status = 'running'
   AND COALESCE(heartbeat_at, last_activity_at, started_at, created_at) < %(stale_before)s;

-- name: requeue_crashed
UPDATE runs
   SET status = 'queued', crash_retries = crash_retries + 1, supervisor_id = NULL,
       status_reason = %(reason)s, last_activity_at = %(now)s
 WHERE id = %(run_id)s AND status = 'running';

-- name: fail_crashed
UPDATE runs
   SET status = 'failed', ended_at = %(now)s, supervisor_id = NULL,
       status_reason = 'crashed and exceeded max retries', last_activity_at = %(now)s
 WHERE id = %(run_id)s AND status = 'running';

-- name: select_inactive_runs
SELECT * FROM runs
 WHERE status IN ('queued', 'running', 'paused')
   AND GREATEST(COALESCE(last_activity_at, 0), COALESCE(heartbeat_at, 0), created_at) < %(idle_before)s
 ORDER BY id;

-- name: select_claims_to_release
SELECT * FROM claims
 WHERE (NOT %(expired_only)s OR expires_at <= %(now)s)
   AND (%(worker_id)s::text IS NULL OR worker_id = %(worker_id)s)
 ORDER BY run_id, host;

-- name: delete_claim
-- Only the row as it was seen: a claim renewed or taken over meanwhile stays.
DELETE FROM claims
 WHERE run_id = %(run_id)s AND host = %(host)s AND worker_id = %(worker_id)s
   AND expires_at = %(expires_at)s;
