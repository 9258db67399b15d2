-- Workers, host claims, politeness state and per-host counters (PostgreSQL).

-- name: upsert_worker
INSERT INTO workers (worker_id, host, pid, run_id, started_at, last_heartbeat, boot_id,
                     proc_start)
VALUES (%(worker_id)s, %(host)s, %(pid)s, %(run_id)s, %(now)s, %(now)s, %(boot_id)s, %(proc_start)s)
ON CONFLICT (worker_id) DO UPDATE
   SET run_id = excluded.run_id, last_heartbeat = excluded.last_heartbeat, stopped_at = NULL,
       host = excluded.host, pid = excluded.pid, boot_id = excluded.boot_id,
       proc_start = excluded.proc_start;

-- name: heartbeat_worker
UPDATE workers SET last_heartbeat = %(now)s WHERE worker_id = %(worker_id)s;

-- name: stop_worker
UPDATE workers SET stopped_at = %(now)s, last_heartbeat = %(now)s WHERE worker_id = %(worker_id)s;

-- name: stop_gone_worker
-- Fenced on the whole proof: a row that re-registered, or says anything else, is not ours
-- to stop. NULL proofs (another OS, an older sitesync) never match.
UPDATE workers SET stopped_at = %(now)s
 WHERE worker_id = %(worker_id)s AND stopped_at IS NULL
   AND host = %(host)s AND pid = %(pid)s
   AND boot_id = %(boot_id)s AND proc_start = %(proc_start)s;

-- name: end_worker_claims
-- Expired now: claim_free_hosts hands these hosts to whoever asks next.
UPDATE claims SET expires_at = %(now)s
 WHERE run_id = %(run_id)s AND worker_id = %(worker_id)s AND expires_at > %(now)s;

-- name: end_worker_leases
-- Expired now: the next acquire returns them to pending (its counters move there), as it
-- does for any lease that ran out; the attempt counts, since it may have reached a server.
UPDATE tasks SET lease_expires_at = %(now)s
 WHERE run_id = %(run_id)s AND state = 'assigned' AND lease_owner = %(worker_id)s;

-- name: select_workers
SELECT * FROM workers WHERE run_id = %(run_id)s ORDER BY started_at;

-- name: count_live_workers
SELECT COUNT(*) AS n FROM workers
 WHERE run_id = %(run_id)s AND stopped_at IS NULL AND last_heartbeat > %(alive_after)s;

-- name: renew_claims
-- Only claims still held are renewed: an expired one may already be someone else's.
UPDATE claims SET expires_at = %(expires_at)s
 WHERE run_id = %(run_id)s AND worker_id = %(worker_id)s AND expires_at > %(now)s;

-- name: drop_finished_claims
-- A host with nothing pending or leased needs no holder (its counter row says so).
DELETE FROM claims
 WHERE run_id = %(run_id)s AND worker_id = %(worker_id)s
   AND host <> ALL(%(busy)b::text[])  -- a request of the worker's own is under way there
   AND NOT EXISTS (SELECT 1 FROM run_host_counts AS c
                    WHERE c.run_id = claims.run_id AND c.host = claims.host
                      AND (c.pending > 0 OR c.assigned > 0));

-- name: count_hosts_with_work
-- From the host rows (run_host_counts_with_work): the cost follows hosts, not the frontier.
SELECT COUNT(*) AS n FROM run_host_counts WHERE run_id = %(run_id)s AND pending > 0;

-- name: drop_surplus_claims
-- Over its fair share, a worker lets go of hosts where it has nothing in flight.
DELETE FROM claims
 WHERE (run_id, host) IN (
       SELECT claims.run_id, claims.host FROM claims
        WHERE claims.run_id = %(run_id)s AND claims.worker_id = %(worker_id)s
          AND claims.host <> ALL(%(busy)b::text[])
          AND NOT EXISTS (SELECT 1 FROM tasks
                           WHERE tasks.run_id = claims.run_id AND tasks.host = claims.host
                             AND tasks.state = 'assigned')
        ORDER BY claims.claimed_at DESC
        LIMIT %(surplus)s);

