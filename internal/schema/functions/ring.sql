-- millrace functions, the ring of slots: advisory lock spaces, which slot is current, rotation and reclaim (TRUNCATE of a slot after carrying what is unfinished forward).
--
-- The current definition of every function lives once, in internal/schema/functions/;
-- Migrate applies these files with CREATE OR REPLACE after the versioned migrations,
-- in file-name order, in the same transaction. A signature change needs a migration
-- that drops the old function (docs/contributing.md).

CREATE OR REPLACE FUNCTION millrace.lock_space()
 RETURNS integer
 LANGUAGE sql
 IMMUTABLE
AS $function$ SELECT 1836412274 $function$;
COMMENT ON FUNCTION millrace.lock_space() IS
    'lock_space is the first key of millrace''s transaction-level advisory locks on leases: second key 0 serializes leader takeovers and renewals, a process id the renewals of that process''s heartbeat with rescue''s judgment of it.';

CREATE OR REPLACE FUNCTION millrace.claim_space()
 RETURNS integer
 LANGUAGE sql
 IMMUTABLE
AS $function$ SELECT 1836412276 $function$;
COMMENT ON FUNCTION millrace.claim_space() IS
    'claim_space is the advisory lock space of claims, one key per queue: claims of one queue run one at a time.';

CREATE OR REPLACE FUNCTION millrace.fence_space()
 RETURNS integer
 LANGUAGE sql
 IMMUTABLE
AS $function$ SELECT 1836412275 $function$;
COMMENT ON FUNCTION millrace.fence_space() IS
    'fence_space is the advisory lock space of batch fences (second key: tick id modulo 2^31-1), taken by whoever changes a batch''s lease.';

CREATE OR REPLACE FUNCTION millrace.flush_space()
 RETURNS integer
 LANGUAGE sql
 IMMUTABLE
AS $function$ SELECT 1836412277 $function$;
COMMENT ON FUNCTION millrace.flush_space() IS
    'flush_space is the advisory lock space of ack flushes (second key: owner process), so a replay waits for the flush it replays.';

CREATE OR REPLACE FUNCTION millrace.keys_space()
 RETURNS integer
 LANGUAGE sql
 IMMUTABLE
AS $function$ SELECT 1836412280 $function$;
COMMENT ON FUNCTION millrace.keys_space() IS
    'keys_space is the advisory lock space of a process''s map of the keys it holds of a queue''s per-key limit (second key: hashtext of queue and owner), taken by whoever writes the map (keyhold_put), last of its locks.';

CREATE OR REPLACE FUNCTION millrace.maint_space()
 RETURNS integer
 LANGUAGE sql
 IMMUTABLE
AS $function$ SELECT 1836412278 $function$;
COMMENT ON FUNCTION millrace.maint_space() IS
    'maint_space is the advisory lock space of maintenance steps, each run in one process at a time (second key: 0 rotation and reclaim, 1 rescue, 2 promotion, 3 tally, 4 expiry of history). Each step checks its caller''s leader term after taking its key (fence_leader).';

CREATE OR REPLACE FUNCTION millrace.uniq_space()
 RETURNS integer
 LANGUAGE sql
 IMMUTABLE
AS $function$ SELECT 1836412279 $function$;
COMMENT ON FUNCTION millrace.uniq_space() IS
    'uniq_space is the advisory lock space of unique keys (second key: a hash of the key), so that two inserts of one key run one after the other.';

CREATE OR REPLACE FUNCTION millrace.schema_version()
 RETURNS integer
 LANGUAGE sql
 STABLE SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
 SET jit TO 'off'
AS $function$
    SELECT coalesce(max(version), 0) FROM millrace.migration
$function$;
COMMENT ON FUNCTION millrace.schema_version() IS
    'schema_version is the newest migration applied.';

CREATE OR REPLACE FUNCTION millrace.current_segment()
 RETURNS smallint
 LANGUAGE plpgsql
 STABLE
AS $function$
-- PL/pgSQL, not SQL: its statement's plan is cached for the session. An
-- SQL function that is not inlined is planned at every call, and this one
-- runs several times per job.
BEGIN
    RETURN (SELECT r.segment FROM millrace.rotation r ORDER BY r.id DESC LIMIT 1);
END $function$;
COMMENT ON FUNCTION millrace.current_segment() IS
    'current_segment is the current slot of the ring, from the newest rotation: producers and claims write into it.';

CREATE OR REPLACE FUNCTION millrace.current_gen()
 RETURNS smallint
 LANGUAGE plpgsql
 STABLE
AS $function$
-- PL/pgSQL for a plan cached for the session (see current_segment).
BEGIN
    RETURN (SELECT g.gen FROM millrace.sched_gen g ORDER BY g.id DESC LIMIT 1);
END $function$;
COMMENT ON FUNCTION millrace.current_gen() IS
    'current_gen is the active generation of the schedule, from the newest compaction.';

CREATE OR REPLACE FUNCTION millrace.slots()
 RETURNS smallint
 LANGUAGE sql
 IMMUTABLE
AS $function$ SELECT 4::smallint $function$;
COMMENT ON FUNCTION millrace.slots() IS
    'The ring has four slots: one current (producers write into it), the others waiting to be reclaimed or clean. Scheduled jobs have two generations.';

CREATE OR REPLACE FUNCTION millrace.slot_tables(p_slot integer)
 RETURNS text[]
 LANGUAGE sql
 IMMUTABLE
AS $function$ SELECT ARRAY(SELECT format('millrace.%I', t || '_' || p_slot)
                   FROM unnest(ARRAY['job', 'tick', 'lease', 'ack', 'done', 'flush', 'promote', 'cancel', 'uniq',
                                     'tally_round', 'heartbeat', 'leader', 'start', 'hold', 'keyhold', 'keyrate']) t) $function$;
COMMENT ON FUNCTION millrace.slot_tables(p_slot integer) IS
    'The partitions of a slot, in lock order.';

CREATE OR REPLACE FUNCTION millrace.ring_unmoved()
 RETURNS void
 LANGUAGE plpgsql
 SET search_path TO 'pg_catalog', 'pg_temp'
 SET jit TO 'off'
 SET plan_cache_mode TO 'auto'
