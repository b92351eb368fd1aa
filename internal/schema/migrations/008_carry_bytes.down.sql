-- Back to version 7: the binary of version 7 writes its functions again
-- when it next migrates (the newest function set's hash is not its own);
-- its rotate has one parameter fewer, and would otherwise be an ambiguous
-- overload of this one.
DROP FUNCTION IF EXISTS millrace.rotate(interval, bigint, bigint, bigint);
-- Version 7's queue_counts has no oldest_available, and live_keys and
-- batch_keys are not its own.
DROP FUNCTION IF EXISTS millrace.queue_counts();
DROP FUNCTION IF EXISTS millrace.live_keys();
DROP FUNCTION IF EXISTS millrace.batch_keys(bigint);
-- Version 7's insert_many returns no state, and its uniq_blocks a boolean.
DROP FUNCTION IF EXISTS millrace.insert_many(text[], jsonb[], text[], integer[], timestamp with time zone[], integer[], text[], integer[], timestamp with time zone[], integer[], boolean);
DROP FUNCTION IF EXISTS millrace.uniq_blocks(bigint, integer, timestamp with time zone, timestamp with time zone);
-- The park's jobs go back into the current slot of the ring, verbatim
-- (same ids and txids: claims see them as before), and the park goes.
INSERT INTO millrace.job (slot, id, queue, kind, args, priority, attempt, max_attempts, created_at, txid, ready_at, timeout_ms)
SELECT (SELECT r.segment FROM millrace.rotation r ORDER BY r.id DESC LIMIT 1), j.id, j.queue, j.kind, j.args, j.priority,
       j.attempt, j.max_attempts, j.created_at, j.txid, j.ready_at, j.timeout_ms
FROM millrace.job_4 j;
DROP TABLE millrace.job_4;
DROP FUNCTION IF EXISTS millrace.reclaim_slot(smallint, smallint, smallint);
DROP FUNCTION IF EXISTS millrace.park_slot();
DROP FUNCTION IF EXISTS millrace.reclaim_park(bigint, bigint, smallint);
DROP FUNCTION IF EXISTS millrace.rotate(interval, bigint, bigint, bigint, interval);
