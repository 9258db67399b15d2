-- The latest successful fetch of each URL on SQLite (store/sqlite/revisits.py): what a
-- scan revalidates with, and what a 304 stands for. The same query names as
-- store/postgres/revisits.sql: read them side by side.

-- name: select_last_fetches
-- Before the requests of a batch of leases: the validators to send, and what a 304 would
-- stand for (its links, and which of its records the store still has): one primary-key
-- lookup per page, one statement per batch.
SELECT f.url, f.run_id, f.task_id, f.fetched_at, f.checked_at, f.etag, f.last_modified,
       f.content_hash, f.body_bytes, f.links, f.record_ids,
       (SELECT json_group_array(json_array(r.id, r.kind))
          FROM records AS r
         WHERE r.id IN (SELECT value FROM json_each(f.record_ids))) AS found
  FROM last_fetches AS f
 WHERE f.url IN (SELECT value FROM json_each(:urls));

-- name: upsert_last_fetch
-- A body downloaded in full: it is the URL's last fetch now, whatever was there before.
INSERT INTO last_fetches (url, run_id, task_id, fetched_at, checked_at, etag, last_modified,
                          content_hash, body_bytes, links, record_ids)
VALUES (:url, :run_id, :task_id, :now, :now, :etag, :last_modified, :content_hash,
        :body_bytes, :links, :record_ids)
ON CONFLICT (url) DO UPDATE
   SET run_id = excluded.run_id, task_id = excluded.task_id, fetched_at = excluded.fetched_at,
       checked_at = excluded.checked_at, etag = excluded.etag,
       last_modified = excluded.last_modified, content_hash = excluded.content_hash,
       body_bytes = excluded.body_bytes, links = excluded.links,
       record_ids = excluded.record_ids;

-- name: confirm_last_fetch
-- A 304: the last fetch still stands, checked now; a validator the 304 sent replaces the
-- one kept (RFC 9111 4.3.4), one it left out stays.
UPDATE last_fetches
   SET run_id = :run_id, task_id = :task_id, checked_at = :now,
       etag = COALESCE(:etag, etag), last_modified = COALESCE(:last_modified, last_modified)
 WHERE url = :url;

-- name: insert_resightings
-- The batch's 304s' records, seen again by the run at their latest version (``sightings``:
-- a JSON array of [record id, task id], in batch order); those the run had seen already
-- come back without a row.
INSERT INTO record_seen (run_id, record_id, version, task_id, seen_at)
SELECT :run_id, r.id, r.latest_version, s.task_id, :now
  FROM (SELECT json_extract(value, '$[0]') AS record_id, json_extract(value, '$[1]') AS task_id,
               key AS n
          FROM json_each(:sightings)) AS s
  JOIN records AS r ON r.id = s.record_id
 WHERE true  -- (an INSERT ... SELECT with ON CONFLICT needs a WHERE to parse)
 ORDER BY s.n
ON CONFLICT (run_id, record_id) DO NOTHING
RETURNING record_id, task_id;

-- name: insert_sitemap_dates
-- The <lastmod> of the pages a sitemap of the run listed (``dates``: a JSON object, URL to
-- epoch seconds): what a page of this run is skipped or ordered by (engine/sitemapdates.py).
INSERT INTO sitemap_dates (run_id, url, lastmod)
SELECT :run_id, key, value FROM json_each(:dates) WHERE true
ON CONFLICT (run_id, url) DO UPDATE SET lastmod = excluded.lastmod;

-- name: select_sitemap_date
SELECT lastmod FROM sitemap_dates WHERE run_id = :run_id AND url = :url;

-- name: select_last_checked
-- When each of ``urls`` (those the store fetched) was last fetched or confirmed unchanged.
SELECT url, checked_at FROM last_fetches WHERE url IN (SELECT value FROM json_each(:urls));
