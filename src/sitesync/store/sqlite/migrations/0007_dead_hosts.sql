-- Dead hosts: a host's consecutive host-level failures in a run (so that a worker taking
-- the host over continues the count), and, once its tasks were ended, the outcome they
-- got and why (so that tasks of the host admitted later end the same way at once).
ALTER TABLE run_hosts ADD COLUMN failures INTEGER NOT NULL DEFAULT 0;
ALTER TABLE run_hosts ADD COLUMN ended_as TEXT;
ALTER TABLE run_hosts ADD COLUMN ended_reason TEXT;
