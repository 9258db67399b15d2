-- Tasks of runs: admission, leases, reports, releases and attempt history (PostgreSQL).
-- Query names match the SQLite store's wherever both backends have the query.

-- name: add_admitted
UPDATE runs
   SET tasks_total = tasks_total + %(admitted)s,
       pending = pending + %(admitted)s,
       last_activity_at = %(now)s
 WHERE id = %(run_id)s;

-- name: reclaim_expired
-- Runs inside the acquiring transaction: an expired lease goes back to PENDING
-- before anything is handed out, so no janitor process is needed.
UPDATE tasks
   SET state = 'pending',
       lease_owner = NULL,
       lease_token = NULL,
       lease_expires_at = NULL,
       last_error = 'lease expired (held by ' || lease_owner || ')',
       updated_at = %(now)s
 WHERE run_id = %(run_id)s AND state = 'assigned' AND lease_expires_at <= %(now)s;

-- name: acquire_candidates
-- Eligible tasks in lease order; the store keeps at most per_host of each host.
-- SKIP LOCKED: a row another transaction holds is passed over, never waited for.
SELECT id, host FROM tasks
 WHERE run_id = %(run_id)s
   AND state = 'pending'
   AND next_eligible_at <= %(now)s
   AND host <> ALL(%(exclude_hosts)s::text[])
   AND (NOT %(claimed_only)s
        OR host IN (SELECT host FROM claims
                     WHERE run_id = %(run_id)s AND worker_id = %(worker_id)s
                       AND expires_at > %(now)s))
 ORDER BY priority DESC, id
 LIMIT %(scan)s
   FOR UPDATE SKIP LOCKED;

-- name: lease_tasks
UPDATE tasks
   SET state = 'assigned',
       attempt_count = attempt_count + 1,
       lease_owner = %(worker_id)s,
       lease_token = %(token)s,
       lease_expires_at = %(expires_at)s,
       last_heartbeat = %(now)s,
       updated_at = %(now)s
 WHERE id = ANY(%(ids)s::bigint[]) AND state = 'pending'
RETURNING id, url, host, depth, attempt_count;

-- name: select_leased_by_token
-- A replayed acquire: the tasks an earlier attempt leased, if its commit did land.
SELECT id, url, host, depth, attempt_count, lease_expires_at FROM tasks
 WHERE run_id = %(run_id)s AND lease_token = %(token)s AND state = 'assigned'
 ORDER BY id;

-- name: move_counters
UPDATE runs
   SET pending = pending + %(pending)s,
       assigned = assigned + %(assigned)s,
       completed = completed + %(completed)s,
       failed = failed + %(failed)s,
       pages_fetched = pages_fetched + %(pages_fetched)s,
       bytes_fetched = bytes_fetched + %(bytes_fetched)s,
       retries = retries + %(retries)s,
       last_activity_at = %(now)s
 WHERE id = %(run_id)s;

-- name: mark_completed
UPDATE tasks
   SET state = 'completed',
       http_status = %(http_status)s,
       last_error = %(error)s,  -- a final answer can still be a problem (404, too large)
       outcome = %(outcome)s,
       final_url = %(final_url)s,
       redirects = %(redirects)s,
       lease_owner = NULL,
       lease_token = NULL,
       lease_expires_at = NULL,
       updated_at = %(now)s
 WHERE id = %(task_id)s AND state = 'assigned' AND lease_token = %(token)s;

-- name: mark_failed_attempt
-- PENDING again while attempts are left, FAILED once max_retries attempts were made
-- (or at once when the failure is not transient).
UPDATE tasks
   SET state = CASE WHEN attempt_count < %(max_retries)s AND NOT %(give_up)s THEN 'pending'
                    ELSE 'failed' END,
       next_eligible_at = CASE WHEN attempt_count < %(max_retries)s AND NOT %(give_up)s
                               THEN %(retry_at)s ELSE next_eligible_at END,
       http_status = %(http_status)s,
       outcome = %(outcome)s,
       final_url = %(final_url)s,
       redirects = %(redirects)s,
       last_error = %(error)s,
       lease_owner = NULL,
       lease_token = NULL,
       lease_expires_at = NULL,
       updated_at = %(now)s
 WHERE id = %(task_id)s AND state = 'assigned' AND lease_token = %(token)s
RETURNING state;

-- name: release_lease
-- The attempt never happened: undo its count, and hold the task back if asked.
UPDATE tasks
   SET state = 'pending',
       attempt_count = GREATEST(attempt_count - 1, 0),
       next_eligible_at = COALESCE(%(not_before)s::double precision, next_eligible_at),
       lease_owner = NULL,
       lease_token = NULL,
       lease_expires_at = NULL,
       updated_at = %(now)s
 WHERE id = %(task_id)s AND state = 'assigned' AND lease_token = %(token)s;

