-- A registered domain's own request profile (issue 31): the headers, cookies, auth and
-- proxy a `domains import` file gave it, as a JSON object in the form of a [sites."HOST"]
-- table; NULL for none. A scan of its scope records it in the run's `sites` setting.
ALTER TABLE domains ADD COLUMN request_profile jsonb;
