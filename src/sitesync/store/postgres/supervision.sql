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
-- The last sign of life: a heartbeat or the run's own activity, whichever is later (a run
-- resumed after a long pause is as fresh as its resume).
-- ``workers_left``: the run's last event is a worker leaving cleanly (its stopped_at is no
-- earlier than the run's last task transition or start, nor than the last sign of life of
-- any worker that did not leave cleanly): the run was left, not crashed, and is re-queued
-- without spending a crash retry. A clean leave (stop_worker) sets last_heartbeat to
-- stopped_at; a worker found gone (stop_gone_worker) keeps its older last_heartbeat.
-- A pause or a resume refreshes heartbeat_at, not last_activity_at: workers that left a
-- paused run, which is then resumed with nobody to crawl it, still left it.
SELECT runs.id, runs.crash_retries,
       COALESCE(departures.last_left >= GREATEST(COALESCE(runs.last_activity_at, 0),
                                               COALESCE(departures.last_alive, 0)),
                FALSE) AS workers_left
  FROM run_view AS runs  -- last_activity_at: the latest task transition too
  LEFT JOIN (SELECT run_id,
                    MAX(CASE WHEN stopped_at <= last_heartbeat THEN stopped_at END) AS last_left,
                    MAX(CASE WHEN stopped_at IS NULL OR stopped_at > last_heartbeat
                             THEN last_heartbeat END) AS last_alive
               FROM workers GROUP BY run_id) AS departures ON departures.run_id = runs.id
 WHERE runs.status = 'running'
   AND GREATEST(runs.heartbeat_at, runs.last_activity_at, runs.started_at, runs.created_at)
       < %(stale_before)s;

-- name: requeue_crashed
UPDATE runs
   SET status = 'queued', crash_retries = crash_retries + 1, supervisor_id = NULL,
       status_reason = %(reason)s, last_activity_at = %(now)s
 WHERE id = %(run_id)s AND status = 'running';

-- name: requeue_left
UPDATE runs
   SET status = 'queued', supervisor_id = NULL,
       status_reason = 'all workers left; re-queued', last_activity_at = %(now)s
 WHERE id = %(run_id)s AND status = 'running';

-- name: fail_crashed
UPDATE runs
   SET status = 'failed', ended_at = %(now)s, supervisor_id = NULL,
       status_reason = 'crashed and exceeded max retries', last_activity_at = %(now)s
 WHERE id = %(run_id)s AND status = 'running';

-- name: select_inactive_runs
SELECT * FROM run_view
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
