-- millrace storage protocol, version 8: what one reclaim carries is bounded
-- in bytes (issue 20.4: a backlog of 300 jobs of 1 MB in a queue nobody
-- worked, under the carry limit of 5,000 jobs, was copied at every reclaim:
-- 2 GB of WAL in 40 s). rotate takes p_max_carry_bytes, and a slot whose
-- backlog is over it stays in place until the backlog is claimed
-- (functions/ring.sql, docs/architecture.md). Its version-7 signature is
-- dropped here; the new one, like every function, lives in functions/.
-- IF EXISTS: a database upgraded from version 6 or older reaches this point
-- without it (version 7's own migration dropped version 6's signature, and
-- functions are applied after the migrations).
DROP FUNCTION IF EXISTS millrace.rotate(interval, bigint, bigint);
-- queue_counts gains oldest_available (its live counts come from
-- live_counts, which reads no payload): a return type is not replaced.
DROP FUNCTION IF EXISTS millrace.queue_counts();
-- insert_many returns each job's state (a duplicate's read under its key's
-- lock, so that the client asks no second question), and uniq_blocks the
-- final state it found: return types are not replaced.
DROP FUNCTION IF EXISTS millrace.insert_many(text[], jsonb[], text[], integer[], timestamp with time zone[], integer[], text[], integer[], timestamp with time zone[], integer[], boolean);
DROP FUNCTION IF EXISTS millrace.uniq_blocks(bigint, integer, timestamp with time zone, timestamp with time zone);
-- The park (issue 31.7): a partition of job outside the ring, slot 4, where
-- a reclaim moves a backlog too large to carry (a queue nobody works),
-- once, instead of leaving its whole slot in place: with an unserved queue
-- in every slot, no slot could be reclaimed and the ring stopped. Claims
-- read it as they read every slot; rotate empties it into the ring when
-- what it holds has mostly been claimed (functions/ring.sql).
CREATE TABLE millrace.job_4 PARTITION OF millrace.job FOR VALUES IN (4) WITH (autovacuum_enabled = false);
-- reclaim_slot gains where the unclaimed rows go (the ring or the park).
DROP FUNCTION IF EXISTS millrace.reclaim_slot(smallint, smallint);
-- rotate gains p_wait (issue 31.8: the leader's round that waits for a
-- slot's locks while it cancels the readers holding them). A database made
-- by this version before it has the four-argument rotate.
DROP FUNCTION IF EXISTS millrace.rotate(interval, bigint, bigint, bigint);
-- rotate returns the process ids of a blocked slot's holders in a column
-- (issue 32.2: the leader parsed them out of detail, where a queue's name
-- could name a backend): a return type is not replaced. A database made
-- by this version before it has the five-argument rotate without them,
-- and must be made again.
DROP FUNCTION IF EXISTS millrace.rotate(interval, bigint, bigint, bigint, interval);
