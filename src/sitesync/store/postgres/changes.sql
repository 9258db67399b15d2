-- A scan's change report, on PostgreSQL (store/_changes.py; the same query names as
-- store/sqlite/changes.sql: read them side by side). Pages are records of kind 'page';
-- a page's host is that of the task it was seen on.

-- name: select_page_changes
-- Every page the run saw, per host: new (the earlier scan did not see it), changed (it saw
-- another version), unchanged (the same version) by how the run knew it, and the bodies a
-- 304 or a sitemap skip stood for (the size of the version seen).
SELECT COALESCE(t.host, '') AS host,
       CAST(SUM(CASE WHEN o.version IS NULL THEN 1 ELSE 0 END) AS BIGINT) AS new,
       CAST(SUM(CASE WHEN o.version <> s.version THEN 1 ELSE 0 END) AS BIGINT) AS changed,
       CAST(SUM(CASE WHEN o.version = s.version AND t.outcome = 'not_modified'
                     THEN 1 ELSE 0 END) AS BIGINT) AS unchanged_not_modified,
       CAST(SUM(CASE WHEN o.version = s.version AND t.outcome = 'unchanged_per_sitemap'
                     THEN 1 ELSE 0 END) AS BIGINT) AS unchanged_per_sitemap,
       CAST(SUM(CASE WHEN o.version = s.version
                      AND COALESCE(t.outcome, '') NOT IN ('not_modified', 'unchanged_per_sitemap')
                     THEN 1 ELSE 0 END) AS BIGINT) AS unchanged_same_content,
       CAST(SUM(CASE WHEN t.outcome IN ('not_modified', 'unchanged_per_sitemap')
                     THEN COALESCE(v.body_size, 0) ELSE 0 END) AS BIGINT) AS bytes_skipped
  FROM record_seen AS s
  JOIN records AS r ON r.id = s.record_id AND r.kind = 'page'
  LEFT JOIN tasks AS t ON t.id = s.task_id
  LEFT JOIN record_seen AS o ON o.run_id = %(since_run_id)s AND o.record_id = s.record_id
  LEFT JOIN record_versions AS v ON v.record_id = s.record_id AND v.version = s.version
 WHERE s.run_id = %(run_id)s AND (%(host)s::text IS NULL OR t.host = %(host)s)
 GROUP BY COALESCE(t.host, '');

-- name: select_pages_missing
-- Pages the earlier scan saw and the run did not, per host (the earlier scan's): gone when
-- a scan after the earlier one, up to the run, wrote their tombstone.
SELECT COALESCE(pt.host, '') AS host,
       CAST(SUM(CASE WHEN g.record_id IS NOT NULL THEN 1 ELSE 0 END) AS BIGINT) AS gone,
       CAST(SUM(CASE WHEN g.record_id IS NULL THEN 1 ELSE 0 END) AS BIGINT) AS not_reached
  FROM record_seen AS o
  JOIN records AS r ON r.id = o.record_id AND r.kind = 'page'
  LEFT JOIN tasks AS pt ON pt.id = o.task_id
  LEFT JOIN (SELECT DISTINCT record_id FROM record_versions
              WHERE content_hash = 'gone' AND run_id > %(since_run_id)s AND run_id <= %(run_id)s)
       AS g ON g.record_id = o.record_id
 WHERE o.run_id = %(since_run_id)s AND (%(host)s::text IS NULL OR pt.host = %(host)s)
   AND NOT EXISTS (SELECT 1 FROM record_seen AS n
                    WHERE n.run_id = %(run_id)s AND n.record_id = o.record_id)
 GROUP BY COALESCE(pt.host, '');

-- name: select_host_transfers
-- What the run asked each host and downloaded: every kept attempt at its tasks.
SELECT t.host, CAST(COUNT(*) AS BIGINT) AS requests,
       CAST(COALESCE(SUM(a.bytes), 0) AS BIGINT) AS bytes_downloaded
  FROM tasks AS t
  JOIN attempts AS a ON a.task_id = t.id
 WHERE t.run_id = %(run_id)s AND (%(host)s::text IS NULL OR t.host = %(host)s)
 GROUP BY t.host;
