-- The current schema, for reading. Migrations in migrations/ produce exactly this
-- (tests/unit/test_postgres_migrations.py checks it).

-- Runs. Their exact counters are in run_host_counts since 0010 (below, where the columns
-- here are dropped), folded by run_view: every counter moves in the same transaction as
-- the task transition that causes it, so they survive any crash exactly. Times are epoch
-- seconds (double precision), as in the SQLite schema, so both backends build identical
-- models from their rows.
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
    retries          bigint           NOT NULL DEFAULT 0,
    seeded_at        double precision,                    -- seeds and sitemaps admitted
    heartbeat_at     double precision,
    supervisor_id    text,
    crash_retries    integer          NOT NULL DEFAULT 0,
    scan_applied_at  double precision,
    scope            text
);

-- One row per normalized URL per run: the UNIQUE constraint is the dedup pre-flight.
CREATE TABLE tasks (
    id               bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    run_id           bigint           NOT NULL,  -- a run's; no foreign key (0011)
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
    outcome          text,                                -- the fetch's FetchOutcome value
    final_url        text,                                -- where redirects ended
    redirects        jsonb,                               -- [[from_url, to_url, status], ...]
    counted          boolean          NOT NULL DEFAULT false,  -- included in run_hosts
    found_from       bigint,                              -- the page that first linked to it (0009)
    UNIQUE (run_id, url)
);

-- Partial indexes keep acquire and reclaim proportional to the work they find,
-- not to the size of the frontier.
CREATE INDEX tasks_pending_by_priority ON tasks (run_id, priority DESC, id) WHERE state = 'pending';
CREATE INDEX tasks_assigned_by_expiry ON tasks (run_id, lease_expires_at) WHERE state = 'assigned';

-- A site as the catalogue knows it, across runs. Redirects of its root tell which host
-- is canonical and which hosts are aliases of it.
CREATE TABLE domains (
    host           text             PRIMARY KEY,
    canonical_host text,
    aliases        text[]           NOT NULL DEFAULT '{}',
    first_seen_at  double precision NOT NULL,
    updated_at     double precision NOT NULL,
    last_run_id    bigint,
    last_crawled_at double precision,
    scope          text,
    active         boolean NOT NULL DEFAULT true,
    stale          boolean NOT NULL DEFAULT false,
    unreachable_streak integer NOT NULL DEFAULT 0,
    request_profile jsonb  -- its own headers, cookies, auth, proxy (0018)
);

-- Versioned AssetRecords: what plugins made of pages (docs/plugins.md).
-- A record is one stable key (kind + normalized URL). A version is written only when the
-- key's content hash changes; record_seen says which version each run saw, so "removed
-- between two runs" is a query rather than a guess.

-- Bodies, content-addressed and compressed: identical content is kept once.
CREATE TABLE record_bodies (
    content_hash text             PRIMARY KEY,  -- sha256 (hex) of the uncompressed body
    size         bigint           NOT NULL,     -- uncompressed bytes
    compression  text             NOT NULL,     -- 'zlib'
    data         bytea            NOT NULL,
    created_at   double precision NOT NULL
);

CREATE TABLE records (
    id               bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    key              text             NOT NULL UNIQUE,
    kind             text             NOT NULL,
    url              text             NOT NULL,
    first_run_id     bigint           NOT NULL REFERENCES runs (id),
    first_seen_at    double precision NOT NULL,
    -- The latest version, copied here so an unchanged sighting costs one lookup.
    latest_version   integer          NOT NULL,
    latest_hash      text             NOT NULL,
    latest_body_hash text
);

CREATE TABLE record_versions (
    record_id    bigint           NOT NULL REFERENCES records (id) ON DELETE CASCADE,
    version      integer          NOT NULL,
    run_id       bigint           NOT NULL REFERENCES runs (id),  -- first saw this content
    content_hash text             NOT NULL,
    similarity   double precision,  -- 0..1 against the previous version; NULL: not comparable
    body_hash    text             REFERENCES record_bodies (content_hash),  -- NULL: none kept
    body_size    bigint,            -- bytes of the body, kept or not
    body_note    text,              -- why the body was not kept
    data         jsonb            NOT NULL,
    created_at   double precision NOT NULL,
    PRIMARY KEY (record_id, version)
);