AS $function$
-- A statement at READ COMMITTED in a VOLATILE function takes its snapshot
-- after its locks: a reclaim or a compaction of the schedule (a TRUNCATE,
-- which MVCC does not hide) either committed before it, and it sees the
-- rows moved, or waits for its transaction to end. A transaction at
-- REPEATABLE READ or SERIALIZABLE keeps the snapshot of its first
-- statement: a TRUNCATE committed after it leaves the truncated rows gone
-- and their copies invisible. The catalog says so: pg_class as the
-- transaction's snapshot sees it holds the old file of a truncated
-- partition, pg_relation_filenode (the catalog's current state, read after
-- the caller's locks) the new one.
BEGIN
    IF current_setting('transaction_isolation') = 'read committed' THEN
        RETURN;
    END IF;
    IF EXISTS (SELECT 1 FROM pg_class c
               WHERE c.relnamespace = 'millrace'::regnamespace AND c.relkind = 'r' AND c.relispartition
                 AND c.relname ~ '^(job|tick|lease|ack|done|flush|promote|cancel|uniq|tally_round|heartbeat|leader|start|hold|keyhold|keyrate|sched)_[0-9]+$'
                 AND c.relfilenode IS DISTINCT FROM pg_relation_filenode(c.oid)) THEN
        RAISE EXCEPTION 'millrace: the ring moved rows after this % transaction took its snapshot (a reclaim committed): retry the transaction, or read at READ COMMITTED',
            current_setting('transaction_isolation') USING ERRCODE = '40001';
    END IF;
END $function$;
COMMENT ON FUNCTION millrace.ring_unmoved() IS
    'ring_unmoved raises a serialization failure (40001) when the caller''s transaction, at REPEATABLE READ or SERIALIZABLE, took its snapshot before a reclaim or a compaction of the schedule that committed since: what it reads of the ring would miss rows moved (a finished job would show as waiting). The read functions call it after their locks; at READ COMMITTED it returns at once (their statements take their snapshots after their locks).';

CREATE OR REPLACE FUNCTION millrace.slot_is_clean(p_slot integer)
 RETURNS boolean
 LANGUAGE plpgsql
 STABLE
 SET search_path TO 'pg_catalog', 'pg_temp'
 SET plan_cache_mode TO 'auto'
AS $function$
-- PL/pgSQL for a plan cached for the session: every round of rotate asks
-- about each slot.
BEGIN
    RETURN coalesce((SELECT max(c.id) FROM millrace.reclaim c WHERE c.segment = p_slot), 0)
         > coalesce((SELECT max(r.id) FROM millrace.rotation r WHERE r.segment = p_slot), 0);
END $function$;
COMMENT ON FUNCTION millrace.slot_is_clean(p_slot integer) IS
    'slot_is_clean says slot p_slot was reclaimed since it was last current.';

CREATE OR REPLACE FUNCTION millrace.txn_slot()
 RETURNS smallint
 LANGUAGE plpgsql
 SET search_path TO 'pg_catalog', 'pg_temp'
 SET plan_cache_mode TO 'auto'
AS $function$
DECLARE
    v text := current_setting('millrace.txn_slot', true);
BEGIN
    IF v IS NULL OR v = '' THEN
        v := millrace.current_segment()::text;
        PERFORM set_config('millrace.txn_slot', v, true);
    END IF;
    RETURN v::smallint;
END $function$;
COMMENT ON FUNCTION millrace.txn_slot() IS
    'txn_slot is the slot a producer transaction writes its jobs into: the current one when it first enqueues, and the same one for the rest of the transaction (a transaction-local setting), so that a transaction that enqueues for a long time holds one slot of the ring, never all of them.';

CREATE OR REPLACE FUNCTION millrace.slot_lanes(p_slot smallint)
 RETURNS TABLE(queue text, priority smallint, prev_snap pg_snapshot, snap pg_snapshot, more boolean, upto_txid xid8, upto_id bigint)
 LANGUAGE sql
 SET search_path TO 'pg_catalog', 'pg_temp'
 SET jit TO 'off'
 ROWS 10
AS $function$
    WITH RECURSIVE ls AS (
        (SELECT j.queue, j.priority FROM millrace.job j WHERE j.slot = p_slot ORDER BY j.queue, j.priority LIMIT 1)
        UNION ALL
        SELECT n.queue, n.priority FROM ls
        CROSS JOIN LATERAL (SELECT j.queue, j.priority FROM millrace.job j
                            WHERE j.slot = p_slot AND (j.queue, j.priority) > (ls.queue, ls.priority)
                            ORDER BY j.queue, j.priority LIMIT 1) n)
    SELECT ls.queue, ls.priority, t.prev_snap, t.snap, t.more, t.upto_txid, t.upto_id FROM ls
    LEFT JOIN LATERAL (SELECT * FROM millrace.tick t WHERE t.queue = ls.queue AND t.priority = ls.priority
                       ORDER BY t.tick_id DESC LIMIT 1) t ON true
$function$;
COMMENT ON FUNCTION millrace.slot_lanes(p_slot smallint) IS
    'slot_lanes returns each lane (queue and priority) with job rows in slot p_slot, found by skip scan, with its newest tick''s frontier (nulls when the lane has no tick): what unclaimed and backlog test each row against.';

CREATE OR REPLACE FUNCTION millrace.uncovered(p_txid xid8, p_id bigint, p_prev_snap pg_snapshot, p_snap pg_snapshot, p_more boolean, p_upto_txid xid8, p_upto_id bigint)
 RETURNS boolean
 LANGUAGE sql
 IMMUTABLE
AS $function$
    SELECT p_snap IS NULL
        OR NOT pg_catalog.pg_visible_in_snapshot(p_txid, p_snap)
        OR (p_more AND NOT pg_catalog.pg_visible_in_snapshot(p_txid, p_prev_snap) AND (p_txid, p_id) > (p_upto_txid, p_upto_id))
$function$;
COMMENT ON FUNCTION millrace.uncovered(p_txid xid8, p_id bigint, p_prev_snap pg_snapshot, p_snap pg_snapshot, p_more boolean, p_upto_txid xid8, p_upto_id bigint) IS
    'uncovered says a job row (p_txid, p_id) is not yet claimed by its lane''s frontier (slot_lanes): no tick, a tick whose snapshot does not see it, or one that stopped at its cap before it. One expression, without SET clauses, so that it is inlined into unclaimed and backlog.';

CREATE OR REPLACE FUNCTION millrace.unclaimed(p_slot smallint)
 RETURNS SETOF millrace.job
 LANGUAGE sql
 SET search_path TO 'pg_catalog', 'pg_temp'
 SET jit TO 'off'
AS $function$
    SELECT j.* FROM millrace.slot_lanes(p_slot) f
    JOIN millrace.job j ON j.slot = p_slot AND j.queue = f.queue AND j.priority = f.priority
    WHERE millrace.uncovered(j.txid, j.id, f.prev_snap, f.snap, f.more, f.upto_txid, f.upto_id)
$function$;
COMMENT ON FUNCTION millrace.unclaimed(p_slot smallint) IS
    'unclaimed returns the jobs of slot p_slot that no tick covers yet: for each lane with jobs in the slot (slot_lanes), the rows its newest tick''s snapshot does not see, or that lie in the rest of a range that tick stopped at its cap (uncovered). Its result is materialized, arguments detoasted: to measure a backlog, use backlog.';

CREATE OR REPLACE FUNCTION millrace.backlog(p_slot smallint, p_max_jobs bigint, p_max_bytes bigint, OUT jobs bigint, OUT bytes bigint, OUT queues text)
 RETURNS record
 LANGUAGE plpgsql
 SET search_path TO 'pg_catalog', 'pg_temp'
 SET jit TO 'off'
 SET plan_cache_mode TO 'auto'
AS $function$
-- A loop over a cursor, not a query over unclaimed: a set-returning
-- function's result is materialized whole (and a row of millrace.job
-- built from it has its arguments detoasted), so a LIMIT over unclaimed
-- would still read every byte of the backlog. Here the job rows are read
-- in the lanes' order, a few at a time, and the stored size of their
-- arguments is read from the row (pg_column_size of a TOAST pointer reads
-- no TOAST): the check costs at most p_max_jobs rows or p_max_bytes
-- bytes' worth of rows, plus one fetch.
DECLARE
    r      record;
    v_last text;
    v_n    int := 0;
