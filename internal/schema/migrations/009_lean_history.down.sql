-- Back to version 8. Its claim and lane_take have no start flag (version
-- 8's binary writes them again when it next migrates; these would be
-- ambiguous overloads of them).
DROP FUNCTION IF EXISTS millrace.claim(text, integer, bigint, boolean, integer, bigint, interval, boolean);
DROP FUNCTION IF EXISTS millrace.lane_take(text, smallint, pg_snapshot, bigint, integer, bigint, integer, bigint, boolean, boolean);
-- An open batch marked started as a whole gets its start row back: what
-- version 8's rescue reads to charge its jobs an attempt.
INSERT INTO millrace.start (slot, tick_id, token, jobs, at)
SELECT t.slot, t.tick_id, t.tick_id, j.ids, t.at
FROM millrace.tick t
CROSS JOIN LATERAL (SELECT array_agg(b.id ORDER BY b.id) AS ids FROM millrace.batch_jobs(t.tick_id) b) j
WHERE t.started AND NOT t.carried AND j.ids IS NOT NULL
  AND NOT EXISTS (SELECT 1 FROM millrace.done d WHERE d.tick_id = t.tick_id);
ALTER TABLE millrace.tick DROP COLUMN started;
CREATE INDEX tick_owner_req ON millrace.tick (owner, req);
-- Back to version 8, whose history has args on every row: a completed
-- attempt written without them gets JSON null (what was sent is not
-- known any more; version 8 reads it as args of null).
UPDATE millrace.finished SET args = 'null'::jsonb WHERE args IS NULL;
ALTER TABLE millrace.finished ALTER COLUMN args SET NOT NULL;
