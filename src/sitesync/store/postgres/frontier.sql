-- Tasks of runs: admission, leases, reports, releases and attempt history (PostgreSQL).
-- Query names match the SQLite store's wherever both backends have the query.
-- Arrays of text go in binary (placeholders ending in b): see records.sql, "Batched writes".

-- name: move_counters
-- Every counter move of one transaction, one row per host, in host order (the arrays come
-- sorted): two transactions that move the same hosts lock their rows in the same order.
INSERT INTO run_host_counts AS c (run_id, host, tasks_total, pending, assigned, completed,
                                  failed, pages_fetched, bytes_fetched, retries, updated_at)
SELECT %(run_id)s, m.host, m.tasks_total, m.pending, m.assigned, m.completed, m.failed,
       m.pages_fetched, m.bytes_fetched, m.retries, %(now)s
  FROM unnest(%(hosts)b::text[], %(tasks_total)s::bigint[], %(pending)s::bigint[],
              %(assigned)s::bigint[], %(completed)s::bigint[], %(failed)s::bigint[],
              %(pages_fetched)s::bigint[], %(bytes_fetched)s::bigint[], %(retries)s::bigint[])
       WITH ORDINALITY AS m (host, tasks_total, pending, assigned, completed, failed,
                             pages_fetched, bytes_fetched, retries, position)
 ORDER BY m.position
ON CONFLICT (run_id, host) DO UPDATE
   SET tasks_total = c.tasks_total + excluded.tasks_total,
       pending = c.pending + excluded.pending,
       assigned = c.assigned + excluded.assigned,
       completed = c.completed + excluded.completed,
       failed = c.failed + excluded.failed,
       pages_fetched = c.pages_fetched + excluded.pages_fetched,
       bytes_fetched = c.bytes_fetched + excluded.bytes_fetched,
       retries = c.retries + excluded.retries,
       updated_at = excluded.updated_at;

-- name: acquire
-- The whole acquire in one statement. Tasks whose lease expired are candidates as they
-- are (re-leased directly, the expiry recorded in last_error; those not picked go back to
-- pending, so no janitor process is needed), with the eligible pending tasks, in lease
-- order, at most per_host of a host, passing over rows another transaction holds (SKIP
-- LOCKED: never waiting for them); the picked ones are leased and the host rows' counters
-- moved. Every sub-statement sees one snapshot and they change disjoint rows.
WITH mine AS (
    SELECT host FROM claims
     WHERE run_id = %(run_id)s AND worker_id = %(worker_id)s AND expires_at > %(now)s
), expired AS (
    SELECT id, host, priority FROM tasks
     WHERE run_id = %(run_id)s AND state = 'assigned' AND lease_expires_at <= %(now)s
       FOR UPDATE SKIP LOCKED
), waiting AS (
    SELECT id, host, priority FROM tasks
     WHERE run_id = %(run_id)s
       AND state = 'pending'
       AND next_eligible_at <= %(now)s
       AND host <> ALL(%(exclude_hosts)b::text[])
       AND (NOT %(claimed_only)s OR host IN (SELECT host FROM mine))
     ORDER BY priority DESC, id
     LIMIT %(scan)s
       FOR UPDATE SKIP LOCKED
), candidates AS (
    SELECT id, host, priority, true AS was_leased FROM expired
     WHERE host <> ALL(%(exclude_hosts)b::text[])
       AND (NOT %(claimed_only)s OR host IN (SELECT host FROM mine))
    UNION ALL
    SELECT id, host, priority, false FROM waiting
), picked AS (
    SELECT id, was_leased FROM (
        SELECT id, priority, was_leased,
               row_number() OVER (PARTITION BY host ORDER BY priority DESC, id) AS nth
          FROM candidates) AS ranked
     WHERE %(per_host)s::integer IS NULL OR nth <= %(per_host)s::integer
     ORDER BY priority DESC, id
     LIMIT %(limit)s
), reclaimed AS (
    UPDATE tasks AS t
       SET state = 'pending',
           lease_owner = NULL,
           lease_token = NULL,
           lease_expires_at = NULL,
           last_error = 'lease expired (held by ' || t.lease_owner || ')',
           updated_at = %(now)s
     WHERE t.id IN (SELECT id FROM expired) AND t.id NOT IN (SELECT id FROM picked)
    RETURNING t.host
), leased AS (
    UPDATE tasks AS t
       SET state = 'assigned',
           attempt_count = t.attempt_count + 1,
           last_error = CASE WHEN t.state = 'assigned'
                             THEN 'lease expired (held by ' || t.lease_owner || ')'
                             ELSE t.last_error END,
           lease_owner = %(worker_id)s,
           lease_token = %(token)s,
           lease_expires_at = %(expires_at)s,
           last_heartbeat = %(now)s,
           updated_at = %(now)s
      FROM picked
     WHERE t.id = picked.id
    RETURNING t.id, t.url, t.host, t.depth, t.attempt_count, picked.was_leased
), moved AS (
    -- + leased from pending, - back to pending; a re-leased expired lease moves nothing.
    SELECT host, SUM(leased) AS leased FROM (
        SELECT host, CASE WHEN was_leased THEN 0 ELSE 1 END AS leased FROM leased
        UNION ALL
        SELECT host, -1 FROM reclaimed) AS moves
     GROUP BY host
), counted AS (
    INSERT INTO run_host_counts AS c (run_id, host, pending, assigned, updated_at)
    SELECT %(run_id)s, host, -leased, leased, %(now)s FROM moved
     WHERE leased <> 0
     ORDER BY host
    ON CONFLICT (run_id, host) DO UPDATE
       SET pending = c.pending + excluded.pending,
           assigned = c.assigned + excluded.assigned,
           updated_at = excluded.updated_at
)
SELECT id, url, host, depth, attempt_count FROM leased;