BEGIN
    jobs := 0;
    bytes := 0;
    FOR r IN
        SELECT j.queue, pg_column_size(j.args) + pg_column_size(j.queue) + pg_column_size(j.kind) + 64 AS b
        FROM millrace.slot_lanes(p_slot) f
        JOIN millrace.job j ON j.slot = p_slot AND j.queue = f.queue AND j.priority = f.priority
        WHERE millrace.uncovered(j.txid, j.id, f.prev_snap, f.snap, f.more, f.upto_txid, f.upto_id)
    LOOP
        jobs := jobs + 1;
        bytes := bytes + r.b;
        IF r.queue IS DISTINCT FROM v_last THEN
            v_last := r.queue;
            v_n := v_n + 1;
            IF v_n <= 5 THEN
                queues := concat_ws(', ', queues, quote_literal(r.queue));
            ELSIF v_n = 6 THEN
                queues := queues || ', ...';
            END IF;
        END IF;
        EXIT WHEN jobs > p_max_jobs OR bytes > p_max_bytes;
    END LOOP;
END $function$;
COMMENT ON FUNCTION millrace.backlog(p_slot smallint, p_max_jobs bigint, p_max_bytes bigint, OUT jobs bigint, OUT bytes bigint, OUT queues text) IS
    'backlog measures the jobs of slot p_slot not yet claimed (the rows unclaimed returns) without reading their arguments: how many, their stored bytes (arguments, queue and kind as stored, compressed or not, plus 64 bytes a row), and the queues they are in (the first five, quoted). It stops at the first row past p_max_jobs jobs or p_max_bytes bytes (null: no limit), so it costs what it counts up to its bounds: past a bound, jobs or bytes says only that it is past.';

CREATE OR REPLACE FUNCTION millrace.uniq_judge(p_slot smallint, p_skip bigint[] DEFAULT NULL::bigint[])
 RETURNS TABLE(u millrace.uniq, blocks boolean)
 LANGUAGE plpgsql
 SET search_path TO 'pg_catalog', 'pg_temp'
 SET jit TO 'off'
 SET plan_cache_mode TO 'auto'
AS $function$
DECLARE
    v_from timestamptz;
BEGIN
    SELECT min(k.at) INTO v_from FROM millrace.uniq k
    WHERE k.slot = p_slot AND (k.until IS NULL OR k.until > now())
      AND NOT EXISTS (SELECT 1 FROM unnest(p_skip) s(id) WHERE s.id = k.job_id);
    IF v_from IS NULL THEN
        RETURN;
    END IF;
    RETURN QUERY EXECUTE format($q$
        SELECT ROW(u.*)::millrace.uniq, CASE f.state
                      WHEN 1 THEN u.states & 2 <> 0
                      WHEN 3 THEN u.states & 4 <> 0
                      WHEN 4 THEN u.states & 8 <> 0
                      ELSE EXISTS (SELECT 1 FROM millrace.job j WHERE j.id = u.job_id)
                           OR EXISTS (SELECT 1 FROM millrace.sched s WHERE s.id = u.job_id) END
        -- The rows to judge first (OFFSET 0): planned as one query, the
        -- probes below ran for every row of the slot, skipped ones too.
        FROM (SELECT * FROM millrace.uniq u
              WHERE u.slot = $1 AND (u.until IS NULL OR u.until > now())
                AND NOT EXISTS (SELECT 1 FROM unnest($2) s(id) WHERE s.id = u.job_id)
              OFFSET 0) u
        LEFT JOIN LATERAL (SELECT coalesce(
                               (SELECT h.state FROM millrace.finished h
                                WHERE h.bucket = ANY (%L::smallint[]) AND h.id = u.job_id AND h.state IN (1, 3, 4) LIMIT 1),
                               -- completed, in a row of its block (version 11)
                               CASE WHEN (SELECT count(*) FROM millrace.completed c
                                          WHERE c.bucket = ANY (%L::smallint[]) AND c.blk = millrace.id_block(u.job_id)
                                            AND u.job_id = ANY (c.ids)) > 0 THEN 1::smallint END) AS state) f ON true$q$,
        millrace.history_since(v_from), ARRAY(SELECT b FROM unnest(millrace.history_since(v_from)) b WHERE b < 36))
    USING p_slot, coalesce(p_skip, '{}');
END $function$;
COMMENT ON FUNCTION millrace.uniq_judge(p_slot smallint, p_skip bigint[]) IS
    'uniq_judge returns the key rows of slot p_slot whose period has not ended, those of the jobs in p_skip left out, each with whether it still blocks (as uniq_blocks says), in one statement: their jobs'' history is probed only in the buckets from the oldest key''s creation until now. A verdict can only go from blocking to not blocking (a job''s end is final, a period only ends), so rotate judges a slot''s keys before it locks the slot, and the reclaim judges under the lock only the keys written since. The test is written out rather than calling a shared function: it runs once per key, and a call per row measured 1.6 to 8 times slower (2,000 keys: 18 ms inline, 30 ms through an SQL function, 150 ms through one with a SET clause).';

