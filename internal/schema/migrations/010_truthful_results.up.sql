-- millrace storage protocol, version 10: results and counts that say what
-- happened.
-- A duplicate insert of a unique job reports the existing job's due time
-- whatever its state (it was NULL unless the job was scheduled, and Go
-- showed 0001-01-01): uniq_blocks returns when the job's final attempt
-- started beside its final state, from the same probe of history; a
-- return type is not replaced. SQL callers get millrace.enqueue_unique,
-- which says whether the insert was a duplicate (functions/insert.sql).
DROP FUNCTION IF EXISTS millrace.uniq_blocks(bigint, integer, timestamp with time zone, timestamp with time zone);
-- queue_counts counts the cancelled jobs history still holds, from the
-- same tally as the completed and discarded ones (they appeared in no
-- count): a return type is not replaced.
DROP FUNCTION IF EXISTS millrace.queue_counts();
-- A retried job names the job its retry made (millrace.retried_as, for a
-- reader whose role may not read millrace.retried): a new function, in
-- functions/admin.sql.