-- name: complete_tasks
-- Every success of a report batch in one statement, each fenced on its lease.
UPDATE tasks AS t
   SET state = 'completed',
       http_status = r.http_status,
       last_error = r.error,  -- a final answer can still be a problem (404, too large)
       outcome = r.outcome,
       final_url = r.final_url,
       redirects = r.redirects::jsonb,
       lease_owner = NULL,
       lease_token = NULL,
       lease_expires_at = NULL,
       updated_at = %(now)s
  FROM unnest(%(task_ids)s::bigint[], %(tokens)s::bigint[], %(http_statuses)s::integer[],
              %(errors)b::text[], %(outcomes)b::text[], %(final_urls)b::text[],
              %(redirects)b::text[])
       AS r (task_id, token, http_status, error, outcome, final_url, redirects)
 WHERE t.id = r.task_id AND t.state = 'assigned' AND t.lease_token = r.token
RETURNING t.id, t.state;

-- name: fail_attempts
-- Every failure of a report batch in one statement: PENDING again where r.retry, else
-- FAILED: rules.retries decides, by the task table.
UPDATE tasks AS t
   SET state = CASE WHEN r.retry THEN 'pending'
                    ELSE 'failed' END,
       next_eligible_at = CASE WHEN r.retry
                               THEN r.retry_at ELSE t.next_eligible_at END,
       http_status = r.http_status,
       outcome = r.outcome,
       final_url = r.final_url,
       redirects = r.redirects::jsonb,
       last_error = r.error,
       lease_owner = NULL,
       lease_token = NULL,
       lease_expires_at = NULL,
       updated_at = %(now)s
  FROM unnest(%(task_ids)s::bigint[], %(tokens)s::bigint[], %(http_statuses)s::integer[],
              %(errors)b::text[], %(outcomes)b::text[], %(final_urls)b::text[],
              %(redirects)b::text[], %(retry)s::boolean[], %(retry_at)s::double precision[])
       AS r (task_id, token, http_status, error, outcome, final_url, redirects, retry,
             retry_at)
 WHERE t.id = r.task_id AND t.state = 'assigned' AND t.lease_token = r.token
RETURNING t.id, t.state;

-- name: release_leases
-- The attempts never happened: undo their count, and hold the tasks back if asked.
UPDATE tasks AS t
   SET state = 'pending',
       attempt_count = GREATEST(t.attempt_count - 1, 0),
       next_eligible_at = COALESCE(%(not_before)s::double precision, t.next_eligible_at),
       lease_owner = NULL,
       lease_token = NULL,
       lease_expires_at = NULL,
       updated_at = %(now)s
  FROM unnest(%(task_ids)s::bigint[], %(tokens)s::bigint[]) AS r (task_id, token)
 WHERE t.id = r.task_id AND t.state = 'assigned' AND t.lease_token = r.token
RETURNING t.host;

-- name: select_leased_by_token
-- A replayed acquire: the tasks an earlier attempt leased, if its commit did land.
SELECT id, url, host, depth, attempt_count, lease_expires_at FROM tasks
 WHERE run_id = %(run_id)s AND lease_token = %(token)s AND state = 'assigned'
 ORDER BY id;

-- name: release_worker
UPDATE tasks
   SET state = 'pending',
       attempt_count = GREATEST(attempt_count - 1, 0),
       lease_owner = NULL,
       lease_token = NULL,
       lease_expires_at = NULL,
       updated_at = %(now)s
 WHERE run_id = %(run_id)s AND state = 'assigned' AND lease_owner = %(worker_id)s