-- Every record each run saw, and which version: the ground for diffs between runs.
CREATE TABLE record_seen (
    run_id    bigint           NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
    record_id bigint           NOT NULL REFERENCES records (id) ON DELETE CASCADE,
    version   integer          NOT NULL,
    task_id   bigint,           -- the page it was first seen on in the run
    seen_at   double precision NOT NULL,
    PRIMARY KEY (run_id, record_id)
);

-- Distinct assets (images, documents) a run found on each host's pages, and how many of
-- them it stored: moved in the report transaction that records them, so they are exact.
CREATE TABLE run_host_assets (
    run_id        bigint NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
    host          text   NOT NULL,
    assets_found  bigint NOT NULL DEFAULT 0,
    assets_stored bigint NOT NULL DEFAULT 0,
    PRIMARY KEY (run_id, host)
);

-- Coordination of several workers (migration 0004).
-- Workers that joined runs, so claims can be shared fairly among the live ones.
CREATE TABLE workers (
    worker_id      text PRIMARY KEY,
    host           text    NOT NULL,
    pid            integer NOT NULL,
    run_id         bigint,
    started_at     double precision    NOT NULL,
    last_heartbeat double precision    NOT NULL,
    stopped_at     double precision,
    boot_id        text,     -- boot id and pid namespace of the worker's machine
    proc_start     bigint    -- the process's start time (clock ticks after boot)
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

-- Politeness that survives a hand-over: Retry-After, robots.txt and its Crawl-delay, and
-- the adaptive pace.
CREATE TABLE host_state (
    host              text PRIMARY KEY,
    paused_until      double precision NOT NULL DEFAULT 0,
    robots_origin     text,
    robots_status     integer,
    robots_body       text,
    robots_expires_at double precision,
    updated_at        double precision NOT NULL,
    pace_delay        double precision,  -- adaptive politeness: the delay now, in seconds
    pace_concurrency  integer,
    pace_reason       text,  -- why ("backing off after 503s"); empty once recovered
    pace_since        double precision   -- when it was learned: recovery runs from then
);

-- Per-host counters of a run, flushed during the crawl. A task is added to them exactly
-- once: the flush that counts it also marks it counted, in one transaction.
CREATE TABLE run_hosts (
    run_id        bigint NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
    host          text    NOT NULL,
    pages_crawled bigint NOT NULL DEFAULT 0,
    errors        bigint NOT NULL DEFAULT 0,
    status        text    NOT NULL DEFAULT 'active',  -- active, exhausted, blocked, unreachable
    updated_at    double precision    NOT NULL,
    failures      integer NOT NULL DEFAULT 0,  -- consecutive host-level failures (dead hosts)
    ended_as      text,  -- the outcome its remaining tasks got (dead host)
    ended_reason  text,  -- why they ended
    PRIMARY KEY (run_id, host)
);
CREATE INDEX tasks_uncounted ON tasks (run_id, host) WHERE NOT counted AND state IN ('completed', 'failed');
CREATE INDEX tasks_pending_by_host ON tasks (run_id, host, id) WHERE state = 'pending';

-- Supervision, recurring scans and the domain registry (migration 0005).
-- Supervision: who runs a run, when it last showed signs of life, how often it crashed.

-- Recurring scans: a run may belong to a scope (e.g. a country's domain list), and a
-- scope has at most one active run: the index makes a second start fail, atomically.
CREATE UNIQUE INDEX runs_one_active_per_scope ON runs (scope)
    WHERE scope IS NOT NULL AND status IN ('queued', 'running', 'paused');

-- The domain registry: registered sites, their scope and their stale lifecycle.
CREATE INDEX domains_by_scope ON domains (scope, active);

CREATE TABLE schedules (
    scope        text PRIMARY KEY,
    cadence      text NOT NULL,      -- cron syntax, e.g. '0 3 1 * *' (monthly)
    next_run_at  double precision NOT NULL,
    last_run_id  bigint,
    updated_at   double precision NOT NULL
);

-- Attempt history and the registry across scans (migration 0009).
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

-- No hot row (migration 0010): a run's task counters, per host; the run's counters are
-- their sum (run_view). A host is claimed by one worker at a time, so writers of one run
-- move different rows.
CREATE TABLE run_host_counts (
    run_id        bigint NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
    host          text   NOT NULL,  -- '' holds what older versions counted for the run only
    tasks_total   bigint NOT NULL DEFAULT 0,
    pending       bigint NOT NULL DEFAULT 0,
    assigned      bigint NOT NULL DEFAULT 0,
    completed     bigint NOT NULL DEFAULT 0,
    failed        bigint NOT NULL DEFAULT 0,
    pages_fetched bigint NOT NULL DEFAULT 0,
    bytes_fetched bigint NOT NULL DEFAULT 0,
    retries       bigint NOT NULL DEFAULT 0,
    updated_at    double precision NOT NULL,  -- the last task transition on the host
    PRIMARY KEY (run_id, host)
);
-- The claim refresh: hosts with pending work, without reading the frontier.
CREATE INDEX run_host_counts_with_work ON run_host_counts (run_id, host) WHERE pending > 0;

-- The run row's own counters are gone (the host rows hold them); dropped rather than
-- declared without them because PostgreSQL keeps a dropped column's position.
ALTER TABLE runs DROP COLUMN tasks_total, DROP COLUMN pending, DROP COLUMN assigned,
    DROP COLUMN completed, DROP COLUMN failed, DROP COLUMN pages_fetched,
    DROP COLUMN bytes_fetched, DROP COLUMN retries;

-- A run with its counters folded from its host rows: what every read of a run selects.
CREATE VIEW run_view AS
SELECT r.id, r.status, r.config, r.created_at, r.started_at, r.ended_at,
       GREATEST(r.last_activity_at, c.moved_at) AS last_activity_at,
       r.status_reason,
       COALESCE(c.tasks_total, 0) AS tasks_total, COALESCE(c.pending, 0) AS pending,
       COALESCE(c.assigned, 0) AS assigned, COALESCE(c.completed, 0) AS completed,
       COALESCE(c.failed, 0) AS failed, COALESCE(c.pages_fetched, 0) AS pages_fetched,
       COALESCE(c.bytes_fetched, 0) AS bytes_fetched, COALESCE(c.retries, 0) AS retries,
       r.seeded_at, r.heartbeat_at, r.supervisor_id, r.crash_retries, r.scan_applied_at, r.scope
  FROM runs AS r
  LEFT JOIN LATERAL (
       SELECT SUM(h.tasks_total)::bigint AS tasks_total, SUM(h.pending)::bigint AS pending,
              SUM(h.assigned)::bigint AS assigned, SUM(h.completed)::bigint AS completed,
              SUM(h.failed)::bigint AS failed, SUM(h.pages_fetched)::bigint AS pages_fetched,
              SUM(h.bytes_fetched)::bigint AS bytes_fetched, SUM(h.retries)::bigint AS retries,
              MAX(h.updated_at) AS moved_at
         FROM run_host_counts AS h
        WHERE h.run_id = r.id) AS c ON true;

-- A capped run without a hot row (migration 0012): what a run with max_pages may still
-- admit, split over slots that its admissions lock one at a time, passing over those
-- another admission holds. A run's slots sum to max_pages less the tasks it holds.
CREATE TABLE run_admission_budget (
    run_id    bigint   NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
    slot      smallint NOT NULL,
    remaining bigint   NOT NULL CHECK (remaining >= 0),
    PRIMARY KEY (run_id, slot)
);

-- A run is created once, however often its creating transaction is replayed (migration
-- 0013): the token of the create_run or start_scan call that made it.
ALTER TABLE runs ADD COLUMN create_token text;
CREATE UNIQUE INDEX runs_create_token ON runs (create_token);

-- Pending tasks put off to a later time (migration 0014): a retry's backoff, Retry-After,
-- a host's pace; and when they may start: the earliest start of a run's pending tasks
-- (what `sitesync status` says an idle run waits for) without reading the pending
-- frontier. New tasks start at 0 and are not in it, so admission does not pay for it.
CREATE INDEX tasks_put_off ON tasks (run_id, next_eligible_at)
    WHERE state = 'pending' AND next_eligible_at > 0;

-- A run's finished tasks by outcome and HTTP status class (migration 0015), as the flush
-- of its host counters counts them (the tasks marked counted): what the dashboard's outcome
-- table reads instead of every finished task of the run.
CREATE TABLE run_outcomes (
    run_id       bigint  NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
    outcome      text    NOT NULL,
    status_class text    NOT NULL,  -- '2xx' ... '5xx', 'none': no HTTP response
    tasks        bigint  NOT NULL DEFAULT 0,
    PRIMARY KEY (run_id, outcome, status_class)
);

-- A run's settings (migration 0016): what it was created with, a version that grows with
-- each change, and the changes; a schedule's settings, for the scans it starts.
ALTER TABLE runs ADD COLUMN settings jsonb;
ALTER TABLE runs ADD COLUMN settings_version integer NOT NULL DEFAULT 0;
CREATE TABLE run_setting_changes (
    run_id     bigint           NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
    version    integer          NOT NULL,  -- the run's settings_version after the change
    name       text             NOT NULL,
    old_value  jsonb            NOT NULL,
    new_value  jsonb            NOT NULL,
    changed_at double precision NOT NULL,
    PRIMARY KEY (run_id, version, name)
);
ALTER TABLE schedules ADD COLUMN settings jsonb;
-- Reads of a run show its settings (new columns go last in a replaced view).
CREATE OR REPLACE VIEW run_view AS
SELECT r.id, r.status, r.config, r.created_at, r.started_at, r.ended_at,
       GREATEST(r.last_activity_at, c.moved_at) AS last_activity_at,
       r.status_reason,
       COALESCE(c.tasks_total, 0) AS tasks_total, COALESCE(c.pending, 0) AS pending,
       COALESCE(c.assigned, 0) AS assigned, COALESCE(c.completed, 0) AS completed,
       COALESCE(c.failed, 0) AS failed, COALESCE(c.pages_fetched, 0) AS pages_fetched,
       COALESCE(c.bytes_fetched, 0) AS bytes_fetched, COALESCE(c.retries, 0) AS retries,
       r.seeded_at, r.heartbeat_at, r.supervisor_id, r.crash_retries, r.scan_applied_at, r.scope,
       r.settings, r.settings_version
  FROM runs AS r
  LEFT JOIN LATERAL (
       SELECT SUM(h.tasks_total)::bigint AS tasks_total, SUM(h.pending)::bigint AS pending,
              SUM(h.assigned)::bigint AS assigned, SUM(h.completed)::bigint AS completed,
              SUM(h.failed)::bigint AS failed, SUM(h.pages_fetched)::bigint AS pages_fetched,
              SUM(h.bytes_fetched)::bigint AS bytes_fetched, SUM(h.retries)::bigint AS retries,
              MAX(h.updated_at) AS moved_at
         FROM run_host_counts AS h
        WHERE h.run_id = r.id) AS c ON true;

-- The latest successful fetch of each URL (migration 0017): what the next scan
-- revalidates with, and what a 304 stands for.
CREATE TABLE last_fetches (
    url           text             PRIMARY KEY,  -- the URL whose body it was (after redirects)
    run_id        bigint           NOT NULL,     -- the run that last fetched or confirmed it
    task_id       bigint           NOT NULL,
    fetched_at    double precision NOT NULL,     -- its body last downloaded
    checked_at    double precision NOT NULL,     -- last downloaded or confirmed unchanged (304)
    etag          text,                          -- as sent, a weak one with its W/
    last_modified text,                          -- as sent (an HTTP-date)
    content_hash  text             NOT NULL,     -- sha256 (hex) of the body
    body_bytes    bigint           NOT NULL,
    links         bytea            NOT NULL,     -- zlib of a JSON array: the page's normalized links
    record_ids    bigint[]         NOT NULL      -- the records the body produced
);

-- Tombstones by run (migration 0019): the pages each scan found gone.
CREATE INDEX record_versions_gone ON record_versions (run_id) WHERE content_hash = 'gone';

-- The <lastmod> dates a run's sitemaps gave its pages (migration 0020).
CREATE TABLE sitemap_dates (
    run_id  bigint           NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
    url     text             NOT NULL,  -- normalized
    lastmod double precision NOT NULL,  -- epoch seconds, read as late as the date can mean
    PRIMARY KEY (run_id, url)
);
