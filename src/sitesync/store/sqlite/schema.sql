-- The current schema, for reading. Migrations in migrations/ produce exactly this
-- (tests/unit/test_migrations.py checks it).

-- Runs with their exact counters: every counter moves in the same transaction
-- as the task transition that causes it, so they survive any crash exactly.
CREATE TABLE runs (
    id               INTEGER PRIMARY KEY,
    status           TEXT    NOT NULL,
    config           TEXT    NOT NULL,          -- RunConfig as JSON
    created_at       REAL    NOT NULL,
    started_at       REAL,
    ended_at         REAL,
    last_activity_at REAL,
    status_reason    TEXT,
    tasks_total      INTEGER NOT NULL DEFAULT 0,
    pending          INTEGER NOT NULL DEFAULT 0,
    assigned         INTEGER NOT NULL DEFAULT 0,
    completed        INTEGER NOT NULL DEFAULT 0,
    failed           INTEGER NOT NULL DEFAULT 0,
    pages_fetched    INTEGER NOT NULL DEFAULT 0,
    bytes_fetched    INTEGER NOT NULL DEFAULT 0,
    retries          INTEGER NOT NULL DEFAULT 0,
    seeded_at        REAL
);

-- One row per normalized URL per run: the UNIQUE constraint is the dedup pre-flight.
CREATE TABLE tasks (
    id               INTEGER PRIMARY KEY,
    run_id           INTEGER NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
    url              TEXT    NOT NULL,
    host             TEXT    NOT NULL,
    state            TEXT    NOT NULL,
    depth            INTEGER NOT NULL,
    priority         INTEGER NOT NULL DEFAULT 0,
    attempt_count    INTEGER NOT NULL DEFAULT 0,
    next_eligible_at REAL    NOT NULL DEFAULT 0,
    lease_owner      TEXT,
    lease_token      INTEGER,
    lease_expires_at REAL,
    last_heartbeat   REAL,
    last_error       TEXT,
    http_status      INTEGER,
    discovered_at    REAL    NOT NULL,
    updated_at       REAL    NOT NULL,
    outcome          TEXT,
    final_url        TEXT,
    redirects        TEXT,                      -- JSON [[from_url, to_url, status], ...]
    UNIQUE (run_id, url)
);

CREATE INDEX tasks_pending_by_priority ON tasks (run_id, priority DESC, id) WHERE state = 'pending';
CREATE INDEX tasks_assigned_by_expiry ON tasks (run_id, lease_expires_at) WHERE state = 'assigned';

CREATE TABLE domains (
    host           TEXT PRIMARY KEY,
    canonical_host TEXT,
    aliases        TEXT NOT NULL DEFAULT '[]',  -- JSON array of hosts
    first_seen_at  REAL NOT NULL,
    updated_at     REAL NOT NULL
);
