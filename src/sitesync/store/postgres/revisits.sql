-- The latest successful fetch of each URL on PostgreSQL (store/postgres/revisits.py): what
-- a scan revalidates with, and what a 304 stands for. The same query names as
-- store/sqlite/revisits.sql: read them side by side.

-- name: select_last_fetches
-- Before the requests of a batch of leases: the validators to send, and what a 304 would
-- stand for (its links, and which of its records the store still has): one primary-key
-- lookup per page, one statement per batch.
SELECT f.url, f.run_id, f.task_id, f.fetched_at, f.checked_at, f.etag, f.last_modified,
       f.content_hash, f.body_bytes, f.links, f.record_ids,
       (SELECT jsonb_agg(jsonb_build_array(r.id, r.kind))
          FROM records AS r
         WHERE r.id = ANY(f.record_ids)) AS found
  FROM last_fetches AS f
 WHERE f.url = ANY(%(urls)s);

-- name: upsert_last_fetch
-- A body downloaded in full: it is the URL's last fetch now, whatever was there before.
INSERT INTO last_fetches (url, run_id, task_id, fetched_at, checked_at, etag, last_modified,
                          content_hash, body_bytes, links, record_ids)
VALUES (%(url)s, %(run_id)s, %(task_id)s, %(now)s, %(now)s, %(etag)s, %(last_modified)s,
        %(content_hash)s, %(body_bytes)s, %(links)s, %(record_ids)s::bigint[])
ON CONFLICT (url) DO UPDATE
   SET run_id = EXCLUDED.run_id, task_id = EXCLUDED.task_id, fetched_at = EXCLUDED.fetched_at,
       checked_at = EXCLUDED.checked_at, etag = EXCLUDED.etag,
       last_modified = EXCLUDED.last_modified, content_hash = EXCLUDED.content_hash,
       body_bytes = EXCLUDED.body_bytes, links = EXCLUDED.links,
       record_ids = EXCLUDED.record_ids;

-- name: confirm_last_fetch
-- A 304: the last fetch still stands, checked now; a validator the 304 sent replaces the
-- one kept (RFC 9111 4.3.4), one it left out stays.
UPDATE last_fetches
   SET run_id = %(run_id)s, task_id = %(task_id)s, checked_at = %(now)s,
       etag = COALESCE(%(etag)s, etag),
       last_modified = COALESCE(%(last_modified)s, last_modified)
 WHERE url = %(url)s;

-- name: insert_resightings
-- The batch's 304s' records, seen again by the run at their latest version (two arrays:
-- record ids and the task of each, in batch order); those the run had seen already come
-- back without a row.
INSERT INTO record_seen (run_id, record_id, version, task_id, seen_at)
SELECT %(run_id)s, r.id, r.latest_version, s.t, %(now)s
  FROM unnest(%(record_ids)s::bigint[], %(task_ids)s::bigint[]) WITH ORDINALITY AS s(i, t, n)
  JOIN records AS r ON r.id = s.i
 ORDER BY r.id, s.n
ON CONFLICT (run_id, record_id) DO NOTHING
RETURNING record_id, task_id;

-- name: insert_sitemap_dates
-- The <lastmod> of the pages a sitemap of the run listed (``dates``: a JSON object, URL to
-- epoch seconds): what a page of this run is skipped or ordered by (engine/sitemapdates.py).
INSERT INTO sitemap_dates (run_id, url, lastmod)
SELECT %(run_id)s, d.key, d.value::double precision FROM jsonb_each_text(%(dates)s) AS d
ON CONFLICT (run_id, url) DO UPDATE SET lastmod = excluded.lastmod;

-- name: select_sitemap_date
SELECT lastmod FROM sitemap_dates WHERE run_id = %(run_id)s AND url = %(url)s;

-- name: select_last_checked
-- When each of ``urls`` (those the store fetched) was last fetched or confirmed unchanged.
SELECT url, checked_at FROM last_fetches WHERE url = ANY(%(urls)b::text[]);
