-- The latest successful fetch of each URL, whichever run of the store made it (issue 30):
-- its validators, which the next scan sends as a conditional request; what a 304 then
-- stands for (the links the page had, the records it produced); and its content hash and
-- size, to tell a changed page from an unchanged one and what a full fetch costs.
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
