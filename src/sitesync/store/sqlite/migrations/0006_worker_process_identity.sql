-- What proves, on the worker's own machine, that its process is gone: the boot (and pid
-- namespace) it ran in and its process start time, so a reused pid is not mistaken for it.
ALTER TABLE workers ADD COLUMN boot_id TEXT;
ALTER TABLE workers ADD COLUMN proc_start INTEGER;
