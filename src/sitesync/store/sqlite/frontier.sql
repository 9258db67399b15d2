-- Tasks of runs: admission, leases, reports, releases and attempt history (SQLite).

-- name: insert_tasks
-- ON CONFLICT DO NOTHING is the dedup pre-flight: a URL already in the run, in any
-- state, is discarded without error and without touching the existing row. Numbered
-- parameters (run_id, url, host, depth, priority, now, found_from: _rows.task_rows) because
-- a batch binds thousands of rows, and a tuple binds in half the time of a mapping.
INSERT INTO tasks (run_id, url, host, state, depth, priority, discovered_at, updated_at,
                   found_from)
VALUES (?1, ?2, ?3, 'pending', ?4, ?5, ?6, ?6, ?7)
ON CONFLICT (run_id, url) DO NOTHING;

-- name: last_task_id
-- Where this transaction's admissions start: task ids are rowids, so the tasks inserted
-- after this (under the write lock) are exactly those with a greater id.
SELECT COALESCE(MAX(id), 0) FROM tasks;

-- name: count_admitted_by_host
-- The hosts-with-work counts of the tasks just admitted, one upsert per host for the whole
-- batch (a trigger per inserted row cost as much as the inserts themselves). The rows after
-- last_task_id are all this admission's, so the id range alone picks them; NOT INDEXED
-- keeps it a rowid range (the planner otherwise walks every task by the URL index).
INSERT INTO run_host_counts (run_id, host, pending, assigned)
SELECT run_id, host, COUNT(*), 0
  FROM tasks NOT INDEXED
 WHERE id > :after
 GROUP BY run_id, host
ON CONFLICT (run_id, host) DO UPDATE SET pending = pending + excluded.pending;

-- name: add_admitted
UPDATE runs
   SET tasks_total = tasks_total + :admitted,
       pending = pending + :admitted,
       last_activity_at = :now
 WHERE id = :run_id;

-- name: reclaim_expired
-- Runs inside the acquiring transaction: an expired lease goes back to PENDING
-- before anything is handed out, so no janitor process is needed.
UPDATE tasks
   SET state = 'pending',
       lease_owner = NULL,
       lease_token = NULL,
       lease_expires_at = NULL,
       last_error = 'lease expired (held by ' || lease_owner || ')',
       updated_at = :now
 WHERE run_id = :run_id AND state = 'assigned' AND lease_expires_at <= :now;

-- name: acquire_candidates
-- Eligible tasks in lease order; the store keeps at most per_host of each host.
SELECT id, host FROM tasks
 WHERE run_id = :run_id
   AND state = 'pending'
   AND next_eligible_at <= :now
   AND host NOT IN (SELECT value FROM json_each(:exclude_hosts))
   AND (NOT :claimed_only
        OR host IN (SELECT host FROM claims
                     WHERE run_id = :run_id AND worker_id = :worker_id
                       AND expires_at > :now))
 ORDER BY priority DESC, id
 LIMIT :scan;

-- name: lease_tasks
UPDATE tasks
   SET state = 'assigned',
       attempt_count = attempt_count + 1,
       lease_owner = :worker_id,
       lease_token = :token,
       lease_expires_at = :expires_at,
       last_heartbeat = :now,
       updated_at = :now
 WHERE id IN (SELECT value FROM json_each(:ids)) AND state = 'pending'
RETURNING id, url, host, depth, attempt_count;

-- name: move_counters
-- A transaction's counter moves, on the run's row (PostgreSQL keeps them in host rows).
UPDATE runs
   SET pending = pending + :pending,
       assigned = assigned + :assigned,
       completed = completed + :completed,
       failed = failed + :failed,
       pages_fetched = pages_fetched + :pages_fetched,
       bytes_fetched = bytes_fetched + :bytes_fetched,
       retries = retries + :retries,
       last_activity_at = :now
 WHERE id = :run_id;

