-- Tombstones (issue 30): the versions a scan writes for the pages it found gone (content
-- hash 'gone'), found by run for the change report without reading every version.
CREATE INDEX record_versions_gone ON record_versions (run_id) WHERE content_hash = 'gone';
