-- Admission at the batch's cost (issue 13): the foreign key from tasks to runs goes. Its
-- check ran once per admitted URL, a row lock (FOR KEY SHARE) on the run's one row each
-- time, shared by every writer of the run: 12 % of the store's time in the lifecycle
-- benchmark. Runs are never deleted, and every admission reads its run in the same
-- transaction first (see docs/decisions.md).
ALTER TABLE tasks DROP CONSTRAINT tasks_run_id_fkey;
