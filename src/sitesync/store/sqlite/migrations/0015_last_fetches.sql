-- The latest successful fetch of each URL, whichever run of the store made it (issue 30):
-- its validators, which the next scan sends as a conditional request; what a 304 then
-- stands for (the links the page had, the records it produced); and its content hash and
-- size, to tell a changed page from an unchanged one and what a full fetch costs.
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