CREATE OR REPLACE FUNCTION millrace.park_slot()
 RETURNS smallint
 LANGUAGE sql
 IMMUTABLE
AS $function$ SELECT 4::smallint $function$;
COMMENT ON FUNCTION millrace.park_slot() IS
    'The park is slot 4 of millrace.job, outside the ring: a reclaim moves there, once, a backlog too large to carry forward (a queue nobody works), and rotate empties it into the ring when what it holds has mostly been claimed (reclaim_park). Claims read it as they read every slot.';

CREATE OR REPLACE FUNCTION millrace.reclaim_slot(p_slot smallint, p_into smallint, p_unclaimed_into smallint, p_uniq_kept millrace.uniq[] DEFAULT NULL::millrace.uniq[], p_uniq_judged bigint[] DEFAULT NULL::bigint[])
 RETURNS bigint
 LANGUAGE plpgsql
 SET search_path TO 'pg_catalog', 'pg_temp'
 SET jit TO 'off'
 SET plan_cache_mode TO 'force_custom_plan'
AS $function$
-- Plans are made for each call's slot, so that a statement that reads
-- the other slots (slot <> p_slot) never reads this one's partitions.
DECLARE
    v_n bigint;
    v_total bigint := 0;
    v_open bigint[];
    v_tables text[];
