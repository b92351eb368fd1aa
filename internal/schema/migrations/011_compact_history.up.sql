-- millrace storage protocol, version 11: a completed job is remembered
-- compactly (issue 33).
--
-- Until version 10 every completed attempt was a row of millrace.finished
-- with three index entries (id, finished_at, txid): 349 bytes of WAL a
-- job at 800 jobs/s, the largest write of a healthy job after its own
-- row, and about 200 bytes of storage a job for the retention of
-- completed jobs (24 h). A flush now writes the completed attempts it
-- carries as rows of millrace.completed: one row per queue and block of
-- 32 job ids (id / 32), with the jobs' ids, creation, start and end times
-- in parallel arrays, and their kind, priority, attempt and max attempts
-- in arrays of one element when every job of the row has the same value
-- (an array of one value holds it for every job). The row's three index entries (its block,
-- its time, its transaction) serve every job of it. Every other outcome
-- (failed, snoozed, discarded, cancelled), and a completion inside the
-- caller's transaction (millrace.complete), is still a row of finished,
-- with its args and error.
--
-- A job is found by its block: at most a few rows share one (the jobs of
-- 32 consecutive ids), each read whole. The rows live in the two-hour
-- buckets of completed history (0-35) and are truncated with them.
CREATE TABLE millrace.completed (
    bucket       smallint NOT NULL,
    blk          bigint NOT NULL,
    queue        text NOT NULL,
    owner        int NOT NULL,
    at           timestamptz NOT NULL,
    txid         xid8 NOT NULL DEFAULT pg_current_xact_id(),
    kind         text[] NOT NULL,
    priority     smallint[] NOT NULL,
    attempt      int[] NOT NULL,
    max_attempts int[] NOT NULL,
    ids          bigint[] NOT NULL,
    created_at   timestamptz[] NOT NULL,
    started_at   timestamptz[] NOT NULL,
    finished_at  timestamptz[] NOT NULL
) PARTITION BY LIST (bucket);
CREATE INDEX completed_blk ON millrace.completed (blk);
CREATE INDEX completed_at ON millrace.completed (at);
CREATE INDEX completed_txid ON millrace.completed (txid);
DO $$
BEGIN
    FOR b IN 0 .. 35 LOOP
        EXECUTE format('CREATE TABLE millrace.%I PARTITION OF millrace.completed FOR VALUES IN (%s)'
                       ' WITH (autovacuum_enabled = false, toast.autovacuum_enabled = false)', 'completed_' || b, b);
    END LOOP;
END $$;

-- The history view shows a completed row's jobs one by one, as before
-- (an array of one element holds the value of every job of the row).
-- A filter on a job's id cannot reach the rows' block index through the
-- view's arrays: millrace.job_history(id) reads one job's history by it.
CREATE OR REPLACE VIEW millrace.history AS
SELECT h.id, h.attempt,
       (ARRAY['completed', 'failed', 'discarded', 'cancelled', 'snoozed'])[h.state] AS state,
       h.queue, h.kind, h.args, h.priority, h.max_attempts, h.created_at, h.started_at, h.finished_at, h.error, h.owner
FROM millrace.finished h
UNION ALL
SELECT u.id, c.attempt[CASE WHEN cardinality(c.attempt) = 1 THEN 1 ELSE u.i END], 'completed', c.queue,
       c.kind[CASE WHEN cardinality(c.kind) = 1 THEN 1 ELSE u.i END], NULL::jsonb,
       c.priority[CASE WHEN cardinality(c.priority) = 1 THEN 1 ELSE u.i END],
       c.max_attempts[CASE WHEN cardinality(c.max_attempts) = 1 THEN 1 ELSE u.i END],
       u.created_at, u.started_at, u.finished_at, NULL::text, c.owner
FROM millrace.completed c
CROSS JOIN LATERAL unnest(c.ids, c.created_at, c.started_at, c.finished_at) WITH ORDINALITY AS u(id, created_at, started_at, finished_at, i);

-- The reclaim takes the unique keys its caller judged before locking the
-- slot (uniq_judge replaces uniq_kept).
DROP FUNCTION IF EXISTS millrace.reclaim_slot(smallint, smallint, smallint);
DROP FUNCTION IF EXISTS millrace.uniq_kept(smallint);
