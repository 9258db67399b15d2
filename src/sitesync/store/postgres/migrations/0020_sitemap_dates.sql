-- The <lastmod> dates a run's sitemaps gave its pages (issue 30): whichever worker leases a
-- page knows its date; an earlier run's dates are never used.
CREATE TABLE sitemap_dates (
    run_id  bigint           NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
    url     text             NOT NULL,  -- normalized
    lastmod double precision NOT NULL,  -- epoch seconds, read as late as the date can mean
    PRIMARY KEY (run_id, url)
);
