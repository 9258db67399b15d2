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
    seeded_at        REAL,
    heartbeat_at     REAL,
    supervisor_id    TEXT,
    crash_retries    INTEGER NOT NULL DEFAULT 0,
    scan_applied_at  REAL,
    scope            TEXT
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
    counted          INTEGER NOT NULL DEFAULT 0, -- included in run_hosts counters
    found_from       INTEGER,                   -- the page that first linked to it (0009)
    UNIQUE (run_id, url)
);

CREATE INDEX tasks_pending_by_priority ON tasks (run_id, priority DESC, id) WHERE state = 'pending';
CREATE INDEX tasks_assigned_by_expiry ON tasks (run_id, lease_expires_at) WHERE state = 'assigned';

CREATE TABLE domains (
    host           TEXT PRIMARY KEY,
    canonical_host TEXT,
    aliases        TEXT NOT NULL DEFAULT '[]',  -- JSON array of hosts
    first_seen_at  REAL NOT NULL,
    updated_at     REAL NOT NULL,
    last_run_id    INTEGER,
    last_crawled_at REAL,
    scope          TEXT,
    active         INTEGER NOT NULL DEFAULT 1,
    stale          INTEGER NOT NULL DEFAULT 0,
    unreachable_streak INTEGER NOT NULL DEFAULT 0,
    request_profile TEXT  -- JSON object: its own headers, cookies, auth, proxy (0016)
);

-- Versioned AssetRecords: what plugins made of pages (docs/plugins.md).
-- A record is one stable key (kind + normalized URL). A version is written only when the
-- key's content hash changes; record_seen says which version each run saw, so "removed
-- between two runs" is a query rather than a guess.

-- Bodies, content-addressed and compressed: identical content is kept once.
CREATE TABLE record_bodies (
    content_hash TEXT    PRIMARY KEY,  -- sha256 (hex) of the uncompressed body
    size         INTEGER NOT NULL,     -- uncompressed bytes
    compression  TEXT    NOT NULL,     -- 'zlib'
    data         BLOB    NOT NULL,
    created_at   REAL    NOT NULL
);

CREATE TABLE records (
    id               INTEGER PRIMARY KEY,
    key              TEXT    NOT NULL UNIQUE,
    kind             TEXT    NOT NULL,
    url              TEXT    NOT NULL,
    first_run_id     INTEGER NOT NULL REFERENCES runs (id),
    first_seen_at    REAL    NOT NULL,
    -- The latest version, copied here so an unchanged sighting costs one lookup.
    latest_version   INTEGER NOT NULL,
    latest_hash      TEXT    NOT NULL,
    latest_body_hash TEXT
);

CREATE TABLE record_versions (
    record_id    INTEGER NOT NULL REFERENCES records (id) ON DELETE CASCADE,
    version      INTEGER NOT NULL,
    run_id       INTEGER NOT NULL REFERENCES runs (id),  -- the run that first saw this content
    content_hash TEXT    NOT NULL,
    similarity   REAL,     -- 0..1 against the previous version; NULL when not comparable
    body_hash    TEXT    REFERENCES record_bodies (content_hash),  -- NULL: no body kept
    body_size    INTEGER,  -- bytes of the body, kept or not
    body_note    TEXT,     -- why the body was not kept
    data         TEXT    NOT NULL,  -- JSON
    created_at   REAL    NOT NULL,
    PRIMARY KEY (record_id, version)
);

-- Every record each run saw, and which version: the ground for diffs between runs.
CREATE TABLE record_seen (
    run_id    INTEGER NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
    record_id INTEGER NOT NULL REFERENCES records (id) ON DELETE CASCADE,
    version   INTEGER NOT NULL,
    task_id   INTEGER,  -- the page it was first seen on in the run
    seen_at   REAL    NOT NULL,
    PRIMARY KEY (run_id, record_id)
);

-- Distinct assets (images, documents) a run found on each host's pages, and how many of
-- them it stored: moved in the report transaction that records them, so they are exact.
CREATE TABLE run_host_assets (
    run_id        INTEGER NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
    host          TEXT    NOT NULL,
    assets_found  INTEGER NOT NULL DEFAULT 0,
    assets_stored INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (run_id, host)
);

