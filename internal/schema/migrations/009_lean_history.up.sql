-- millrace storage protocol, version 9: history keeps a completed job
-- without its args (issue 33). A completed attempt's row was the largest
-- write of a job (its args copied once more, ~100 bytes of a bench job's
-- 290 of heap per completion): its queue, kind, attempt, times and process
-- are kept; args stay for every other state (failed, snoozed, discarded,
-- cancelled), which a person reads to see what went wrong or to retry.
-- Rows written before this version keep their args.
ALTER TABLE millrace.finished ALTER COLUMN args DROP NOT NULL;
