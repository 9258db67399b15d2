-- Workers that joined runs, so claims can be shared fairly among the live ones.
CREATE TABLE workers (
    worker_id      text PRIMARY KEY,
    host           text    NOT NULL,
    pid            integer NOT NULL,
    run_id         bigint,
    started_at     double precision    NOT NULL,
    last_heartbeat double precision    NOT NULL,
    stopped_at     double precision
);

-- A worker's exclusive, expiring hold on one host of a run: only the holder fetches there.
CREATE TABLE claims (
    run_id     bigint NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
    host       text    NOT NULL,
    worker_id  text    NOT NULL,
    expires_at double precision    NOT NULL,
    claimed_at double precision    NOT NULL,
    PRIMARY KEY (run_id, host)
);
CREATE INDEX claims_by_worker ON claims (run_id, worker_id);

-- Politeness that survives a hand-over: Retry-After, robots.txt and its Crawl-delay.
CREATE TABLE host_state (
    host              text PRIMARY KEY,
    paused_until      double precision NOT NULL DEFAULT 0,
    robots_origin     text,
    robots_status     integer,
    robots_body       text,
    robots_expires_at double precision,
    updated_at        double precision NOT NULL
);

-- Per-host counters of a run, flushed during the crawl. A task is added to them exactly
-- once: the flush that counts it also marks it counted, in one transaction.
CREATE TABLE run_hosts (
    run_id        bigint NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
    host          text    NOT NULL,
    pages_crawled bigint NOT NULL DEFAULT 0,
    errors        bigint NOT NULL DEFAULT 0,
    status        text    NOT NULL DEFAULT 'active',  -- active, exhausted, blocked
    updated_at    double precision    NOT NULL,
    PRIMARY KEY (run_id, host)
);
ALTER TABLE tasks ADD COLUMN counted boolean NOT NULL DEFAULT false;
CREATE INDEX tasks_uncounted ON tasks (run_id, host) WHERE NOT counted AND state IN ('completed', 'failed');
CREATE INDEX tasks_pending_by_host ON tasks (run_id, host) WHERE state = 'pending';

ALTER TABLE domains ADD COLUMN last_run_id bigint;
ALTER TABLE domains ADD COLUMN last_crawled_at double precision;
