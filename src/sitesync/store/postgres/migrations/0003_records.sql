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
