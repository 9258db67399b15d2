-- Adaptive politeness: the pace a host was slowed to (delay, concurrency), why, and when
-- (recovery runs from then), so that every worker of the fleet keeps to it.
ALTER TABLE host_state ADD COLUMN pace_delay REAL;
ALTER TABLE host_state ADD COLUMN pace_concurrency INTEGER;
ALTER TABLE host_state ADD COLUMN pace_reason TEXT;
ALTER TABLE host_state ADD COLUMN pace_since REAL;
