-- A run's finished tasks by outcome and HTTP status class, as the flush of its host
-- counters counts them (the tasks marked counted): what the dashboard's outcome table reads
-- instead of every finished task of the run. Filled from the tasks already counted.
CREATE TABLE run_outcomes (
    run_id       INTEGER NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
    outcome      TEXT    NOT NULL,
    status_class TEXT    NOT NULL,  -- '2xx' ... '5xx', 'none': no HTTP response
    tasks        INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (run_id, outcome, status_class)
) WITHOUT ROWID;

INSERT INTO run_outcomes (run_id, outcome, status_class, tasks)
SELECT run_id,
       COALESCE(outcome, 'unknown'),
       CASE WHEN http_status IS NULL OR http_status <= 0 THEN 'none'
            ELSE CAST(http_status / 100 AS TEXT) || 'xx' END,
       COUNT(*)
  FROM tasks
 WHERE counted = 1 AND state IN ('completed', 'failed')
 GROUP BY 1, 2, 3;
