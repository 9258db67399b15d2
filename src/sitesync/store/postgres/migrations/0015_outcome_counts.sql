-- A run's finished tasks by outcome and HTTP status class, as the flush of its host
-- counters counts them (the tasks marked counted): what the dashboard's outcome table reads
-- instead of every finished task of the run. Filled from the tasks already counted.
CREATE TABLE run_outcomes (
    run_id       bigint  NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
    outcome      text    NOT NULL,
    status_class text    NOT NULL,  -- '2xx' ... '5xx', 'none': no HTTP response
    tasks        bigint  NOT NULL DEFAULT 0,
    PRIMARY KEY (run_id, outcome, status_class)
);

INSERT INTO run_outcomes (run_id, outcome, status_class, tasks)
SELECT run_id,
       COALESCE(outcome, 'unknown'),
       CASE WHEN http_status IS NULL OR http_status <= 0 THEN 'none'
            ELSE (http_status / 100)::text || 'xx' END,
       COUNT(*)
  FROM tasks
 WHERE counted AND state IN ('completed', 'failed')
 GROUP BY 1, 2, 3;
