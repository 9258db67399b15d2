-- Hosts with work (issue 13): how many tasks of each host of a run are pending or leased,
-- so that the claim refresh reads one row per host instead of the pending frontier. The
-- run's own counters stay in its row (SQLite's writers are serialized by the file lock
-- anyway); these are kept by triggers, in the transaction of every task transition.
CREATE TABLE run_host_counts (
    run_id   INTEGER NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
    host     TEXT    NOT NULL,
    pending  INTEGER NOT NULL DEFAULT 0,
    assigned INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (run_id, host)
) WITHOUT ROWID;
CREATE INDEX run_host_counts_with_work ON run_host_counts (run_id, host) WHERE pending > 0;

CREATE TRIGGER tasks_count_insert AFTER INSERT ON tasks BEGIN
    INSERT INTO run_host_counts (run_id, host, pending, assigned)
    VALUES (NEW.run_id, NEW.host, NEW.state = 'pending', NEW.state = 'assigned')
    ON CONFLICT (run_id, host) DO UPDATE
       SET pending = pending + excluded.pending, assigned = assigned + excluded.assigned;
END;
CREATE TRIGGER tasks_count_state AFTER UPDATE OF state ON tasks
  WHEN OLD.state <> NEW.state BEGIN
    UPDATE run_host_counts
       SET pending = pending + (NEW.state = 'pending') - (OLD.state = 'pending'),
           assigned = assigned + (NEW.state = 'assigned') - (OLD.state = 'assigned')
     WHERE run_id = NEW.run_id AND host = NEW.host;
END;
CREATE TRIGGER tasks_count_delete AFTER DELETE ON tasks BEGIN
    UPDATE run_host_counts
       SET pending = pending - (OLD.state = 'pending'),
           assigned = assigned - (OLD.state = 'assigned')
     WHERE run_id = OLD.run_id AND host = OLD.host;
END;

INSERT INTO run_host_counts (run_id, host, pending, assigned)
SELECT run_id, host, SUM(state = 'pending'), SUM(state = 'assigned')
  FROM tasks
 GROUP BY run_id, host;
