-- Versioned AssetRecords on PostgreSQL (store/postgres/records.py). The same query names as
-- store/sqlite/records.sql: read them side by side.

-- name: select_record
-- The fast path, without a lock: a record seen again unchanged costs this lookup and
-- one sighting.
SELECT id, latest_version, latest_hash, latest_body_hash FROM records WHERE key = %(key)s;

-- name: insert_record
-- A key seen for the first time, with its first version as the latest. Nothing (no row)
-- when another run's transaction inserted the key first: then lock_record.
INSERT INTO records (key, kind, url, first_run_id, first_seen_at, latest_version, latest_hash,
                     latest_body_hash)
VALUES (%(key)s, %(kind)s, %(url)s, %(run_id)s, %(now)s, 1, %(content_hash)s, %(body_hash)s)
ON CONFLICT (key) DO NOTHING
RETURNING id;

-- name: lock_record
-- PostgreSQL only: the record as it is now, locked until commit, to write its next version.
-- (On SQLite the report transaction already holds the database's write lock.)
SELECT id, latest_version, latest_hash, latest_body_hash FROM records
 WHERE key = %(key)s
   FOR UPDATE;

-- name: update_record_latest
UPDATE records
   SET latest_version = %(version)s,
       latest_hash = %(content_hash)s,
       latest_body_hash = %(body_hash)s
 WHERE id = %(record_id)s;

-- name: select_version_content
SELECT body_hash, body_size, data FROM record_versions
 WHERE record_id = %(record_id)s AND version = %(version)s;

-- name: insert_body
-- Content-addressed: a body already kept (the same bytes under another key) stays as it is.
INSERT INTO record_bodies (content_hash, size, compression, data, created_at)
VALUES (%(content_hash)s, %(size)s, %(compression)s, %(data)s, %(now)s)
ON CONFLICT (content_hash) DO NOTHING;

-- name: insert_version
INSERT INTO record_versions (record_id, version, run_id, content_hash, similarity, body_hash,
                             body_size, body_note, data, created_at)
VALUES (%(record_id)s, %(version)s, %(run_id)s, %(content_hash)s, %(similarity)s, %(body_hash)s,
        %(body_size)s, %(body_note)s, %(data)s::jsonb, %(now)s);

-- name: insert_seen
INSERT INTO record_seen (run_id, record_id, version, task_id, seen_at)
VALUES (%(run_id)s, %(record_id)s, %(version)s, %(task_id)s, %(now)s)
ON CONFLICT (run_id, record_id) DO NOTHING;

-- name: update_seen
-- The record changed again within the run: the run saw the newer version last.
UPDATE record_seen SET version = %(version)s, seen_at = %(now)s
 WHERE run_id = %(run_id)s AND record_id = %(record_id)s;

-- name: select_history
SELECT r.key, r.kind, r.url, v.version, v.run_id, v.content_hash, v.similarity, v.body_hash,
       v.body_size, v.body_note, v.data, v.created_at
  FROM records AS r
  JOIN record_versions AS v ON v.record_id = r.id
 WHERE r.key = %(key)s
 ORDER BY v.version;

-- name: select_run_records
SELECT r.key, r.kind, r.url, v.version, v.run_id, v.content_hash, v.similarity, v.body_hash,
       v.body_size, v.body_note, v.data, v.created_at
  FROM record_seen AS s
  JOIN records AS r ON r.id = s.record_id
  JOIN record_versions AS v ON v.record_id = s.record_id AND v.version = s.version
 WHERE s.run_id = %(run_id)s AND (%(kind)s::text IS NULL OR r.kind = %(kind)s)
 ORDER BY r.key COLLATE "C";  -- byte order, as SQLite sorts

-- name: diff_only_in
-- Keys the run saw and the other run did not: added or removed, by which side is which.
SELECT r.key, r.kind, r.url, s.version
  FROM record_seen AS s
  JOIN records AS r ON r.id = s.record_id
 WHERE s.run_id = %(run_id)s
   AND NOT EXISTS (SELECT 1 FROM record_seen AS o
                    WHERE o.run_id = %(other_run_id)s AND o.record_id = s.record_id)
 ORDER BY r.key COLLATE "C";  -- byte order, as SQLite sorts

-- name: diff_changed
-- Keys both runs saw with different content. similarity: the largest single step between
-- the two versions (the lowest similarity of the versions in between).
SELECT r.key, r.kind, r.url, a.version AS version_a, b.version AS version_b,
       (SELECT MIN(v.similarity) FROM record_versions AS v
         WHERE v.record_id = a.record_id
           AND v.version > LEAST(a.version, b.version)
           AND v.version <= GREATEST(a.version, b.version)) AS similarity
  FROM record_seen AS a
  JOIN record_seen AS b ON b.record_id = a.record_id AND b.run_id = %(run_b)s
  JOIN records AS r ON r.id = a.record_id
  JOIN record_versions AS va ON va.record_id = a.record_id AND va.version = a.version
  JOIN record_versions AS vb ON vb.record_id = b.record_id AND vb.version = b.version
 WHERE a.run_id = %(run_a)s AND va.content_hash <> vb.content_hash
 ORDER BY r.key COLLATE "C";  -- byte order, as SQLite sorts

-- name: select_body
SELECT compression, data FROM record_bodies WHERE content_hash = %(content_hash)s;

-- name: select_run_assets
SELECT host, assets_found, assets_stored FROM run_host_assets
 WHERE run_id = %(run_id)s
 ORDER BY host COLLATE "C";

-- name: select_task_records
-- The records a run first saw on one page (sitesync why): a range of the run's sightings,
-- no index of its own (a diagnostic read, not worth its bytes per sighting).
SELECT r.key, r.kind, r.url, v.version, v.run_id, v.content_hash, v.similarity, v.body_hash,
       v.body_size, v.body_note, v.data, v.created_at
  FROM record_seen AS s
  JOIN records AS r ON r.id = s.record_id
  JOIN record_versions AS v ON v.record_id = s.record_id AND v.version = s.version
 WHERE s.run_id = %(run_id)s AND s.task_id = %(task_id)s
 ORDER BY r.key COLLATE "C";

-- name: select_pages_linking_to
-- Pages of the run whose links record lists the URL (sitesync why of a URL never
-- admitted): a scan of the run's links records, for a diagnostic, not the crawl.
SELECT r.url
  FROM record_seen AS s
  JOIN records AS r ON r.id = s.record_id AND r.kind = 'links'
  JOIN record_versions AS v ON v.record_id = s.record_id AND v.version = s.version
 WHERE s.run_id = %(run_id)s
   AND (v.data -> 'internal' @> jsonb_build_array(%(url)s::text)
        OR v.data -> 'external' @> jsonb_build_array(%(url)s::text))
 ORDER BY s.seen_at
 LIMIT %(limit)s;

-- Batched writes of a report batch's records (record_batch.py): a constant number of
-- statements for the common cases (a key new to the store, a key seen again unchanged),
-- each over arrays. Rows go in key (or id) order, so that two transactions writing
-- overlapping keys take their locks in one order and wait instead of deadlocking.
-- Arrays of text and bytea are sent in binary (placeholders ending in b, not s), here and
-- in every .sql file of this backend: psycopg quotes a text-format array element by element
-- in Python, 33 ms for a batch's 256 JSON documents against 0.15 ms in binary
-- (docs/decisions.md).

-- name: select_records_by_key
SELECT key, id, latest_version, latest_hash, latest_body_hash FROM records
 WHERE key = ANY(%(keys)b::text[]);

-- name: insert_bodies
-- The parameters of insert_body (store/_records.body_params), each an array.
INSERT INTO record_bodies (content_hash, size, compression, data, created_at)
SELECT h, s, c, d, %(now)s
  FROM unnest(%(content_hash)b::text[], %(size)s::bigint[], %(compression)b::text[],
              %(data)b::bytea[]) AS b(h, s, c, d)
 ORDER BY h
ON CONFLICT (content_hash) DO NOTHING;

-- name: insert_records
-- Keys another run's transaction inserted first come back without a row: the caller
-- writes those records one by one (lock_record).
INSERT INTO records (key, kind, url, first_run_id, first_seen_at, latest_version, latest_hash,
                     latest_body_hash)
SELECT k, kd, u, %(run_id)s, %(now)s, 1, h, b
  FROM unnest(%(key)b::text[], %(kind)b::text[], %(url)b::text[], %(content_hash)b::text[],
              %(body_hash)b::text[]) AS r(k, kd, u, h, b)
 ORDER BY k
ON CONFLICT (key) DO NOTHING
RETURNING id, key;

-- name: insert_first_versions
-- The parameters of insert_version (store/_records.version_params), each an array.
INSERT INTO record_versions (record_id, version, run_id, content_hash, similarity, body_hash,
                             body_size, body_note, data, created_at)
SELECT r, 1, %(run_id)s, h, NULL, b, s, n, d::jsonb, %(now)s
  FROM unnest(%(record_id)s::bigint[], %(content_hash)b::text[], %(body_hash)b::text[],
              %(body_size)s::bigint[], %(body_note)b::text[], %(data)b::text[])
       AS v(r, h, b, s, n, d);

-- name: insert_sightings
-- The first sighting of a record in the batch is the one kept (WITH ORDINALITY keeps the
-- batch's order within a record); those the run had seen before come back without a row.
INSERT INTO record_seen (run_id, record_id, version, task_id, seen_at)
SELECT %(run_id)s, r, v, t, %(now)s
  FROM unnest(%(record_ids)s::bigint[], %(versions)s::integer[], %(task_ids)s::bigint[])
       WITH ORDINALITY AS s(r, v, t, n)
 ORDER BY r, n
ON CONFLICT (run_id, record_id) DO NOTHING
RETURNING record_id;

-- name: add_host_assets
INSERT INTO run_host_assets (run_id, host, assets_found, assets_stored)
SELECT %(run_id)s, h, f, s
  FROM unnest(%(hosts)b::text[], %(found)s::bigint[], %(stored)s::bigint[]) AS a(h, f, s)
 ORDER BY h
ON CONFLICT (run_id, host) DO UPDATE
   SET assets_found = run_host_assets.assets_found + EXCLUDED.assets_found,
       assets_stored = run_host_assets.assets_stored + EXCLUDED.assets_stored;
