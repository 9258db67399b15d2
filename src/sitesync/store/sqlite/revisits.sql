-- The latest successful fetch of each URL on SQLite (store/sqlite/revisits.py): what a
-- scan revalidates with, and what a 304 stands for. The same query names as
-- store/postgres/revisits.sql: read them side by side.

-- name: select_last_fetch
-- Before a request: the validators to send (one primary-key lookup per page).
SELECT url, run_id, task_id, fetched_at, checked_at, etag, last_modified, content_hash,
       body_bytes
  FROM last_fetches
 WHERE url = :url;

-- name: select_earlier_fetch
-- After a 304: the links and records of the body it stands for.
SELECT links, record_ids FROM last_fetches WHERE url = :url;

-- name: select_earlier_records
-- Which of those records the store still has, and their kinds.
SELECT id, kind FROM records WHERE id IN (SELECT value FROM json_each(:record_ids));

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
-- A 304's records, seen again by the run at their latest version; those the run had seen
-- already come back without a row.
INSERT INTO record_seen (run_id, record_id, version, task_id, seen_at)
SELECT :run_id, id, latest_version, :task_id, :now
  FROM records
 WHERE id IN (SELECT value FROM json_each(:record_ids))
ON CONFLICT (run_id, record_id) DO NOTHING
RETURNING record_id;
