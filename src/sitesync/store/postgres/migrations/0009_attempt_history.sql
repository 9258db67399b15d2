-- Where a URL was found: the task of the page that first linked to it (NULL: a seed, or
-- a sitemap). The depth is the task's own.
ALTER TABLE tasks ADD COLUMN found_from bigint;

-- Every accepted attempt at a task, kept after the next attempt overwrote the task's own
-- outcome, status and error; at most max_attempts_kept per task (the oldest go first).
-- Written in the report transaction, one multi-row insert per batch.
CREATE TABLE attempts (
    task_id       bigint  NOT NULL REFERENCES tasks (id) ON DELETE CASCADE,
    attempt       integer NOT NULL,  -- the task's attempt_count when it ran
    started_at    double precision,
    ended_at      double precision NOT NULL,
    worker_id     text,
    outcome       text,
    http_status   integer,
    error         text,
    bytes         bigint  NOT NULL DEFAULT 0,
    redirect_hops bigint  NOT NULL DEFAULT 0,
    PRIMARY KEY (task_id, attempt)
);

-- The registry's memory across scans: what each scan did on each registered domain.
CREATE TABLE domain_scans (
    host          text    NOT NULL,
    run_id        bigint  NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
    scope         text,
    run_status    text    NOT NULL,  -- the scan's terminal status
    host_status   text,              -- active, exhausted, blocked; NULL: not crawled
    pages         bigint  NOT NULL DEFAULT 0,
    errors        bigint  NOT NULL DEFAULT 0,
    assets_found  bigint  NOT NULL DEFAULT 0,
    assets_stored bigint  NOT NULL DEFAULT 0,
    finished_at   double precision NOT NULL,
    PRIMARY KEY (host, run_id)
);
