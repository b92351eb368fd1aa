-- Back to version 9: the binary of version 9 writes its functions again
-- when it next migrates (the newest function set's hash is not its own).
-- Its uniq_blocks returns no final_at (a return type is not replaced), and
-- enqueue_unique, final_attempt and retried_as are not its own.
DROP FUNCTION IF EXISTS millrace.uniq_blocks(bigint, integer, timestamp with time zone, timestamp with time zone);
DROP FUNCTION IF EXISTS millrace.enqueue_unique(text, jsonb, text, integer, timestamp with time zone, integer, boolean, text, integer, timestamp with time zone, integer);
DROP FUNCTION IF EXISTS millrace.final_attempt(bigint, timestamp with time zone);
DROP FUNCTION IF EXISTS millrace.retried_as(bigint);
-- Version 9's queue_counts has no cancelled column.
DROP FUNCTION IF EXISTS millrace.queue_counts();
