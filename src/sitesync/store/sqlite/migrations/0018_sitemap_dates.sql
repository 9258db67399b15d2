-- The <lastmod> dates a run's sitemaps gave its pages (issue 30): whichever worker leases a
-- page knows its date; an earlier run's dates are never used.
CREATE TABLE sitemap_dates (
    run_id  INTEGER NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
    url     TEXT    NOT NULL,  -- normalized
    lastmod REAL    NOT NULL,  -- epoch seconds, read as late as the date can mean
    PRIMARY KEY (run_id, url)
) WITHOUT ROWID;
