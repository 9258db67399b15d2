-- A run is created once, however often its creating transaction is replayed: each
-- create_run or start_scan call names its run with a random token, so a transaction run
-- again after its commit's acknowledgement was lost (the connection dropped just then)
-- finds the run it made instead of making a second one.
ALTER TABLE runs ADD COLUMN create_token text;
CREATE UNIQUE INDEX runs_create_token ON runs (create_token);
