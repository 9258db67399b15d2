-- What each fetch ended as, where it ended, and how it got there.
ALTER TABLE tasks ADD COLUMN outcome text;
ALTER TABLE tasks ADD COLUMN final_url text;
ALTER TABLE tasks ADD COLUMN redirects jsonb;  -- [[from_url, to_url, status], ...]

-- Seeding (seeds, then sitemaps) finished: a resumed run does not fetch sitemaps again.
ALTER TABLE runs ADD COLUMN seeded_at double precision;

-- A site as the catalogue knows it, across runs. Redirects of its root tell which host
-- is canonical and which hosts are aliases of it.
CREATE TABLE domains (
    host           text             PRIMARY KEY,
    canonical_host text,
    aliases        text[]           NOT NULL DEFAULT '{}',
    first_seen_at  double precision NOT NULL,
    updated_at     double precision NOT NULL
);
