-- Back to version 11: limits are forgotten (a queue runs as its workers
-- allow), and the claim loses its p_held and p_buffer.
DROP FUNCTION IF EXISTS millrace.claim(text, integer, bigint, boolean, integer, bigint, interval, boolean, integer, integer, interval);
DROP FUNCTION IF EXISTS millrace.claim_start(text, integer, bigint, boolean, integer, bigint, interval, integer, integer, integer, interval);
DROP FUNCTION IF EXISTS millrace.set_limit(text, integer, integer, interval, integer, text[], integer, interval);
DROP FUNCTION IF EXISTS millrace.queue_limits();
DROP FUNCTION IF EXISTS millrace.rate_window(interval);
DROP TABLE millrace.hold;
DROP TABLE millrace.keyhold;
DROP SEQUENCE millrace.keyhold_seq;
DROP TABLE millrace.keyrate;
DROP SEQUENCE millrace.keyrate_seq;
DROP FUNCTION IF EXISTS millrace.key_defer(text, integer, bigint, bigint, millrace.job[], integer, integer, interval, text[], integer[], interval, timestamp with time zone, jsonb, jsonb, jsonb);
DROP FUNCTION IF EXISTS millrace.job_key(text, jsonb, text[]);
DROP FUNCTION IF EXISTS millrace.job_key_parts(text, jsonb, text[]);
DROP FUNCTION IF EXISTS millrace.key_held(text, text, integer);
DROP FUNCTION IF EXISTS millrace.keyhold_put(text, integer, text[], integer[], integer[], timestamp with time zone[], boolean);
DROP FUNCTION IF EXISTS millrace.keys_space();
DROP FUNCTION IF EXISTS millrace.key_limits(text, integer);
DROP FUNCTION IF EXISTS millrace.flush(integer, bigint, bigint[], bigint[], bigint[], smallint[], integer[], text[], timestamp with time zone[], text[], text[], jsonb[], smallint[], integer[], timestamp with time zone[], integer[], timestamp with time zone[], timestamp with time zone[], bigint[], bigint[], text[], boolean, text[], text[], integer[]);
DROP SEQUENCE millrace.hold_seq;
ALTER TABLE millrace.queue_state DROP COLUMN running, DROP COLUMN rate, DROP COLUMN rate_per, DROP COLUMN per_key, DROP COLUMN per_key_by, DROP COLUMN key_rate, DROP COLUMN key_rate_per;
