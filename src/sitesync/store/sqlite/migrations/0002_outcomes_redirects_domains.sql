-- What each fetch ended as, where it ended, and how it got there.
ALTER TABLE tasks ADD COLUMN outcome TEXT;
ALTER TABLE tasks ADD COLUMN final_url TEXT;
ALTER TABLE tasks ADD COLUMN redirects TEXT;  -- JSON [[from_url, to_url, status], ...]

-- Seeding (seeds, then sitemaps) finished: a resumed run does not fetch sitemaps again.
ALTER TABLE runs ADD COLUMN seeded_at REAL;

-- A site as the catalogue knows it, across runs. Redirects of its root tell which host
-- is canonical and which hosts are aliases of it.
CREATE TABLE domains (
    host           TEXT PRIMARY KEY,
    canonical_host TEXT,
    aliases        TEXT NOT NULL DEFAULT '[]',  -- JSON array of hosts
    first_seen_at  REAL NOT NULL,
    updated_at     REAL NOT NULL
);
