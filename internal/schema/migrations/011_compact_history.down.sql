-- Back to version 10: every completed job of millrace.completed becomes a
-- row of millrace.finished again, in its bucket, so no history is lost.
CREATE OR REPLACE VIEW millrace.history AS
SELECT h.id, h.attempt,
       (ARRAY['completed', 'failed', 'discarded', 'cancelled', 'snoozed'])[h.state] AS state,
       h.queue, h.kind, h.args, h.priority, h.max_attempts, h.created_at, h.started_at, h.finished_at, h.error, h.owner
FROM millrace.finished h;
INSERT INTO millrace.finished (bucket, id, attempt, state, queue, kind, args, priority, max_attempts, created_at,
                              started_at, finished_at, error, owner, txid)
SELECT c.bucket, u.id, c.attempt[CASE WHEN cardinality(c.attempt) = 1 THEN 1 ELSE u.i END], 1, c.queue,
       c.kind[CASE WHEN cardinality(c.kind) = 1 THEN 1 ELSE u.i END], NULL,
       c.priority[CASE WHEN cardinality(c.priority) = 1 THEN 1 ELSE u.i END],
       c.max_attempts[CASE WHEN cardinality(c.max_attempts) = 1 THEN 1 ELSE u.i END],
       u.created_at, u.started_at, u.finished_at, NULL, c.owner, c.txid
FROM millrace.completed c
CROSS JOIN LATERAL unnest(c.ids, c.created_at, c.started_at, c.finished_at) WITH ORDINALITY AS u(id, created_at, started_at, finished_at, i);
DROP TABLE millrace.completed;
DROP FUNCTION IF EXISTS millrace.job_history(bigint);
DROP FUNCTION IF EXISTS millrace.completed_since(timestamp with time zone);
DROP FUNCTION IF EXISTS millrace.pick(anyarray, bigint);
DROP FUNCTION IF EXISTS millrace.id_block(bigint);
-- Version 11's reclaim signature and key judge: the older binary writes its own.
DROP FUNCTION IF EXISTS millrace.reclaim_slot(smallint, smallint, smallint, millrace.uniq[], bigint[]);
DROP FUNCTION IF EXISTS millrace.uniq_judge(smallint, bigint[]);
-- Version 11's promote round without a NOTIFY (the older binary's promote sends its own).
DROP FUNCTION IF EXISTS millrace.promote_due(bigint, bigint);
-- Version 11's peek before a claim.
DROP FUNCTION IF EXISTS millrace.claim_peek(text);