-- name: release_worker
UPDATE tasks
   SET state = 'pending',
       attempt_count = GREATEST(attempt_count - 1, 0),
       lease_owner = NULL,
       lease_token = NULL,
       lease_expires_at = NULL,
       updated_at = %(now)s
 WHERE run_id = %(run_id)s AND state = 'assigned' AND lease_owner = %(worker_id)s;

-- name: renew_leases
UPDATE tasks
   SET lease_expires_at = %(expires_at)s, last_heartbeat = %(now)s
 WHERE run_id = %(run_id)s AND state = 'assigned' AND lease_owner = %(worker_id)s;

-- name: next_eligible_at
SELECT MIN(next_eligible_at) AS next_at
  FROM tasks WHERE run_id = %(run_id)s AND state = 'pending';

-- name: select_task
-- With the URL of the page that first linked to it.
SELECT t.*, p.url AS found_on
  FROM tasks AS t
  LEFT JOIN tasks AS p ON p.id = t.found_from
 WHERE t.run_id = %(run_id)s AND t.url = %(url)s;

-- name: select_tasks
SELECT * FROM tasks
 WHERE run_id = %(run_id)s AND (%(state)s::text IS NULL OR state = %(state)s::text)
 ORDER BY id
 LIMIT %(limit)s;

-- name: count_by_state
SELECT state, COUNT(*) AS n FROM tasks WHERE run_id = %(run_id)s GROUP BY state;

-- name: insert_tasks
-- The dedup pre-flight and the max_pages cap in one statement. The caller holds the
-- run row (lock_run), and every insert into a run's tasks takes that lock first, so
-- NOT EXISTS sees every task of the run: duplicates (in the batch or already stored)
-- are dropped before LIMIT, and so never count against the cap. LIMIT NULL = no cap.
-- ON CONFLICT stays as the guarantee should a writer ever skip the run lock.
WITH inserted AS (
    INSERT INTO tasks (run_id, url, host, state, depth, priority, discovered_at, updated_at,
                       found_from)
    SELECT %(run_id)s, fresh.url, fresh.host, 'pending', fresh.depth, fresh.priority,
           %(now)s, %(now)s, fresh.found_from
      FROM (SELECT DISTINCT ON (batch.url) batch.*
              FROM unnest(%(urls)s::text[], %(hosts)s::text[], %(depths)s::integer[],
                          %(priorities)s::integer[], %(found_from)s::bigint[])
                   WITH ORDINALITY AS batch (url, host, depth, priority, found_from, position)
             WHERE NOT EXISTS (SELECT 1 FROM tasks AS t
                                WHERE t.run_id = %(run_id)s AND t.url = batch.url)
             ORDER BY batch.url, batch.position) AS fresh
     ORDER BY fresh.position
     LIMIT %(room)s
    ON CONFLICT (run_id, url) DO NOTHING
    RETURNING 1)
SELECT COUNT(*) AS admitted FROM inserted;

-- name: insert_attempts
-- Every accepted attempt of a report batch in one statement. A task's attempt numbers
-- never repeat; the upsert only guards a re-sent batch.
INSERT INTO attempts (task_id, attempt, started_at, ended_at, worker_id, outcome,
                      http_status, error, bytes, redirect_hops)
SELECT * FROM unnest(%(task_ids)s::bigint[], %(attempts)s::integer[],
                     %(started_at)s::double precision[], %(ended_at)s::double precision[],
                     %(worker_ids)s::text[], %(outcomes)s::text[], %(http_statuses)s::integer[],
                     %(errors)s::text[], %(bytes)s::bigint[], %(redirect_hops)s::bigint[])
ON CONFLICT (task_id, attempt) DO UPDATE
   SET started_at = excluded.started_at, ended_at = excluded.ended_at,
       worker_id = excluded.worker_id, outcome = excluded.outcome,
       http_status = excluded.http_status, error = excluded.error, bytes = excluded.bytes,
       redirect_hops = excluded.redirect_hops;

-- name: prune_attempts
-- Only tasks past the bound: a range delete on the primary key per task.
DELETE FROM attempts AS a
 USING unnest(%(task_ids)s::bigint[], %(oldest_dropped)s::integer[]) AS p (task_id, upto)
 WHERE a.task_id = p.task_id AND a.attempt <= p.upto;

-- name: select_attempts
SELECT * FROM attempts WHERE task_id = %(task_id)s ORDER BY attempt;
