-- Pages that disappear, on SQLite (store/sqlite/gone.py, decisions in store/_gone.py).
-- The same query names as store/postgres/gone.sql: read them side by side.

-- name: select_earlier_completed_runs
-- Candidates for a run's previous scan, newest first (the comparison of configs is Python's).
SELECT * FROM runs
 WHERE id < :run_id AND status = 'completed' AND scope IS :scope
 ORDER BY id DESC
 LIMIT 50;

-- name: select_gone_candidates
-- Page records the previous scan saw and this run did not (not already gone), with the
-- host the previous scan saw them on and this run's task for the URL, if any.
SELECT r.id AS record_id, r.url, r.latest_version, pt.host,
       t.id AS task_id, t.http_status
  FROM record_seen AS s
  JOIN records AS r ON r.id = s.record_id
  LEFT JOIN tasks AS pt ON pt.id = s.task_id
  LEFT JOIN tasks AS t ON t.run_id = :run_id AND t.url = r.url
 WHERE s.run_id = :previous_run_id AND r.kind = 'page' AND r.latest_hash <> 'gone'
   AND NOT EXISTS (SELECT 1 FROM record_seen AS n
                    WHERE n.run_id = :run_id AND n.record_id = r.id)
 ORDER BY r.id;

-- name: select_task_ends
-- How the run's tasks ended, per host: which hosts had every page's links followed.
SELECT host, outcome, http_status, COUNT(*) AS tasks
  FROM tasks
 WHERE run_id = :run_id
 GROUP BY host, outcome, http_status;

-- name: mark_record_gone
-- The tombstone becomes the record's latest version, unless another version came first.
UPDATE records
   SET latest_version = :version, latest_hash = 'gone', latest_body_hash = NULL
 WHERE id = :record_id AND latest_version = :version - 1
RETURNING id;

-- name: insert_tombstone
INSERT INTO record_versions (record_id, version, run_id, content_hash, similarity, body_hash,
                             body_size, body_note, data, created_at)
VALUES (:record_id, :version, :run_id, 'gone', NULL, NULL, NULL, :note, :data, :now);

-- name: delete_last_fetch
-- A gone page's last fetch stands for nothing now: if it comes back, it is fetched in full.
DELETE FROM last_fetches WHERE url = :url;