BEGIN
    -- Jobs not yet claimed: into the current slot, or into the park when
    -- rotate found them too many to carry at every turn.
    INSERT INTO millrace.job (slot, id, queue, kind, args, priority, attempt, max_attempts, created_at, txid, ready_at, timeout_ms)
    SELECT p_unclaimed_into, j.id, j.queue, j.kind, j.args, j.priority, j.attempt, j.max_attempts, j.created_at, j.txid, j.ready_at, j.timeout_ms
    FROM millrace.unclaimed(p_slot) j;
    GET DIAGNOSTICS v_n = ROW_COUNT;
    v_total := v_total + v_n;

    v_open := ARRAY(SELECT o.tick_id FROM millrace.open_batches() o);

    -- Jobs of open batches that have no ack yet.
    INSERT INTO millrace.job (slot, id, queue, kind, args, priority, attempt, max_attempts, created_at, txid, ready_at, timeout_ms)
    SELECT DISTINCT ON (b.id) p_into, b.id, b.queue, b.kind, b.args, b.priority, b.attempt, b.max_attempts, b.created_at, b.txid,
           b.ready_at, b.timeout_ms
    FROM unnest(v_open) o(tick_id) CROSS JOIN LATERAL millrace.batch_jobs(o.tick_id) b
    WHERE b.slot = p_slot
      AND NOT EXISTS (SELECT 1 FROM millrace.job c WHERE c.slot = p_into AND c.queue = b.queue AND c.priority = b.priority
                                                     AND c.txid = b.txid AND c.id = b.id);
    GET DIAGNOSTICS v_n = ROW_COUNT;
    v_total := v_total + v_n;

    -- Open batches' ticks, and each lane's newest tick as its frontier,
    -- unless the lane is idle. A lane whose newest tick is in this slot
    -- has not been claimed since the slot stopped being current (the
    -- rotation window); if it also has no job row outside this slot (its
    -- unclaimed jobs and open batches' jobs were copied into p_into
    -- above), its frontier is forgotten: the lane starts again as a fresh
    -- lane, whose first claim takes every job of the lane visible to it
    -- (from snapshot '1:1:'). That skips nothing, late commits included;
    -- and it takes nothing twice, since every job the forgotten tick
    -- covered had its row in this slot, now truncated. A job row another
    -- transaction is inserting now is not seen here, and is new.
    INSERT INTO millrace.tick (slot, queue, priority, tick_id, prev_snap, snap, after_txid, after_id, upto_txid, upto_id,
                               more, owner, req, njobs, carried, at, started)
    SELECT p_into, t.queue, t.priority, t.tick_id, t.prev_snap, t.snap, t.after_txid, t.after_id, t.upto_txid, t.upto_id,
           t.more, t.owner, t.req, t.njobs, t.tick_id <> ALL (v_open), t.at, t.started
    FROM millrace.tick t
    WHERE t.slot = p_slot
      AND ((NOT t.carried AND t.tick_id = ANY (v_open))
           OR t.tick_id IN (
               -- each lane's newest tick in this slot, if it is the lane's newest anywhere and the lane is not idle;
               -- the slot's lanes by skip scan of its (queue, priority, tick_id) index, each lane's newest
               -- from the same index (a sort of every tick of the slot was 6 ms of 8 at 800 jobs/s)
               WITH RECURSIVE ls AS (
                   (SELECT x.queue, x.priority FROM millrace.tick x WHERE x.slot = p_slot ORDER BY x.queue, x.priority LIMIT 1)
                   UNION ALL
                   SELECT n.queue, n.priority FROM ls
                   CROSS JOIN LATERAL (SELECT x.queue, x.priority FROM millrace.tick x
                                       WHERE x.slot = p_slot AND (x.queue, x.priority) > (ls.queue, ls.priority)
                                       ORDER BY x.queue, x.priority LIMIT 1) n)
               SELECT l.tick_id
               FROM ls CROSS JOIN LATERAL (SELECT ls.queue, ls.priority, x.tick_id FROM millrace.tick x
                                           WHERE x.slot = p_slot AND x.queue = ls.queue AND x.priority = ls.priority
                                           ORDER BY x.tick_id DESC LIMIT 1) l
               WHERE l.tick_id = (SELECT n.tick_id FROM millrace.tick n WHERE n.queue = l.queue AND n.priority = l.priority
                                  ORDER BY n.tick_id DESC LIMIT 1)
                 AND EXISTS (SELECT 1 FROM millrace.job j WHERE j.slot <> p_slot AND j.queue = l.queue AND j.priority = l.priority)));
    GET DIAGNOSTICS v_n = ROW_COUNT;
    v_total := v_total + v_n;

    INSERT INTO millrace.lease (slot, queue, tick_id, token, owner, req, at)
    SELECT p_into, l.queue, l.tick_id, l.token, l.owner, l.req, l.at FROM millrace.lease l
    WHERE l.slot = p_slot AND l.tick_id = ANY (v_open);
    GET DIAGNOSTICS v_n = ROW_COUNT;
    v_total := v_total + v_n;

    INSERT INTO millrace.ack (slot, job_id, tick_id, token, state, attempt, at, error)
    SELECT p_into, a.job_id, a.tick_id, a.token, a.state, a.attempt, a.at, a.error FROM millrace.ack a
    WHERE a.slot = p_slot AND a.tick_id = ANY (v_open);
    GET DIAGNOSTICS v_n = ROW_COUNT;
    v_total := v_total + v_n;

    INSERT INTO millrace.done (slot, queue, tick_id, at)
    SELECT p_into, d.queue, d.tick_id, d.at FROM millrace.done d
    WHERE d.slot = p_slot
      AND d.tick_id IN (SELECT t.tick_id FROM millrace.tick t WHERE t.slot <> p_slot AND NOT t.carried);
    GET DIAGNOSTICS v_n = ROW_COUNT;
    v_total := v_total + v_n;

    -- The newest promotion round, if this slot holds it: the slot's newest
    -- first (one index edge), then whether any slot has a newer one (a
    -- probe per partition), rather than that probe for each of the slot's
    -- rounds (a hundred a second at 800 jobs/s of the full mix: 3 to 13 ms
    -- under the locks).
    INSERT INTO millrace.promote (slot, round, upto, snap, total)
    SELECT p_into, p.round, p.upto, p.snap, p.total
    FROM (SELECT * FROM millrace.promote x WHERE x.slot = p_slot ORDER BY x.round DESC LIMIT 1) p
    WHERE NOT EXISTS (SELECT 1 FROM millrace.promote n WHERE n.round > p.round);

    -- The newest tally round (version 6), where the next round starts.
    INSERT INTO millrace.tally_round (slot, round, snap, at)
    SELECT p_into, r.round, r.snap, r.at
    FROM (SELECT * FROM millrace.tally_round x WHERE x.slot = p_slot ORDER BY x.round DESC LIMIT 1) r
    WHERE NOT EXISTS (SELECT 1 FROM millrace.tally_round n WHERE n.round > r.round);

    -- A cancellation stays while a row of its job may still be claimed or
    -- promoted: a job row in another slot, or a schedule row. The schedule
    -- is probed first (two partitions; most cancellations are of scheduled
    -- jobs), the job's rows only when it has none (five).
    INSERT INTO millrace.cancel (slot, job_id, at)
    SELECT p_into, c.job_id, c.at FROM millrace.cancel c
    WHERE c.slot = p_slot
      AND (EXISTS (SELECT 1 FROM millrace.sched s WHERE s.id = c.job_id)
           OR EXISTS (SELECT 1 FROM millrace.job j WHERE j.id = c.job_id AND j.slot <> p_slot));
    GET DIAGNOSTICS v_n = ROW_COUNT;
    v_total := v_total + v_n;

    -- The key rows that still block: those the caller judged before it
    -- took the locks (p_uniq_judged, the blocking ones in p_uniq_kept), and
    -- the others judged now (written since, or all when the caller judged
    -- none).
    INSERT INTO millrace.uniq (slot, key, job_id, states, until, at)
    SELECT p_into, k.key, k.job_id, k.states, k.until, k.at FROM unnest(p_uniq_kept) k
    UNION ALL
    SELECT p_into, (j.u).key, (j.u).job_id, (j.u).states, (j.u).until, (j.u).at
    FROM millrace.uniq_judge(p_slot, p_uniq_judged) j WHERE j.blocks;
    GET DIAGNOSTICS v_n = ROW_COUNT;
    v_total := v_total + v_n;

    -- Start marks of open batches (which of their jobs had started).
    INSERT INTO millrace.start (slot, tick_id, token, jobs, at)
    SELECT p_into, m.tick_id, m.token, m.jobs, m.at FROM millrace.start m
    WHERE m.slot = p_slot AND m.tick_id = ANY (v_open);
    GET DIAGNOSTICS v_n = ROW_COUNT;
    v_total := v_total + v_n;

    -- What each registered process holds of a limited queue (version 12):
    -- its newest row, unless a newer one is in another slot or it holds
    -- nothing (this is the oldest slot: no older row can be the newest);
    -- and, for a queue with a rate limit, the claims still in its window.
    INSERT INTO millrace.hold (slot, id, queue, owner, n, took, total, at)
    SELECT p_into, h.id, h.queue, h.owner, h.n, h.took, h.total, h.at
    FROM (SELECT DISTINCT ON (x.queue, x.owner) x.* FROM millrace.hold x WHERE x.slot = p_slot
          ORDER BY x.queue, x.owner, x.id DESC) h
    WHERE h.n > 0
      AND EXISTS (SELECT 1 FROM millrace.process p WHERE p.id = h.owner)
      AND NOT EXISTS (SELECT 1 FROM millrace.hold n WHERE n.queue = h.queue AND n.owner = h.owner AND n.id > h.id)
    UNION
    SELECT p_into, h.id, h.queue, h.owner, h.n, h.took, h.total, h.at
    FROM millrace.hold h
    CROSS JOIN LATERAL (SELECT s.rate_per FROM millrace.queue_state s WHERE s.queue = h.queue ORDER BY s.id DESC LIMIT 1) s
    WHERE h.slot = p_slot AND h.took > 0 AND h.at > clock_timestamp() - millrace.rate_window(s.rate_per);
    -- And of a per-key limit: each registered process's newest map of a
    -- queue, which speaks for it whatever older maps hold (a newest map
    -- left behind would let an older one lie).
    INSERT INTO millrace.keyhold (slot, id, queue, owner, keys, n, slots, until, at)
    SELECT p_into, h.id, h.queue, h.owner, h.keys, h.n, h.slots, h.until, h.at
    FROM (SELECT DISTINCT ON (x.queue, x.owner) x.* FROM millrace.keyhold x WHERE x.slot = p_slot
          ORDER BY x.queue, x.owner, x.id DESC) h
    WHERE EXISTS (SELECT 1 FROM millrace.process p WHERE p.id = h.owner)
      AND NOT EXISTS (SELECT 1 FROM millrace.keyhold n WHERE n.queue = h.queue AND n.owner = h.owner AND n.id > h.id);

    -- And of each key of a per-key rate: the claims still in its window,
    -- and its newest row while its deferred jobs have not ended.
    INSERT INTO millrace.keyrate (slot, id, queue, key, took, total, until, at)
    SELECT p_into, h.id, h.queue, h.key, h.took, h.total, h.until, h.at
    FROM millrace.keyrate h
    CROSS JOIN LATERAL (SELECT s.key_rate_per FROM millrace.queue_state s WHERE s.queue = h.queue ORDER BY s.id DESC LIMIT 1) s
    WHERE h.slot = p_slot
      AND (h.at > clock_timestamp() - millrace.rate_window(s.key_rate_per)
           OR (h.until > clock_timestamp()
               AND NOT EXISTS (SELECT 1 FROM millrace.keyrate n WHERE n.queue = h.queue AND n.key = h.key AND n.at > h.at)));

    -- Each registered process's newest heartbeat, and the newest leader
    -- row: the leases in force.
    INSERT INTO millrace.heartbeat (slot, id, process, until, at)
    SELECT p_into, h.id, h.process, h.until, h.at
    FROM (SELECT DISTINCT ON (x.process) x.* FROM millrace.heartbeat x WHERE x.slot = p_slot ORDER BY x.process, x.id DESC) h
    WHERE EXISTS (SELECT 1 FROM millrace.process p WHERE p.id = h.process)
      AND NOT EXISTS (SELECT 1 FROM millrace.heartbeat n WHERE n.process = h.process AND n.id > h.id);
    INSERT INTO millrace.leader (slot, id, term, holder, until, at)
    SELECT p_into, l.id, l.term, l.holder, l.until, l.at FROM millrace.leader l
    WHERE l.slot = p_slot AND NOT EXISTS (SELECT 1 FROM millrace.leader n WHERE n.id > l.id)
    ORDER BY l.id DESC LIMIT 1;

    -- Only the partitions that hold something: a partition of size 0 has
    -- had no row (committed or not) since it was last truncated, and the
    -- caller's locks keep it so. An idle ring's slots hold little more
    -- than heartbeats, and a TRUNCATE makes new files for the table and
    -- each of its indexes.
    v_tables := ARRAY(SELECT t FROM unnest(millrace.slot_tables(p_slot)) t WHERE pg_relation_size(t::regclass) > 0);
    IF cardinality(v_tables) > 0 THEN
        EXECUTE 'TRUNCATE ' || array_to_string(v_tables, ', ');
    END IF;
    RETURN v_total;