-- name: complete_tasks
-- One report at a time, each fenced on its lease (PostgreSQL's takes the batch's arrays).
UPDATE tasks
   SET state = 'completed',
       http_status = :http_status,
       last_error = :error,  -- a final answer can still be a problem (404, too large)
       outcome = :outcome,
       final_url = :final_url,
       redirects = :redirects,
       lease_owner = NULL,
       lease_token = NULL,
       lease_expires_at = NULL,
       updated_at = :now
 WHERE id = :task_id AND state = 'assigned' AND lease_token = :token;

-- name: fail_attempts
-- One report at a time (PostgreSQL's takes the batch's arrays).
-- PENDING again when :retry, else FAILED: rules.retries decides, by the task table.
UPDATE tasks
   SET state = CASE WHEN :retry THEN 'pending'
                    ELSE 'failed' END,
       next_eligible_at = CASE WHEN :retry THEN :retry_at
                               ELSE next_eligible_at END,
       http_status = :http_status,
       outcome = :outcome,
       final_url = :final_url,
       redirects = :redirects,
       last_error = :error,
       lease_owner = NULL,
       lease_token = NULL,
       lease_expires_at = NULL,
       updated_at = :now
 WHERE id = :task_id AND state = 'assigned' AND lease_token = :token
RETURNING state;

-- name: release_leases
-- One lease at a time (PostgreSQL's takes the batch's arrays).
-- The attempt never happened: undo its count, and hold the task back if asked.
UPDATE tasks
   SET state = 'pending',
       attempt_count = MAX(attempt_count - 1, 0),
       next_eligible_at = COALESCE(:not_before, next_eligible_at),
       lease_owner = NULL,
       lease_token = NULL,
       lease_expires_at = NULL,
       updated_at = :now
 WHERE id = :task_id AND state = 'assigned' AND lease_token = :token;

-- name: release_worker
UPDATE tasks
   SET state = 'pending',
       attempt_count = MAX(attempt_count - 1, 0),
       lease_owner = NULL,
       lease_token = NULL,
       lease_expires_at = NULL,
       updated_at = :now
 WHERE run_id = :run_id AND state = 'assigned' AND lease_owner = :worker_id;

-- name: renew_leases
UPDATE tasks
   SET lease_expires_at = :expires_at, last_heartbeat = :now
 WHERE run_id = :run_id AND state = 'assigned' AND lease_owner = :worker_id;

-- name: next_eligible_at
-- Without reading the pending frontier: a task starts out eligible at 0, and only those put
-- off since (retries, Retry-After, a host's pace) are in tasks_put_off. When fewer pending
-- tasks are put off than the run has pending, one of them is eligible from 0; otherwise the
-- earliest put-off one is the answer. Costs a read of the put-off tasks only.
SELECT CASE WHEN COUNT(*) < (SELECT pending FROM runs WHERE id = :run_id) THEN 0.0
            ELSE MIN(next_eligible_at) END
  FROM tasks
 WHERE run_id = :run_id AND state = 'pending' AND next_eligible_at > 0;

-- name: select_task
-- With the URL of the page that first linked to it.
SELECT t.*, p.url AS found_on
  FROM tasks AS t
  LEFT JOIN tasks AS p ON p.id = t.found_from
 WHERE t.run_id = :run_id AND t.url = :url;

-- name: select_tasks
SELECT * FROM tasks
 WHERE run_id = :run_id AND (:state IS NULL OR state = :state)
 ORDER BY id
 LIMIT :limit;

-- name: count_by_state
SELECT state, COUNT(*) AS n FROM tasks WHERE run_id = :run_id GROUP BY state;

-- name: insert_attempts
-- One row per accepted attempt (executemany: one call per report batch). A task's
-- attempt numbers never repeat; REPLACE only guards a re-sent batch.
INSERT OR REPLACE INTO attempts (task_id, attempt, started_at, ended_at, worker_id, outcome,
                                 http_status, error, bytes, redirect_hops)
VALUES (:task_id, :attempt, :started_at, :ended_at, :worker_id, :outcome, :http_status,
        :error, :bytes, :redirect_hops);

-- name: prune_attempts
-- Only for a task past the bound: a range delete on the primary key.
DELETE FROM attempts WHERE task_id = :task_id AND attempt <= :oldest_dropped;

-- name: select_attempts
SELECT * FROM attempts WHERE task_id = :task_id ORDER BY attempt;
