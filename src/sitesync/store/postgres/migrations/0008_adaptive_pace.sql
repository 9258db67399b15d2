-- Adaptive politeness: the pace a host was slowed to (delay, concurrency), why, and when
-- (recovery runs from then), so that every worker of the fleet keeps to it.
ALTER TABLE host_state ADD COLUMN pace_delay double precision;
ALTER TABLE host_state ADD COLUMN pace_concurrency integer;
ALTER TABLE host_state ADD COLUMN pace_reason text;
ALTER TABLE host_state ADD COLUMN pace_since double precision;