END $function$;
COMMENT ON FUNCTION millrace.reclaim_slot(p_slot smallint, p_into smallint, p_unclaimed_into smallint, p_uniq_kept millrace.uniq[], p_uniq_judged bigint[]) IS
    'reclaim_slot empties slot p_slot into slot p_into (the jobs not yet claimed into p_unclaimed_into: p_into, or the park). The caller holds ACCESS EXCLUSIVE on every partition of p_slot, so no transaction that read or wrote them is still running. Everything still needed moves forward verbatim (same ids, same txids, so claims and batches find it exactly as before): jobs not yet claimed, jobs of open batches not yet acked, open batches'' ticks, leases and acks, done rows of ticks that live in another slot, each lane''s newest tick, the newest promotion round, cancellations of unfinished jobs, unique keys that still block (those of p_uniq_judged, the job ids of the keys the caller judged before it took the locks, as it found them: the blocking ones in p_uniq_kept; the others judged here), start marks of open batches, each registered process''s newest count of what it holds of a limited queue and of each key of a per-key limit (when not 0, or the key''s deferred jobs end later) the claims still in a rate-limited queue''s window, and those still in a rate-limited key''s window (with the key''s newest while its deferred jobs have not ended), each registered process''s newest heartbeat and the newest leader term. Then the partitions are truncated. It returns the rows copied (the leases not counted).';

CREATE OR REPLACE FUNCTION millrace.reclaim_park(p_max_carry bigint, p_max_carry_bytes bigint, p_into smallint)
 RETURNS bigint
 LANGUAGE plpgsql
 SET search_path TO 'pg_catalog', 'pg_temp'
 SET jit TO 'off'
 SET plan_cache_mode TO 'auto'
AS $function$
-- The park holds backlogs moved out of the ring. Its claimed rows are dead
-- weight once their batches are done; they go when it is emptied: its
-- jobs not yet claimed and those of open batches without an ack are copied
-- into the ring (verbatim: same ids and txids), and it is truncated. That
-- copy is paid for by what was claimed: it happens only once the rows not
-- yet claimed are within one reclaim's carry and take at most half of the
-- park's space.
DECLARE
    v_size  bigint := pg_table_size('millrace.job_4');
    v_b     record;
    v_n     bigint;
    v_total bigint := 0;
BEGIN
    IF pg_relation_size('millrace.job_4') = 0 THEN
        RETURN NULL;
    END IF;
    SELECT * INTO v_b FROM millrace.backlog(millrace.park_slot(), p_max_carry, p_max_carry_bytes);
    IF v_b.jobs > p_max_carry OR v_b.bytes > p_max_carry_bytes OR v_b.bytes * 2 > v_size THEN
        RETURN NULL;
    END IF;
    FOR v_try IN 1 .. 20 LOOP
        BEGIN
            LOCK TABLE millrace.job_4 IN ACCESS EXCLUSIVE MODE NOWAIT;
            EXIT;
        EXCEPTION WHEN lock_not_available THEN
            IF v_try = 20 THEN
                RETURN NULL;  -- in use: at a later round
            END IF;
            PERFORM pg_sleep(0.002);
        END;
    END LOOP;
    INSERT INTO millrace.job (slot, id, queue, kind, args, priority, attempt, max_attempts, created_at, txid, ready_at, timeout_ms)
    SELECT p_into, j.id, j.queue, j.kind, j.args, j.priority, j.attempt, j.max_attempts, j.created_at, j.txid, j.ready_at, j.timeout_ms
    FROM millrace.unclaimed(millrace.park_slot()) j;
    GET DIAGNOSTICS v_n = ROW_COUNT;
    v_total := v_total + v_n;
    INSERT INTO millrace.job (slot, id, queue, kind, args, priority, attempt, max_attempts, created_at, txid, ready_at, timeout_ms)
    SELECT DISTINCT ON (b.id) p_into, b.id, b.queue, b.kind, b.args, b.priority, b.attempt, b.max_attempts, b.created_at, b.txid,
           b.ready_at, b.timeout_ms
    FROM millrace.open_batches() o CROSS JOIN LATERAL millrace.batch_jobs(o.tick_id) b
    WHERE b.slot = millrace.park_slot()
      AND NOT EXISTS (SELECT 1 FROM millrace.job c WHERE c.slot = p_into AND c.queue = b.queue AND c.priority = b.priority
                                                     AND c.txid = b.txid AND c.id = b.id);
    GET DIAGNOSTICS v_n = ROW_COUNT;
    v_total := v_total + v_n;
    TRUNCATE millrace.job_4;
    RETURN v_total;