RETURNING host;

-- name: renew_leases
-- Passes over rows another transaction holds (SKIP LOCKED): that is the worker's own report
-- batch completing those tasks, or a release. Waiting for them, with the rows locked in
-- scan order while the report locks its own in batch order, deadlocked the two (seen in
-- a crawl's server log). A task skipped is being ended; if that rolls back, the next
-- heartbeat renews it, long before the lease runs out.
UPDATE tasks
   SET lease_expires_at = %(expires_at)s, last_heartbeat = %(now)s
 WHERE id IN (SELECT id FROM tasks
               WHERE run_id = %(run_id)s AND state = 'assigned'
                 AND lease_owner = %(worker_id)s
                 FOR UPDATE SKIP LOCKED);

-- name: next_eligible_at
-- Without reading the pending frontier: a task starts out eligible at 0, and only those put
-- off since (retries, Retry-After, a host's pace) are in tasks_put_off. When fewer pending
-- tasks are put off than the run has pending, one of them is eligible from 0; otherwise the
-- earliest put-off one is the answer. Costs a read of the put-off tasks only.
SELECT CASE WHEN COUNT(*) < (SELECT SUM(pending) FROM run_host_counts
                              WHERE run_id = %(run_id)s) THEN 0.0
            ELSE MIN(next_eligible_at) END AS next_at
  FROM tasks
 WHERE run_id = %(run_id)s AND state = 'pending' AND next_eligible_at > 0;

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
-- A batch's admission: how many were admitted per host, and in a row whose host is NULL
-- how many new URLs it chose. Known URLs are dropped by the probe, which reads the
-- committed row and never waits (ON CONFLICT would wait for any transaction updating that
-- row: another worker completing that very page), one index lookup per URL as a
-- LATERAL ... LIMIT 1 (as NOT EXISTS, a planner with stale statistics hashed every task of
-- the run for each batch). Within the batch a URL's first finder is kept (DISTINCT ON, by
-- position).
-- - No cap (room NULL): every new URL is chosen.
-- - max_pages: the first `room` new URLs found (by position); the caller holds that much
--   budget (budget.py). One that another transaction admits first is chosen but dropped by
--   ON CONFLICT, and costs no budget.
-- Admissions of one run go side by side either way, so the chosen URLs are inserted in
-- URL order: two transactions admitting the same new URLs wait for each other in one
-- order (no deadlock), and ON CONFLICT drops a URL another transaction admitted first.
WITH chosen AS (
    SELECT fresh.*
      FROM (SELECT DISTINCT ON (batch.url) batch.*
              FROM unnest(%(urls)b::text[], %(hosts)b::text[], %(depths)s::integer[],
                          %(priorities)s::integer[], %(found_from)s::bigint[])
                   WITH ORDINALITY AS batch (url, host, depth, priority, found_from, position)
              LEFT JOIN LATERAL (SELECT true AS known FROM tasks AS t
                                  WHERE t.run_id = %(run_id)s AND t.url = batch.url
                                  LIMIT 1) AS stored ON true
             WHERE stored.known IS NULL
             ORDER BY batch.url, batch.position) AS fresh
     ORDER BY CASE WHEN %(room)s::bigint IS NOT NULL THEN fresh.position END
     LIMIT %(room)s),
inserted AS (
    INSERT INTO tasks (run_id, url, host, state, depth, priority, discovered_at, updated_at,
                       found_from)
    SELECT %(run_id)s, chosen.url, chosen.host, 'pending', chosen.depth, chosen.priority,
           %(now)s, %(now)s, chosen.found_from
      FROM chosen
     ORDER BY chosen.url
    ON CONFLICT (run_id, url) DO NOTHING
    RETURNING host)
SELECT host, COUNT(*) AS admitted FROM inserted GROUP BY host
UNION ALL
SELECT NULL, COUNT(*) FROM chosen;

-- name: insert_attempts
-- Every accepted attempt of a report batch in one statement. A task's attempt numbers
-- never repeat; the upsert only guards a re-sent batch.
INSERT INTO attempts (task_id, attempt, started_at, ended_at, worker_id, outcome,
                      http_status, error, bytes, redirect_hops)
SELECT * FROM unnest(%(task_ids)s::bigint[], %(attempts)s::integer[],
                     %(started_at)s::double precision[], %(ended_at)s::double precision[],
                     %(worker_ids)b::text[], %(outcomes)b::text[], %(http_statuses)s::integer[],
                     %(errors)b::text[], %(bytes)s::bigint[], %(redirect_hops)s::bigint[])
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
