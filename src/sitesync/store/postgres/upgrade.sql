-- Bringing the schema up to date (PostgreSQL): the bookkeeping around migrations/.

-- name: lock_migrations
-- Two processes starting at once apply the migrations one after the other: the
-- second waits here, then finds them recorded. Released at commit. The key is any
-- constant of our own: the bytes of "sitesync" read as one bigint.
SELECT pg_advisory_xact_lock(x'7369746573796e63'::bigint);

-- name: schema_exists
SELECT 1 AS found FROM pg_namespace WHERE nspname = %(schema)s;

-- name: create_migrations_table
CREATE TABLE IF NOT EXISTS schema_migrations (
    version    integer          PRIMARY KEY,
    name       text             NOT NULL,
    applied_at double precision NOT NULL
);

-- name: select_migrations
SELECT version FROM schema_migrations ORDER BY version;

-- name: insert_migration
INSERT INTO schema_migrations (version, name, applied_at) VALUES (%(version)s, %(name)s, %(now)s);

-- name: migrations_table_exists
-- Through the connection's search_path, as every query of the store.
SELECT to_regclass('schema_migrations') IS NOT NULL AS found;