END $function$;
COMMENT ON FUNCTION millrace.reclaim_park(p_max_carry bigint, p_max_carry_bytes bigint, p_into smallint) IS
    'reclaim_park empties the park into slot p_into once its jobs not yet claimed are within one reclaim''s carry (p_max_carry jobs, p_max_carry_bytes bytes) and take at most half of its space: those jobs and the jobs of open batches without an ack are copied verbatim, then the park is truncated. It returns the rows copied, or NULL when it did nothing (not worth it yet, or the park is in use). rotate calls it.';

CREATE OR REPLACE FUNCTION millrace.rotate(p_after interval, p_max_carry bigint DEFAULT 5000, p_term bigint DEFAULT NULL::bigint, p_max_carry_bytes bigint DEFAULT 16777216, p_wait interval DEFAULT NULL::interval)
 RETURNS TABLE(action text, segment smallint, detail text, pids integer[])
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
 SET jit TO 'off'
 SET lock_timeout TO '50ms'
 SET plan_cache_mode TO 'auto'
AS $function$
#variable_conflict use_column
DECLARE
    v_cur   record;
    v_slot  record;
    v_clean smallint[];
    v_copied bigint;
    v_try   int;
    v_holders text;
    v_n     bigint;
    v_b     record;
    v_park  boolean;
    v_reclaimed boolean := false;
    v_ukept millrace.uniq[];
    v_useen bigint[];
BEGIN
    IF NOT pg_try_advisory_xact_lock(millrace.maint_space(), 0) THEN
        action := 'busy'; segment := NULL; detail := 'another rotation is running';
        RETURN NEXT;
        RETURN;
    END IF;
    PERFORM millrace.fence_leader(p_term);
    p_max_carry_bytes := coalesce(p_max_carry_bytes, 9223372036854775807);  -- null: no byte bound
    SELECT r.id, r.segment, r.at, r.n INTO v_cur FROM millrace.rotation r ORDER BY r.id DESC LIMIT 1;

    FOR v_slot IN
        WITH s AS (SELECT g::smallint AS slot FROM generate_series(0, millrace.slots() - 1) g),
        st AS (
            SELECT s.slot,
                   (SELECT max(r.id) FROM millrace.rotation r WHERE r.segment = s.slot) AS made_current,
                   (SELECT max(c.id) FROM millrace.reclaim c WHERE c.segment = s.slot) AS reclaimed
            FROM s)
        SELECT st.slot, st.made_current, st.reclaimed,
               (SELECT min(r.at) FROM millrace.rotation r WHERE r.id > coalesce(st.made_current, 0)) AS left_at
        FROM st
        WHERE st.slot <> v_cur.segment
        ORDER BY st.made_current NULLS FIRST
    LOOP
        CONTINUE WHEN coalesce(v_slot.reclaimed, 0) > coalesce(v_slot.made_current, 0);  -- clean
        IF v_slot.left_at > now() - p_after THEN
            -- Still in its grace period; reclaim it early only if no slot is clean.
            CONTINUE WHEN EXISTS (
                SELECT 1 FROM generate_series(0, millrace.slots() - 1) g
                WHERE g <> v_cur.segment
                  AND millrace.slot_is_clean(g));
        END IF;
        -- A backlog (jobs not yet claimed, in a queue nobody works or one
        -- that fell behind) too large to carry at every turn of the ring
        -- (issue 20.4: 300 jobs of 1 MB made 2 GB of WAL in 40 s) is moved
        -- once into the park, outside the ring, and the slot is reclaimed
        -- all the same: a backlog costs its own bytes, never the ring's
        -- turns (issue 31.7: a queue nobody works, receiving in every slot,
        -- held every slot in place). Measured with early stops (backlog),
        -- before the locks.
        SELECT * INTO v_b FROM millrace.backlog(v_slot.slot, p_max_carry, p_max_carry_bytes);
        v_park := v_b.jobs > p_max_carry OR v_b.bytes > p_max_carry_bytes;
        v_copied := NULL;
        -- The slot's unique keys are judged before its locks are taken (the
        -- history probes were half a reclaim's time under them: 24-42 ms
        -- for about 1,000 keys in the bench's full mix at 800 jobs/s):
        -- a key that blocks now may stop blocking, never the reverse, so
        -- carrying what blocked here is safe; keys written after this
        -- statement are judged under the locks.
        SELECT coalesce(array_agg((j.u).job_id), '{}'), coalesce(array_agg(j.u) FILTER (WHERE j.blocks), '{}')
        INTO v_useen, v_ukept FROM millrace.uniq_judge(v_slot.slot) j;
        -- NOWAIT, a few times: a slot in use is skipped, never waited for
        -- (claims read every slot, and would queue behind a waiting lock).
        -- With p_wait (the leader's round after readers kept the slot a
        -- rotation period past its time), the locks are waited for, at most
        -- p_wait, in the lock queue ahead of the readers' next
        -- transactions, while the leader cancels the statements that hold
        -- them: the claims queue behind for as long as that takes.
        FOR v_try IN 1 .. CASE WHEN p_wait IS NULL THEN 20 ELSE 1 END LOOP
            BEGIN
                -- A wait is for readers, whose statements the leader
                -- cancels meanwhile. A session idle in a transaction that
                -- holds the slot keeps it whatever they do: waiting would
                -- only queue the locks ahead of every reader of the ring,
                -- the queue's own claims included, so it is not waited for.
                IF p_wait IS NULL OR EXISTS (
                       SELECT 1 FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid
                       WHERE l.locktype = 'relation' AND l.granted AND l.pid <> pg_backend_pid()
                         AND l.relation = ANY (SELECT x::regclass::oid FROM unnest(millrace.slot_tables(v_slot.slot)) x)
                         AND starts_with(a.state, 'idle in transaction')) THEN
                    EXECUTE 'LOCK TABLE ' || array_to_string(millrace.slot_tables(v_slot.slot), ', ')
                            || ' IN ACCESS EXCLUSIVE MODE NOWAIT';
                ELSE
                    PERFORM set_config('lock_timeout', greatest(1, (extract(epoch FROM p_wait) * 1000)::int)::text || 'ms', true);
                    EXECUTE 'LOCK TABLE ' || array_to_string(millrace.slot_tables(v_slot.slot), ', ')
                            || ' IN ACCESS EXCLUSIVE MODE';
                    PERFORM set_config('lock_timeout', '50ms', true);
                END IF;
                v_copied := millrace.reclaim_slot(v_slot.slot, v_cur.segment,
                                                  CASE WHEN v_park THEN millrace.park_slot() ELSE v_cur.segment END,
                                                  v_ukept, v_useen);
                EXIT;
            EXCEPTION WHEN lock_not_available THEN
                PERFORM pg_sleep(0.002);
            END;
        END LOOP;
        IF v_copied IS NULL THEN
            -- A role sees another role's transaction start only as a member of
            -- it or of pg_read_all_stats: an unknown age is said so, never 0 s.
            SELECT string_agg(DISTINCT format('pid %s (%s, %s, %s)', a.pid,
                       coalesce(nullif(a.application_name, ''), a.usename::text), coalesce(a.state, 'state not visible'),
                       coalesce('transaction open ' || extract(epoch FROM now() - a.xact_start)::bigint || ' s',
                                'its transaction''s start is not visible to the schema''s owner')), '; '),
                   array_agg(DISTINCT a.pid ORDER BY a.pid)
            INTO v_holders, pids
            FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid
            WHERE l.locktype = 'relation' AND l.granted AND l.pid <> pg_backend_pid()
              AND l.relation = ANY (SELECT x::regclass::oid FROM unnest(millrace.slot_tables(v_slot.slot)) x);
            action := 'blocked'; segment := v_slot.slot;
            detail := format('slot %s cannot be reclaimed: %s', v_slot.slot,
                             coalesce('in use by ' || v_holders, 'its tables are in use'));
            RETURN NEXT;
            pids := NULL;
            CONTINUE;
        END IF;
        SELECT coalesce(max(c.n), 0) + 1 INTO v_n FROM millrace.reclaim c;
        INSERT INTO millrace.reclaim (id, segment, n, copied) VALUES (nextval('millrace.ring_seq'), v_slot.slot, v_n, v_copied);
        action := 'reclaimed'; segment := v_slot.slot;
        detail := format('slot %s reclaimed into slot %s, %s rows carried forward', v_slot.slot, v_cur.segment, v_copied)
                  || CASE WHEN v_park THEN format(' (its backlog, more than %s jobs or %s bytes not yet claimed, in queue(s) %s, into the park)',
                                                  p_max_carry, p_max_carry_bytes, v_b.queues) ELSE '' END;
        RETURN NEXT;
        v_reclaimed := true;
    END LOOP;

    -- The park, emptied into the ring once what it holds has mostly been
    -- claimed: checked in rounds that reclaimed a slot (about once a
    -- rotation period), at the cost of a bounded backlog read.
    IF v_reclaimed THEN
        v_copied := millrace.reclaim_park(p_max_carry, p_max_carry_bytes, v_cur.segment);
        IF v_copied IS NOT NULL THEN
            action := 'reclaimed'; segment := millrace.park_slot();
            detail := format('the park emptied into slot %s, %s rows carried forward', v_cur.segment, v_copied);
            RETURN NEXT;
        END IF;
    END IF;

    IF v_cur.at <= now() - p_after THEN
        SELECT g::smallint INTO segment FROM generate_series(1, millrace.slots() - 1) k
        CROSS JOIN LATERAL (SELECT (v_cur.segment + k) % millrace.slots() AS g) x
        WHERE millrace.slot_is_clean(x.g)
        ORDER BY k LIMIT 1;
        IF FOUND THEN
            INSERT INTO millrace.rotation (id, segment, n) VALUES (nextval('millrace.ring_seq'), segment, v_cur.n + 1);
            action := 'rotated'; detail := format('slot %s is current', segment);
            RETURN NEXT;
        ELSE
            action := 'waiting'; segment := v_cur.segment;
            detail := format('slot %s stays current (%s s): no other slot is clean yet', v_cur.segment,
                             extract(epoch FROM now() - v_cur.at)::bigint);
            RETURN NEXT;
        END IF;
    END IF;
    -- The ledgers keep their newest 100 rows (budgeted: one dead tuple per
    -- rotation or reclaim).
    DELETE FROM millrace.rotation r WHERE r.id < (SELECT min(id) FROM (SELECT id FROM millrace.rotation ORDER BY id DESC LIMIT 100) k);
    DELETE FROM millrace.reclaim c WHERE c.id < (SELECT min(id) FROM (SELECT id FROM millrace.reclaim ORDER BY id DESC LIMIT 100) k);
