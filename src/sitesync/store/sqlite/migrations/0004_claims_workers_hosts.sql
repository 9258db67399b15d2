-- Workers that joined runs, so claims can be shared fairly among the live ones.
CREATE TABLE workers (
    worker_id      TEXT PRIMARY KEY,
    host           TEXT    NOT NULL,
    pid            INTEGER NOT NULL,
    run_id         INTEGER,
    started_at     REAL    NOT NULL,
    last_heartbeat REAL    NOT NULL,
    stopped_at     REAL
);

-- A worker's exclusive, expiring hold on one host of a run: only the holder fetches there.
CREATE TABLE claims (
    run_id     INTEGER NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
    host       TEXT    NOT NULL,
    worker_id  TEXT    NOT NULL,
    expires_at REAL    NOT NULL,
    claimed_at REAL    NOT NULL,
    PRIMARY KEY (run_id, host)
);
CREATE INDEX claims_by_worker ON claims (run_id, worker_id);

-- Politeness that survives a hand-over: Retry-After, robots.txt and its Crawl-delay.
CREATE TABLE host_state (
    host              TEXT PRIMARY KEY,
    paused_until      REAL NOT NULL DEFAULT 0,
    robots_origin     TEXT,
    robots_status     INTEGER,
    robots_body       TEXT,
    robots_expires_at REAL,
    updated_at        REAL NOT NULL
);

-- Per-host counters of a run, flushed during the crawl. A task is added to them exactly
-- once: the flush that counts it also marks it counted, in one transaction.
CREATE TABLE run_hosts (
    run_id        INTEGER NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
    host          TEXT    NOT NULL,
    pages_crawled INTEGER NOT NULL DEFAULT 0,
    errors        INTEGER NOT NULL DEFAULT 0,
    status        TEXT    NOT NULL DEFAULT 'active',  -- active, exhausted, blocked
    updated_at    REAL    NOT NULL,
    PRIMARY KEY (run_id, host)
);
ALTER TABLE tasks ADD COLUMN counted INTEGER NOT NULL DEFAULT 0;
CREATE INDEX tasks_uncounted ON tasks (run_id, host) WHERE counted = 0 AND state IN ('completed', 'failed');
CREATE INDEX tasks_pending_by_host ON tasks (run_id, host) WHERE state = 'pending';

ALTER TABLE domains ADD COLUMN last_run_id INTEGER;
ALTER TABLE domains ADD COLUMN last_crawled_at REAL;
