-- millrace storage protocol, version 9: history keeps a completed job
-- without its args (issue 33). A completed attempt's row was the largest
-- write of a job (its args copied once more, ~100 bytes of a bench job's
-- 290 of heap per completion): its queue, kind, attempt, times and process
-- are kept; args stay for every other state (failed, snoozed, discarded,
-- cancelled), which a person reads to see what went wrong or to retry.
-- Rows written before this version keep their args.
ALTER TABLE millrace.finished ALTER COLUMN args DROP NOT NULL;

-- A claim that hands every job it takes to an idle worker (claim_start
-- with p_start at least p_max_jobs, the common case when a process keeps
-- up) marks its new batch started as a whole on the tick, instead of a
-- start row beside it (a heap row and an index entry per claim: at 800
-- jobs/s a claim took 1.5 jobs, and each paid ~200 bytes of WAL for it).
-- claim and lane_take take the flag: their old signatures go (functions
-- live in functions/).
ALTER TABLE millrace.tick ADD COLUMN started boolean NOT NULL DEFAULT false;
DROP FUNCTION IF EXISTS millrace.claim(text, integer, bigint, boolean, integer, bigint, interval);
DROP FUNCTION IF EXISTS millrace.lane_take(text, smallint, pg_snapshot, bigint, integer, bigint, integer, bigint, boolean);
-- The tick's (owner, req) index served only the replay of a claim whose
-- reply was lost (claim's p_retry: rare, after a dropped connection) and
-- cost an index entry per claim; the replay now reads the queue's ticks
-- by the (queue, priority, tick_id) index.
DROP INDEX millrace.tick_owner_req;