END $function$;
COMMENT ON FUNCTION millrace.rotate(p_after interval, p_max_carry bigint, p_term bigint, p_max_carry_bytes bigint, p_wait interval) IS
    'rotate is one round of ring maintenance, serialized by an advisory lock and reading the ledger only after it holds it (so two leaders can never both rotate from the same state): 1. reclaim every slot that is not current, not clean, and stopped being current at least p_after ago (or any such slot when no slot is clean), each under ACCESS EXCLUSIVE NOWAIT locks tried a few times: a slot in use is skipped and named, never waited for (with p_wait, its locks are waited for at most p_wait: the leader passes it while it cancels the readers that kept a slot past its time; never behind a session idle in a transaction that holds the slot, which no cancel frees). A slot whose jobs not yet claimed (a backlog) are more than p_max_carry jobs or p_max_carry_bytes bytes (stored size, measured by backlog; null: no byte bound) is reclaimed all the same, its backlog moved once into the park (slot 4 of job, outside the ring) instead of the current slot, so that a queue nobody works costs its own bytes and never stops the ring; the park is emptied into the ring (reclaim_park) once what it holds has mostly been claimed; 2. make the next clean slot current once the current one is p_after old. It returns one row per action or obstacle; pids are the process ids of the backends that held a slot it could not reclaim (action blocked), for the leader to watch without reading them out of detail. p_term is the calling leader''s term (fence_leader).';

CREATE OR REPLACE FUNCTION millrace.ring_stats(OUT current_slot smallint, OUT since timestamp with time zone, OUT rotations bigint, OUT reclaims bigint, OUT last_reclaim timestamp with time zone)
 RETURNS record
 LANGUAGE sql
 STABLE SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
 SET jit TO 'off'
AS $function$
    SELECT r.segment, r.at, r.n, c.n, c.at
    FROM (SELECT * FROM millrace.rotation ORDER BY id DESC LIMIT 1) r
    LEFT JOIN LATERAL (SELECT * FROM millrace.reclaim ORDER BY id DESC LIMIT 1) c ON true
$function$;
COMMENT ON FUNCTION millrace.ring_stats(OUT current_slot smallint, OUT since timestamp with time zone, OUT rotations bigint, OUT reclaims bigint, OUT last_reclaim timestamp with time zone) IS
    'ring_stats reports the ring: current slot, when it became current, the number of rotations and reclaims since install, and per slot its bytes.';
