-- Versioned AssetRecords on SQLite (store/sqlite/records.py). The same query names as
-- store/postgres/records.sql: read them side by side.

-- name: select_record
-- The fast path, without a lock: a record seen again unchanged costs this lookup and
-- one sighting.
SELECT id, latest_version, latest_hash, latest_body_hash FROM records WHERE key = :key;

-- name: insert_record
-- A key seen for the first time, with its first version as the latest.
INSERT INTO records (key, kind, url, first_run_id, first_seen_at, latest_version, latest_hash,
                     latest_body_hash)
VALUES (:key, :kind, :url, :run_id, :now, 1, :content_hash, :body_hash)
ON CONFLICT (key) DO NOTHING
RETURNING id;

-- name: select_records_by_key
-- The batch's keys as the store has them (record_batch.py): one lookup for all of them.
SELECT key, id, latest_version, latest_hash, latest_body_hash
  FROM records
 WHERE key IN (SELECT value FROM json_each(:keys));

-- name: insert_records
-- A key new to the store, for executemany (record_batch.py): as insert_record, without
-- RETURNING; the batch reads the ids back with select_records_by_key.
INSERT INTO records (key, kind, url, first_run_id, first_seen_at, latest_version, latest_hash,
                     latest_body_hash)
VALUES (:key, :kind, :url, :run_id, :now, 1, :content_hash, :body_hash);

-- name: select_seen_in_run
-- Which of the batch's records the run has already seen.
SELECT record_id
  FROM record_seen
 WHERE run_id = :run_id AND record_id IN (SELECT value FROM json_each(:record_ids));

-- name: update_record_latest
UPDATE records
   SET latest_version = :version, latest_hash = :content_hash, latest_body_hash = :body_hash
 WHERE id = :record_id;

-- name: select_version_content
SELECT body_hash, body_size, data FROM record_versions
 WHERE record_id = :record_id AND version = :version;

-- name: insert_body
-- Content-addressed: a body already kept (the same bytes under another key) stays as it is.
INSERT INTO record_bodies (content_hash, size, compression, data, created_at)
VALUES (:content_hash, :size, :compression, :data, :now)
ON CONFLICT (content_hash) DO NOTHING;

-- name: insert_version
INSERT INTO record_versions (record_id, version, run_id, content_hash, similarity, body_hash,
                             body_size, body_note, data, created_at)
VALUES (:record_id, :version, :run_id, :content_hash, :similarity, :body_hash,
        :body_size, :body_note, :data, :now);

-- name: insert_seen
INSERT INTO record_seen (run_id, record_id, version, task_id, seen_at)
VALUES (:run_id, :record_id, :version, :task_id, :now)
ON CONFLICT (run_id, record_id) DO NOTHING;

-- name: update_seen
-- The record changed again within the run: the run saw the newer version last.
UPDATE record_seen SET version = :version, seen_at = :now
 WHERE run_id = :run_id AND record_id = :record_id;

-- name: add_host_assets
-- One host at a time (executemany; PostgreSQL's takes the hosts as arrays).
INSERT INTO run_host_assets (run_id, host, assets_found, assets_stored)
VALUES (:run_id, :host, :found, :stored)
ON CONFLICT (run_id, host) DO UPDATE
   SET assets_found = assets_found + excluded.assets_found,
       assets_stored = assets_stored + excluded.assets_stored;

-- name: select_history
SELECT r.key, r.kind, r.url, v.version, v.run_id, v.content_hash, v.similarity, v.body_hash,
       v.body_size, v.body_note, v.data, v.created_at
  FROM records AS r
  JOIN record_versions AS v ON v.record_id = r.id
 WHERE r.key = :key
 ORDER BY v.version;

-- name: select_run_records
SELECT r.key, r.kind, r.url, v.version, v.run_id, v.content_hash, v.similarity, v.body_hash,
       v.body_size, v.body_note, v.data, v.created_at
  FROM record_seen AS s
  JOIN records AS r ON r.id = s.record_id
  JOIN record_versions AS v ON v.record_id = s.record_id AND v.version = s.version
 WHERE s.run_id = :run_id AND (:kind IS NULL OR r.kind = :kind)
 ORDER BY r.key;

-- name: diff_only_in
-- Keys :run_id saw and :other_run_id did not: added or removed, by which side is which.
SELECT r.key, r.kind, r.url, s.version
  FROM record_seen AS s
  JOIN records AS r ON r.id = s.record_id
 WHERE s.run_id = :run_id
   AND NOT EXISTS (SELECT 1 FROM record_seen AS o
                    WHERE o.run_id = :other_run_id AND o.record_id = s.record_id)
 ORDER BY r.key;

-- name: diff_changed
-- Keys both runs saw with different content. similarity: the largest single step between
-- the two versions (the lowest similarity of the versions in between).
SELECT r.key, r.kind, r.url, a.version AS version_a, b.version AS version_b,
       (SELECT MIN(v.similarity) FROM record_versions AS v
         WHERE v.record_id = a.record_id
           AND v.version > MIN(a.version, b.version)
           AND v.version <= MAX(a.version, b.version)) AS similarity
  FROM record_seen AS a
  JOIN record_seen AS b ON b.record_id = a.record_id AND b.run_id = :run_b
  JOIN records AS r ON r.id = a.record_id
  JOIN record_versions AS va ON va.record_id = a.record_id AND va.version = a.version
  JOIN record_versions AS vb ON vb.record_id = b.record_id AND vb.version = b.version
 WHERE a.run_id = :run_a AND va.content_hash <> vb.content_hash
 ORDER BY r.key;

-- name: select_body
SELECT compression, data FROM record_bodies WHERE content_hash = :content_hash;

-- name: select_run_assets
SELECT host, assets_found, assets_stored FROM run_host_assets
 WHERE run_id = :run_id
 ORDER BY host;

-- name: select_task_records
-- The records a run first saw on one page (sitesync why): a range of the run's sightings,
-- no index of its own (a diagnostic read, not worth its bytes per sighting).
SELECT r.key, r.kind, r.url, v.version, v.run_id, v.content_hash, v.similarity, v.body_hash,
       v.body_size, v.body_note, v.data, v.created_at
  FROM record_seen AS s
  JOIN records AS r ON r.id = s.record_id
  JOIN record_versions AS v ON v.record_id = s.record_id AND v.version = s.version
 WHERE s.run_id = :run_id AND s.task_id = :task_id
 ORDER BY r.key;

-- name: select_pages_linking_to
-- Pages of the run whose links record lists the URL (sitesync why of a URL never
-- admitted): a scan of the run's links records, for a diagnostic, not the crawl.
SELECT r.url
  FROM record_seen AS s
  JOIN records AS r ON r.id = s.record_id AND r.kind = 'links'
  JOIN record_versions AS v ON v.record_id = s.record_id AND v.version = s.version
 WHERE s.run_id = :run_id
   AND (EXISTS (SELECT 1 FROM json_each(v.data, '$.internal') AS j WHERE j.value = :url)
        OR EXISTS (SELECT 1 FROM json_each(v.data, '$.external') AS j WHERE j.value = :url))
 ORDER BY s.seen_at
 LIMIT :limit;
