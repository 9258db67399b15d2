-- A run's settings travel with it: what it was created with (every setting that decides
-- what is crawled and how, as JSON), a version that grows with each change, so every
-- worker of the run notices a change on its next status read, and each change with its
-- time. Runs created before have no settings (NULL): their processes use their own.
ALTER TABLE runs ADD COLUMN settings TEXT;
ALTER TABLE runs ADD COLUMN settings_version INTEGER NOT NULL DEFAULT 0;
CREATE TABLE run_setting_changes (
    run_id     INTEGER NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
    version    INTEGER NOT NULL,  -- the run's settings_version after the change
    name       TEXT    NOT NULL,
    old_value  TEXT    NOT NULL,  -- JSON
    new_value  TEXT    NOT NULL,  -- JSON
    changed_at REAL    NOT NULL,
    PRIMARY KEY (run_id, version, name)
) WITHOUT ROWID;
-- A schedule's settings: each scan it starts is created with them.
ALTER TABLE schedules ADD COLUMN settings TEXT;
