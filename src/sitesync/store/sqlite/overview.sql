-- Read models for the dashboard, the JSON API, /metrics and `sitesync status` (SQLite).
-- Reads only; each is one statement.

-- name: select_active_runs
SELECT * FROM runs WHERE status IN ('queued', 'running', 'paused') ORDER BY id;

-- name: count_outcomes
-- Finished tasks by final outcome and HTTP status class ('none': no HTTP response): the
-- counts flushed into run_outcomes, plus the tasks finished since (tasks_uncounted), so the
-- read follows the work since the last flush, not the size of the run. A finished task
-- never changes again, and a flush counts and marks it in one transaction.
SELECT outcome, status_class, SUM(tasks) AS tasks
  FROM (SELECT outcome, status_class, tasks FROM run_outcomes WHERE run_id = :run_id
        UNION ALL
        SELECT COALESCE(outcome, 'unknown'),
               CASE WHEN http_status IS NULL OR http_status <= 0 THEN 'none'
                    ELSE CAST(http_status / 100 AS TEXT) || 'xx' END,
               COUNT(*)
          FROM tasks
         WHERE run_id = :run_id AND counted = 0 AND state IN ('completed', 'failed')
         GROUP BY 1, 2)
 GROUP BY 1, 2
 ORDER BY 3 DESC, 1, 2;

-- name: select_redirected
SELECT * FROM tasks
 WHERE run_id = :run_id AND redirects IS NOT NULL AND redirects <> '[]'
 ORDER BY id
 LIMIT :limit;

-- name: pending_by_host
-- From the hosts-with-work counts (run_host_counts_with_work): a row per host with work,
-- never a read of the pending tasks themselves, so the dashboard and `sitesync status`
-- cost the same at a thousand pending tasks as at a million.
SELECT host, pending
  FROM run_host_counts
 WHERE run_id = :run_id AND pending > 0
 ORDER BY pending DESC, host
 LIMIT :limit;

-- name: leases_by_worker
-- Served by the partial index tasks_assigned_by_expiry.
SELECT COALESCE(lease_owner, '') AS worker_id, COUNT(*) AS tasks,
       SUM(CASE WHEN lease_expires_at <= :now THEN 1 ELSE 0 END) AS expired,
       MIN(lease_expires_at) AS earliest_expiry
  FROM tasks
 WHERE run_id = :run_id AND state = 'assigned'
 GROUP BY 1
 ORDER BY 1;