-- name: claim_free_hosts
-- Hosts with pending work that nobody holds (or whose holder's claim expired), oldest
-- work first. A claim taken over from an expired holder keeps its row, new owner.
INSERT INTO claims (run_id, host, worker_id, expires_at, claimed_at)
SELECT %(run_id)s, host, %(worker_id)s, %(expires_at)s, %(now)s
  FROM (SELECT c.host,
               -- one probe of tasks_pending_by_host (run_id, host, id) per host
               (SELECT MIN(t.id) FROM tasks AS t
                 WHERE t.run_id = c.run_id AND t.host = c.host AND t.state = 'pending')
                 AS first_id
          FROM run_host_counts AS c
         WHERE c.run_id = %(run_id)s AND c.pending > 0
           AND c.host NOT IN (SELECT host FROM claims
                               WHERE run_id = %(run_id)s AND expires_at > %(now)s)
         ORDER BY first_id
         LIMIT %(limit)s) AS free_hosts
ON CONFLICT (run_id, host) DO UPDATE
   SET worker_id = excluded.worker_id,
       expires_at = excluded.expires_at,
       claimed_at = excluded.claimed_at
 WHERE claims.expires_at <= %(now)s;

-- name: select_my_claims
SELECT * FROM claims
 WHERE run_id = %(run_id)s AND worker_id = %(worker_id)s AND expires_at > %(now)s
 ORDER BY claimed_at, host;

-- name: select_claims
SELECT * FROM claims WHERE run_id = %(run_id)s ORDER BY host;

-- name: release_claims
DELETE FROM claims WHERE run_id = %(run_id)s AND worker_id = %(worker_id)s;

-- name: select_host_state
SELECT * FROM host_state WHERE host = %(host)s;

-- name: select_host_states
SELECT * FROM host_state WHERE host = ANY(%(hosts)b::text[]);

-- name: save_host_pause
INSERT INTO host_state (host, paused_until, updated_at) VALUES (%(host)s, %(until)s, %(now)s)
ON CONFLICT (host) DO UPDATE
   SET paused_until = GREATEST(host_state.paused_until, excluded.paused_until),
       updated_at = excluded.updated_at;

-- name: save_host_pace
INSERT INTO host_state (host, pace_delay, pace_concurrency, pace_reason, pace_since, updated_at)
VALUES (%(host)s, %(delay)s, %(concurrency)s, %(reason)s, %(since)s, %(now)s)
ON CONFLICT (host) DO UPDATE
   SET pace_delay = excluded.pace_delay,
       pace_concurrency = excluded.pace_concurrency,
       pace_reason = excluded.pace_reason,
       pace_since = excluded.pace_since,
       updated_at = excluded.updated_at;

-- name: save_host_robots
INSERT INTO host_state (host, robots_origin, robots_status, robots_body, robots_expires_at,
                        updated_at)
VALUES (%(host)s, %(origin)s, %(status)s, %(body)s, %(expires_at)s, %(now)s)
ON CONFLICT (host) DO UPDATE
   SET robots_origin = excluded.robots_origin,
       robots_status = excluded.robots_status,
       robots_body = excluded.robots_body,
       robots_expires_at = excluded.robots_expires_at,
       updated_at = excluded.updated_at;

-- name: count_uncounted
-- Finished tasks not yet in run_hosts, per host, marked counted by the same statement:
-- a task a report finishes meanwhile (reports do not wait for this flush) is either
-- counted and marked here, or left for the next flush, never marked uncounted. The same
-- statement adds them to the run's outcome counts (count_outcomes).
WITH marked AS (
    UPDATE tasks SET counted = true
     WHERE run_id = %(run_id)s AND NOT counted AND state IN ('completed', 'failed')
    RETURNING host, state, outcome, http_status
), outcomes AS (
    INSERT INTO run_outcomes (run_id, outcome, status_class, tasks)
    SELECT %(run_id)s,
           COALESCE(outcome, 'unknown'),
           CASE WHEN http_status IS NULL OR http_status <= 0 THEN 'none'
                ELSE (http_status / 100)::text || 'xx' END,
           COUNT(*)
      FROM marked
     GROUP BY 2, 3
     ORDER BY 2, 3
    ON CONFLICT (run_id, outcome, status_class)
    DO UPDATE SET tasks = run_outcomes.tasks + excluded.tasks)
SELECT host,
       COUNT(*) FILTER (WHERE state = 'completed') AS pages,
       COUNT(*) FILTER (WHERE state = 'failed') AS errors
  FROM marked
 GROUP BY host
 ORDER BY host;

-- name: add_host_counts
-- One statement for every host of a flush (a round trip each would be one per host), in
-- host order, as every writer of host rows takes them.
INSERT INTO run_hosts (run_id, host, pages_crawled, errors, updated_at)
SELECT %(run_id)s, h, p, e, %(now)s
  FROM unnest(%(hosts)b::text[], %(pages)s::bigint[], %(errors)s::bigint[]) AS c(h, p, e)
 ORDER BY h
ON CONFLICT (run_id, host) DO UPDATE
   SET pages_crawled = run_hosts.pages_crawled + excluded.pages_crawled,
       errors = run_hosts.errors + excluded.errors,
       updated_at = excluded.updated_at;

-- name: touch_domains
INSERT INTO domains (host, first_seen_at, updated_at, last_run_id, last_crawled_at)
SELECT h, %(now)s, %(now)s, %(run_id)s, %(now)s
  FROM unnest(%(hosts)b::text[]) AS d(h)
 ORDER BY h
ON CONFLICT (host) DO UPDATE
   SET last_run_id = excluded.last_run_id,
       last_crawled_at = excluded.last_crawled_at,
       updated_at = excluded.updated_at;

-- name: mark_exhausted
-- Terminal statuses are never overwritten: only 'active' hosts move.
UPDATE run_hosts SET status = 'exhausted', updated_at = %(now)s
 WHERE run_id = %(run_id)s AND status = 'active'
   -- Two probes, not one "state IN (...)": each is answered by a partial index, where
   -- the combined one would walk every finished task of the run.
   AND NOT EXISTS (SELECT 1 FROM tasks
                    WHERE tasks.run_id = run_hosts.run_id AND tasks.host = run_hosts.host
                      AND tasks.state = 'pending')
   AND NOT EXISTS (SELECT 1 FROM tasks
                    WHERE tasks.run_id = run_hosts.run_id AND tasks.host = run_hosts.host
                      AND tasks.state = 'assigned');

-- name: set_host_status
INSERT INTO run_hosts (run_id, host, status, updated_at)
VALUES (%(run_id)s, %(host)s, %(status)s, %(now)s)
ON CONFLICT (run_id, host) DO UPDATE
   SET status = CASE WHEN run_hosts.status IN ('exhausted', 'blocked', 'unreachable') THEN run_hosts.status
                     ELSE excluded.status END,
       updated_at = excluded.updated_at;

-- name: select_run_host
SELECT * FROM run_hosts WHERE run_id = %(run_id)s AND host = %(host)s;

-- name: save_host_failures
INSERT INTO run_hosts (run_id, host, failures, updated_at)
VALUES (%(run_id)s, %(host)s, %(failures)s, %(now)s)
ON CONFLICT (run_id, host) DO UPDATE
   SET failures = excluded.failures, updated_at = excluded.updated_at;

-- name: lock_host_counts
-- The host's counter row, made if need be and locked until commit (end_host); no row for
-- a run that does not exist.
INSERT INTO run_host_counts AS c (run_id, host, updated_at)
SELECT id, %(host)s, %(now)s FROM runs WHERE id = %(run_id)s
ON CONFLICT (run_id, host) DO UPDATE SET updated_at = excluded.updated_at;

-- name: mark_host_ended
-- The host's terminal status, unless it already had one; ended_as/ended_reason are what
-- its tasks admitted later in the run end with.
INSERT INTO run_hosts (run_id, host, status, ended_as, ended_reason, updated_at)
VALUES (%(run_id)s, %(host)s, %(status)s, %(outcome)s, %(reason)s, %(now)s)
ON CONFLICT (run_id, host) DO UPDATE
   SET status = CASE WHEN run_hosts.status = 'active' THEN excluded.status
                     ELSE run_hosts.status END,
       ended_as = excluded.ended_as,
       ended_reason = excluded.ended_reason,
       updated_at = excluded.updated_at;

-- name: end_host_tasks
-- Every task of the host still waiting, in one statement (tasks_pending_by_host).
UPDATE tasks
   SET state = 'failed', outcome = %(outcome)s, last_error = %(reason)s, updated_at = %(now)s
 WHERE run_id = %(run_id)s AND host = %(host)s AND state = 'pending';

-- name: select_ended_hosts
-- Which of these hosts had their tasks ended in the run (primary-key probes).
SELECT host, ended_as, ended_reason FROM run_hosts
 WHERE run_id = %(run_id)s AND host = ANY(%(hosts)b::text[]) AND ended_as IS NOT NULL;

-- name: select_run_hosts
SELECT * FROM run_hosts WHERE run_id = %(run_id)s ORDER BY host;
