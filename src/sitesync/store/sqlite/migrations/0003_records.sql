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
