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
