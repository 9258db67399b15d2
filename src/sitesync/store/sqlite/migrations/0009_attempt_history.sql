-- Where a URL was found: the task of the page that first linked to it (NULL: a seed, or
-- a sitemap). The depth is the task's own.
ALTER TABLE tasks ADD COLUMN found_from INTEGER;

-- Every accepted attempt at a task, kept after the next attempt overwrote the task's own
-- outcome, status and error; at most max_attempts_kept per task (the oldest go first).
-- Written in the report transaction, one multi-row insert per batch.
CREATE TABLE attempts (
    task_id       INTEGER NOT NULL REFERENCES tasks (id) ON DELETE CASCADE,
    attempt       INTEGER NOT NULL,  -- the task's attempt_count when it ran
    started_at    REAL,
    ended_at      REAL    NOT NULL,
    worker_id     TEXT,
    outcome       TEXT,
    http_status   INTEGER,
    error         TEXT,
    bytes         INTEGER NOT NULL DEFAULT 0,
    redirect_hops INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (task_id, attempt)
) WITHOUT ROWID;

-- The registry's memory across scans: what each scan did on each registered domain.
CREATE TABLE domain_scans (
    host          TEXT    NOT NULL,
    run_id        INTEGER NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
    scope         TEXT,
    run_status    TEXT    NOT NULL,  -- the scan's terminal status
    host_status   TEXT,              -- active, exhausted, blocked; NULL: not crawled
    pages         INTEGER NOT NULL DEFAULT 0,
    errors        INTEGER NOT NULL DEFAULT 0,
    assets_found  INTEGER NOT NULL DEFAULT 0,
    assets_stored INTEGER NOT NULL DEFAULT 0,
    finished_at   REAL    NOT NULL,
    PRIMARY KEY (host, run_id)
);
