-- Runs with their exact counters: every counter moves in the same transaction
-- as the task transition that causes it, so they survive any crash exactly.
-- Times are epoch seconds (double precision), as in the SQLite schema, so both
-- backends build identical models from their rows.
CREATE TABLE runs (
    id               bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    status           text             NOT NULL,
    config           jsonb            NOT NULL,  -- RunConfig
    created_at       double precision NOT NULL,
    started_at       double precision,
    ended_at         double precision,
    last_activity_at double precision,
    status_reason    text,
    tasks_total      bigint           NOT NULL DEFAULT 0,
    pending          bigint           NOT NULL DEFAULT 0,
    assigned         bigint           NOT NULL DEFAULT 0,
    completed        bigint           NOT NULL DEFAULT 0,
    failed           bigint           NOT NULL DEFAULT 0,
    pages_fetched    bigint           NOT NULL DEFAULT 0,
    bytes_fetched    bigint           NOT NULL DEFAULT 0,
    retries          bigint           NOT NULL DEFAULT 0
);

-- One row per normalized URL per run: the UNIQUE constraint is the dedup pre-flight.
CREATE TABLE tasks (
    id               bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    run_id           bigint           NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
    url              text             NOT NULL,
    host             text             NOT NULL,
    state            text             NOT NULL,
    depth            integer          NOT NULL,
    priority         integer          NOT NULL DEFAULT 0,
    attempt_count    integer          NOT NULL DEFAULT 0,
    next_eligible_at double precision NOT NULL DEFAULT 0,
    lease_owner      text,
    lease_token      bigint,
    lease_expires_at double precision,
    last_heartbeat   double precision,
    last_error       text,
    http_status      integer,
    discovered_at    double precision NOT NULL,
    updated_at       double precision NOT NULL,
    UNIQUE (run_id, url)
);

-- Partial indexes keep acquire and reclaim proportional to the work they find,
-- not to the size of the frontier.
CREATE INDEX tasks_pending_by_priority ON tasks (run_id, priority DESC, id) WHERE state = 'pending';
CREATE INDEX tasks_assigned_by_expiry ON tasks (run_id, lease_expires_at) WHERE state = 'assigned';
