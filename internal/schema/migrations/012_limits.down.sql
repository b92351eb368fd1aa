-- Back to version 11: limits are forgotten (a queue runs as its workers
-- allow), and the claim loses its p_held and p_buffer.
DROP FUNCTION IF EXISTS millrace.claim(text, integer, bigint, boolean, integer, bigint, interval, boolean, integer, integer);
DROP FUNCTION IF EXISTS millrace.claim_start(text, integer, bigint, boolean, integer, bigint, interval, integer, integer, integer);
DROP FUNCTION IF EXISTS millrace.set_limit(text, integer, integer, interval);
DROP FUNCTION IF EXISTS millrace.queue_limits();
DROP FUNCTION IF EXISTS millrace.rate_window(interval);
DROP TABLE millrace.hold;
DROP SEQUENCE millrace.hold_seq;
ALTER TABLE millrace.queue_state DROP COLUMN running, DROP COLUMN rate, DROP COLUMN rate_per;