-- Coordination of several workers (migration 0004).
-- Workers that joined runs, so claims can be shared fairly among the live ones.
CREATE TABLE workers (
    worker_id      TEXT PRIMARY KEY,
    host           TEXT    NOT NULL,
    pid            INTEGER NOT NULL,
    run_id         INTEGER,
    started_at     REAL    NOT NULL,
    last_heartbeat REAL    NOT NULL,
    stopped_at     REAL,
    boot_id        TEXT,     -- boot id and pid namespace of the worker's machine
    proc_start     INTEGER   -- the process's start time (clock ticks after boot)
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

-- Politeness that survives a hand-over: Retry-After, robots.txt and its Crawl-delay, and
-- the adaptive pace.
CREATE TABLE host_state (
    host              TEXT PRIMARY KEY,
    paused_until      REAL NOT NULL DEFAULT 0,
    robots_origin     TEXT,
    robots_status     INTEGER,
    robots_body       TEXT,
    robots_expires_at REAL,
    pace_delay        REAL,  -- adaptive politeness: the delay now, in seconds
    pace_concurrency  INTEGER,
    pace_reason       TEXT,  -- why ("backing off after 503s"); empty once recovered
    pace_since        REAL,  -- when it was learned: recovery runs from then
    updated_at        REAL NOT NULL
);

-- Per-host counters of a run, flushed during the crawl. A task is added to them exactly
-- once: the flush that counts it also marks it counted, in one transaction.
CREATE TABLE run_hosts (
    run_id        INTEGER NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
    host          TEXT    NOT NULL,
    pages_crawled INTEGER NOT NULL DEFAULT 0,
    errors        INTEGER NOT NULL DEFAULT 0,
    status        TEXT    NOT NULL DEFAULT 'active',  -- active, exhausted, blocked, unreachable
    updated_at    REAL    NOT NULL,
    failures      INTEGER NOT NULL DEFAULT 0,  -- consecutive host-level failures (dead hosts)
    ended_as      TEXT,  -- the outcome its remaining tasks got (dead host)
    ended_reason  TEXT,  -- why they ended
    PRIMARY KEY (run_id, host)
);
CREATE INDEX tasks_uncounted ON tasks (run_id, host) WHERE counted = 0 AND state IN ('completed', 'failed');
CREATE INDEX tasks_pending_by_host ON tasks (run_id, host) WHERE state = 'pending';

-- Supervision, recurring scans and the domain registry (migration 0005).
-- Supervision: who runs a run, when it last showed signs of life, how often it crashed.

-- Recurring scans: a run may belong to a scope (e.g. a country's domain list), and a
-- scope has at most one active run: the index makes a second start fail, atomically.
CREATE UNIQUE INDEX runs_one_active_per_scope ON runs (scope)
    WHERE scope IS NOT NULL AND status IN ('queued', 'running', 'paused');

-- The domain registry: registered sites, their scope and their stale lifecycle.
CREATE INDEX domains_by_scope ON domains (scope, active);

CREATE TABLE schedules (
    scope        TEXT PRIMARY KEY,
    cadence      TEXT NOT NULL,      -- cron syntax, e.g. '0 3 1 * *' (monthly)
    next_run_at  REAL NOT NULL,
    last_run_id  INTEGER,
    updated_at   REAL NOT NULL
);

-- Attempt history and the registry across scans (migration 0009).
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

-- Hosts with work (migration 0010): how many tasks of each host of a run are pending or leased,
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

-- Pending tasks put off to a later time (migration 0012): a retry's backoff, Retry-After,
-- a host's pace; and when they may start: the earliest start of a run's pending tasks
-- (what `sitesync status` says an idle run waits for) without reading the pending
-- frontier. New tasks start at 0 and are not in it, so admission does not pay for it.
CREATE INDEX tasks_put_off ON tasks (run_id, next_eligible_at)
    WHERE state = 'pending' AND next_eligible_at > 0;

-- A run's finished tasks by outcome and HTTP status class (migration 0013), as the flush
-- of its host counters counts them (the tasks marked counted): what the dashboard's outcome
-- table reads instead of every finished task of the run.
CREATE TABLE run_outcomes (
    run_id       INTEGER NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
    outcome      TEXT    NOT NULL,
    status_class TEXT    NOT NULL,  -- '2xx' ... '5xx', 'none': no HTTP response
    tasks        INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (run_id, outcome, status_class)
) WITHOUT ROWID;

-- A run's settings (migration 0014): what it was created with, as JSON, a version that
-- grows with each change, and the changes; a schedule's settings, for the scans it starts.
ALTER TABLE runs ADD COLUMN settings TEXT;
ALTER TABLE runs ADD COLUMN settings_version INTEGER NOT NULL DEFAULT 0;
CREATE TABLE run_setting_changes (
    run_id     INTEGER NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
    version    INTEGER NOT NULL,  -- the run's settings_version after the change
    name       TEXT    NOT NULL,
    old_value  TEXT    NOT NULL,  -- JSON
    new_value  TEXT    NOT NULL,  -- JSON
    changed_at REAL    NOT NULL,
    PRIMARY KEY (run_id, version, name)
) WITHOUT ROWID;
ALTER TABLE schedules ADD COLUMN settings TEXT;

-- The latest successful fetch of each URL (migration 0015): what the next scan
-- revalidates with, and what a 304 stands for.
CREATE TABLE last_fetches (
    url           TEXT    PRIMARY KEY,  -- the URL whose body it was (after redirects)
    run_id        INTEGER NOT NULL,     -- the run that last fetched or confirmed it
    task_id       INTEGER NOT NULL,
    fetched_at    REAL    NOT NULL,     -- its body last downloaded
    checked_at    REAL    NOT NULL,     -- last downloaded or confirmed unchanged (304)
    etag          TEXT,                 -- as sent, a weak one with its W/
    last_modified TEXT,                 -- as sent (an HTTP-date)
    content_hash  TEXT    NOT NULL,     -- sha256 (hex) of the body
    body_bytes    INTEGER NOT NULL,
    links         BLOB    NOT NULL,     -- zlib of a JSON array: the page's normalized links
    record_ids    TEXT    NOT NULL      -- JSON array: the records the body produced
) WITHOUT ROWID;

-- Tombstones by run (migration 0017): the pages each scan found gone.
CREATE INDEX record_versions_gone ON record_versions (run_id) WHERE content_hash = 'gone';

-- The <lastmod> dates a run's sitemaps gave its pages (migration 0018).
CREATE TABLE sitemap_dates (
    run_id  INTEGER NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
    url     TEXT    NOT NULL,  -- normalized
    lastmod REAL    NOT NULL,  -- epoch seconds, read as late as the date can mean
    PRIMARY KEY (run_id, url)
) WITHOUT ROWID;
