-- millrace functions, ack: outcomes of attempts flushed in bulk, idempotent per (owner, seq) and fenced by lease token; transactional completion.
--
-- The current definition of every function lives once, in internal/schema/functions/;
-- Migrate applies these files with CREATE OR REPLACE after the versioned migrations,
-- in file-name order, in the same transaction. A signature change needs a migration
-- that drops the old function (docs/contributing.md).

CREATE OR REPLACE FUNCTION millrace.pending(p_id bigint)
 RETURNS boolean
 LANGUAGE plpgsql
 SET search_path TO 'pg_catalog', 'pg_temp'
 SET jit TO 'off'
 SET plan_cache_mode TO 'auto'
AS $function$
DECLARE
    v_since timestamptz := millrace.live_since(p_id);
BEGIN
    RETURN v_since IS NOT NULL AND millrace.final_state(p_id, v_since) IS NULL;
END $function$;
COMMENT ON FUNCTION millrace.pending(p_id bigint) IS
    'pending says job p_id exists and has not finished. An unfinished job always has a job row or a schedule row (reclaims carry them forward).';

CREATE OR REPLACE FUNCTION millrace.flush(p_owner integer, p_seq bigint, p_job bigint[], p_tick bigint[], p_token bigint[], p_state smallint[], p_attempt integer[], p_error text[], p_retry_at timestamp with time zone[], p_queue text[], p_kind text[], p_args jsonb[], p_priority smallint[], p_max_attempts integer[], p_created_at timestamp with time zone[], p_timeout_ms integer[], p_started timestamp with time zone[], p_finished timestamp with time zone[], p_done_tick bigint[], p_done_token bigint[], p_done_queue text[], p_replay boolean DEFAULT true, p_key_queue text[] DEFAULT NULL::text[], p_key text[] DEFAULT NULL::text[], p_key_n integer[] DEFAULT NULL::integer[])
 RETURNS SETOF bigint
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
 SET jit TO 'off'
 SET plan_cache_mode TO 'force_generic_plan'
AS $function$
DECLARE
    -- One generic plan per statement (plan_cache_mode): see claim.
    v_fenced bigint[];
    v_new    boolean[];
    v_slot   smallint;
    v_n      bigint;
    v_off    interval;
    v_b_at    timestamptz;
    v_b_done  smallint;
    v_b_other smallint;
BEGIN
    PERFORM pg_advisory_xact_lock(millrace.flush_space(), p_owner);
    IF EXISTS (SELECT 1 FROM millrace.flush f WHERE f.owner = p_owner AND f.seq = p_seq) THEN
        RETURN;  -- already applied: this is a replay
    END IF;
    v_slot := millrace.current_segment();
    -- The worker's clock decides nothing: its times (started, finished, a
    -- retry's or snooze's due time) are read on the server's clock, shifted
    -- by the server's time now less the newest finish in the flush (a
    -- flush is sent as its acks come in, so that is the worker's skew, to
    -- within the flush's delay). Durations and delays stay as measured.
    v_off := coalesce(clock_timestamp() - (SELECT max(f) FROM unnest(p_finished) f), interval '0');
    INSERT INTO millrace.flush (slot, owner, seq) VALUES (v_slot, p_owner, p_seq);
    -- Fencing: hold each batch's fence lock shared while checking that no
    -- newer lease exists; a release or adoption takes it exclusively.
    PERFORM pg_advisory_xact_lock_shared(millrace.fence_space(), (t % 2147483647)::int)
    FROM (SELECT DISTINCT t FROM unnest(p_tick || p_done_tick) t ORDER BY t) x;
    -- A batch is fenced when the token given is not its newest lease, or
    -- when it is closed or gone. Each probe is a scalar subquery, never
    -- EXISTS: in the cached plan EXISTS may become a hashed subplan, which
    -- reads every row of the table at each call (see docs/architecture.md,
    -- "Probes, not hashes").
    -- The batch's holder token as millrace.holder reads it, inline: a
    -- flush at 800 jobs/s carries about as many batches as jobs, and a
    -- call per batch (its SET clauses) cost more than the two probes.
    SELECT coalesce(array_agg(x.t), '{}') INTO v_fenced FROM (
        SELECT DISTINCT u.t, u.k FROM unnest(p_tick || p_done_tick, p_token || p_done_token) AS u(t, k)) x
    WHERE (SELECT h.token FROM ((SELECT l.token FROM millrace.lease l WHERE l.tick_id = x.t ORDER BY l.token DESC LIMIT 1)
                                UNION ALL
                                (SELECT t.tick_id FROM millrace.tick t WHERE t.tick_id = x.t AND NOT t.carried LIMIT 1)) h
           ORDER BY h.token DESC LIMIT 1) IS DISTINCT FROM x.k
       OR (SELECT count(*) FROM millrace.done d WHERE d.tick_id = x.t) > 0;
    -- v_new[i]: ack i is written (not fenced, not already written).
    SELECT coalesce(array_agg(u.t <> ALL (v_fenced)
               AND (NOT p_replay OR (SELECT count(*) FROM millrace.ack a WHERE a.tick_id = u.t AND a.job_id = u.j) = 0)
               ORDER BY u.i), '{}')
    INTO v_new
    FROM unnest(p_job, p_tick) WITH ORDINALITY AS u(j, t, i);

    -- A completed job of a batch this flush finishes gets no ack row: the
    -- batch's done row, written below in this transaction, says that
    -- every job of it has an outcome, and a job of a done batch with no
    -- other ack completed (its history row says so). Nothing reads the
    -- acks of a done batch: reclaim, rescue and adoption read those of
    -- open batches, and a flush or completion of a done batch is fenced.
    -- At 800 jobs/s a batch holds one or two jobs and nearly every one
    -- closes in the flush that completes it: 178 bytes of WAL a job.
    -- Such a flush (every outcome a completion, every batch done here)
    -- writes no ack at all, and sets up no insert (two array tests).
    IF NOT coalesce(1 = ALL (p_state), false) OR NOT coalesce(p_tick <@ p_done_tick, false) THEN
        INSERT INTO millrace.ack (slot, job_id, tick_id, token, state, attempt, error)
        SELECT v_slot, u.j, u.t, u.k, u.s, u.a, u.e
        FROM unnest(p_job, p_tick, p_token, p_state, p_attempt, p_error) WITH ORDINALITY AS u(j, t, k, s, a, e, i)
        WHERE v_new[u.i] AND NOT (u.s = 1 AND u.t = ANY (p_done_tick));
    END IF;

    -- Failed (2) and snoozed (5) attempts go to the schedule; most
    -- flushes have none, and the statement would unnest every array.
    IF 2 = ANY (p_state) OR 5 = ANY (p_state) THEN
        INSERT INTO millrace.sched (gen, id, queue, kind, args, priority, attempt, max_attempts, created_at, due_at, last_error, timeout_ms)
        SELECT millrace.current_gen(), u.j, u.q, u.kd, u.ar, u.p, CASE WHEN u.s = 5 THEN u.a - 1 ELSE u.a END, u.m,
               least(u.c, now()),  -- a job is never created later than now: lookups bound its history by it
               -- a due time every reader can scan: years 1 to 9999 (as insert_many's rule)
               CASE WHEN u.r + v_off < '0001-01-01 00:00:00+00'::timestamptz THEN '0001-01-01 00:00:00+00'::timestamptz
                    WHEN u.r + v_off >= '10000-01-01 00:00:00+00'::timestamptz THEN '9999-12-31 23:59:59.999999+00'::timestamptz
                    ELSE u.r + v_off END,
               u.e,
               coalesce(u.tm, 0)
        FROM unnest(p_job, p_state, p_attempt, p_error, p_retry_at, p_queue, p_kind, p_args, p_priority,
                    p_max_attempts, p_created_at, p_timeout_ms) WITH ORDINALITY AS u(j, s, a, e, r, q, kd, ar, p, m, c, tm, i)
        WHERE u.s IN (2, 5) AND v_new[u.i];
        -- A retry or a snooze due within a second is announced on
        -- millrace_sched by the process that flushed, once this commits (its
        -- Sender, outside any transaction): a NOTIFY here held the server's
        -- one notification lock through this commit's WAL flush, and every
        -- other notifying commit waited behind it.
    END IF;

    -- History's buckets by the time of this flush, computed once (a row's
    -- bucket depends on its state only as completed or not). The time is
    -- a variable: the planner inlines history_bucket only when its
    -- argument is not volatile, and a call it does not inline plans the
    -- function's body each time.
    v_b_at := clock_timestamp();
    v_b_done := millrace.history_bucket(1::smallint, v_b_at);
    v_b_other := millrace.history_bucket(3::smallint, v_b_at);
    -- Completed attempts (version 11): one row per queue and block of 32
    -- job ids, its index entries shared by every job of it; kind,
    -- priority, attempt and max attempts are kept once when every job of
    -- the row has the same (min = max). No args: the client sends none.
    -- One aggregation pass fills every array in the same order (no ORDER
    -- BY per aggregate: each would sort the group again), so they stay
    -- parallel; readers find a job by array_position.
    IF 1 = ANY (p_state) THEN
        INSERT INTO millrace.completed (bucket, blk, queue, owner, at, kind, priority, attempt, max_attempts, ids,
                                        created_at, started_at, finished_at)
        SELECT v_b_done, millrace.id_block(u.j), u.q, p_owner, clock_timestamp(),
               CASE WHEN min(u.kd) = max(u.kd) THEN ARRAY[min(u.kd)] ELSE array_agg(u.kd) END,
               CASE WHEN min(u.p) = max(u.p) THEN ARRAY[min(u.p)] ELSE array_agg(u.p) END,
               CASE WHEN min(u.a) = max(u.a) THEN ARRAY[min(u.a)] ELSE array_agg(u.a) END,
               CASE WHEN min(u.m) = max(u.m) THEN ARRAY[min(u.m)] ELSE array_agg(u.m) END,
               array_agg(u.j), array_agg(u.c),
               array_agg(least(u.st + v_off, clock_timestamp())),
               array_agg(coalesce(least(u.f + v_off, clock_timestamp()), clock_timestamp()))
        FROM unnest(p_job, p_state, p_attempt, p_queue, p_kind, p_priority, p_max_attempts, p_created_at,
                    p_started, p_finished) WITH ORDINALITY AS u(j, s, a, q, kd, p, m, c, st, f, i)
        WHERE v_new[u.i] AND u.s = 1
        GROUP BY millrace.id_block(u.j), u.q;
    END IF;
    -- Other outcomes (most flushes have none: an insert set up over
    -- history's buckets for nothing).
    IF NOT coalesce(1 = ALL (p_state), false) THEN
        INSERT INTO millrace.finished (bucket, id, attempt, state, queue, kind, args, priority, max_attempts, created_at,
                                      started_at, finished_at, error, owner)
        SELECT v_b_other, u.j, u.a, u.s, u.q, u.kd, u.ar, u.p, u.m, u.c,
               least(u.st + v_off, clock_timestamp()), coalesce(least(u.f + v_off, clock_timestamp()), clock_timestamp()), u.e, p_owner
        FROM unnest(p_job, p_state, p_attempt, p_error, p_queue, p_kind, p_args, p_priority,
                    p_max_attempts, p_created_at, p_started, p_finished) WITH ORDINALITY AS u(j, s, a, e, q, kd, ar, p, m, c, st, f, i)
        WHERE v_new[u.i] AND u.s <> 1
          -- a job cancelled while waiting is in history already
          AND NOT (u.s = 4 AND u.st IS NULL AND millrace.final_state(u.j, u.c) = 4);
    END IF;

    INSERT INTO millrace.done (slot, queue, tick_id)
    SELECT DISTINCT v_slot, u.q, u.t FROM unnest(p_done_tick, p_done_queue) AS u(t, q)
    WHERE u.t <> ALL (v_fenced);

    -- The slots of a per-key limit that the flushed jobs held: each
    -- key's count in the process's map falls by its jobs that ended here
    -- (fenced or not: they no longer run in this process), one new map
    -- per queue, in the order of their lock keys (keyhold_put takes each
    -- one's lock: every writer of several takes them in one order).
    IF cardinality(p_key) > 0 THEN
        PERFORM millrace.keyhold_put(g.q, p_owner, g.keys, g.dn, NULL, NULL)
        FROM (SELECT u.q, array_agg(u.k) AS keys, array_agg(-u.n) AS dn
              FROM unnest(p_key_queue, p_key, p_key_n) AS u(q, k, n) WHERE u.n > 0
              GROUP BY u.q ORDER BY hashtext(u.q || '/' || p_owner::text), u.q) g;
    END IF;

    RETURN QUERY SELECT unnest(v_fenced);
END $function$;
COMMENT ON FUNCTION millrace.flush(p_owner integer, p_seq bigint, p_job bigint[], p_tick bigint[], p_token bigint[], p_state smallint[], p_attempt integer[], p_error text[], p_retry_at timestamp with time zone[], p_queue text[], p_kind text[], p_args jsonb[], p_priority smallint[], p_max_attempts integer[], p_created_at timestamp with time zone[], p_timeout_ms integer[], p_started timestamp with time zone[], p_finished timestamp with time zone[], p_done_tick bigint[], p_done_token bigint[], p_done_queue text[], p_replay boolean, p_key_queue text[], p_key text[], p_key_n integer[]) IS
    'flush writes the outcomes of finished attempts and the batches they complete, in one transaction, once per (owner, seq): a replay of a flush whose reply was lost changes nothing. Acks of a batch whose newest lease token is not the one given are dropped (fencing) and their ticks returned. Every written ack becomes history: a completed one a job of a row of millrace.completed (one row per queue and block of 32 ids, without args: p_args may be NULL there), any other a row of millrace.finished; failed (2) and snoozed (5) jobs go to the schedule (a snooze does not count an attempt). Arrays are parallel. p_replay says the caller may have sent this flush before: acks already written are then skipped one by one. Times come from the worker''s clock and are read on the server''s: shifted by the server''s time less the newest of p_finished, so a worker''s skew changes no due time and no history time. p_key_queue, p_key and p_key_n count, per queue and key of a per-key limit, the jobs of this process that ended (whether or not they have an ack here): their slots come back (each queue''s keyhold map, keyhold_put).';

CREATE OR REPLACE FUNCTION millrace.complete(p_job bigint, p_tick bigint, p_token bigint, p_attempt integer, p_queue text, p_kind text, p_args jsonb, p_priority smallint, p_max_attempts integer, p_created_at timestamp with time zone, p_started timestamp with time zone, p_owner integer)
 RETURNS void
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
 SET jit TO 'off'
 SET plan_cache_mode TO 'auto'
AS $function$
DECLARE
    v_fenced boolean;
    v_acked  boolean;
    v_at     timestamptz := clock_timestamp();  -- a variable: history_bucket is inlined (see flush)
BEGIN
    -- The check of the batch's holder below must see releases committed
    -- after the caller's transaction began: a snapshot older than its lock
    -- (REPEATABLE READ, SERIALIZABLE) could complete a job another process
    -- now runs.
    IF current_setting('transaction_isolation') <> 'read committed' THEN
        RAISE EXCEPTION 'millrace: CompleteTx needs a READ COMMITTED transaction, not %: begin it with pgx.TxOptions{IsoLevel: pgx.ReadCommitted}',
            current_setting('transaction_isolation') USING ERRCODE = '0A000';
    END IF;
    -- The fence lock, held shared to the end of the caller's transaction,
    -- is what fences: a release or an adoption of the batch takes it
    -- exclusively, so none commits between the check below and the
    -- caller's commit.
    PERFORM pg_advisory_xact_lock_shared(millrace.fence_space(), (p_tick % 2147483647)::int);
    -- The batch's tick, leases, done row and acks may be in any slot not
    -- yet reclaimed (a reclaim carries an open batch's forward): reading
    -- them opens those partitions of every slot, and the caller's
    -- transaction would keep every slot from being reclaimed until it ends
    -- (issue 20.3). The reads run in a block rolled back at once, which
    -- lets go of their locks (see insert_many); the variables keep what
    -- was read. A reclaim that then runs before the caller commits carries
    -- the open batch forward as it is (its ack, not yet committed, is in
    -- the caller's slot, which the caller holds): the batch's holder and
    -- token are unchanged, and the job's row it may copy as not yet acked
    -- is never claimed again (its txid is behind the lane's tick) and goes
    -- with a later reclaim.
    BEGIN
        v_fenced := (SELECT h.token FROM millrace.holder(p_tick) h) IS DISTINCT FROM p_token
                    OR EXISTS (SELECT 1 FROM millrace.done d WHERE d.tick_id = p_tick);
        v_acked := EXISTS (SELECT 1 FROM millrace.ack a WHERE a.tick_id = p_tick AND a.job_id = p_job);
        RAISE EXCEPTION USING ERRCODE = 'MR001';  -- roll the reads back: their locks go
    EXCEPTION WHEN SQLSTATE 'MR001' THEN
        NULL;
    END;
    IF v_fenced THEN
        RAISE EXCEPTION 'millrace: job % was released to another process; it cannot be completed here', p_job
            USING ERRCODE = '40001';
    END IF;
    IF v_acked THEN
        RAISE EXCEPTION 'millrace: job % already has an outcome', p_job USING ERRCODE = '55000';
    END IF;
    -- Into the slot the caller's transaction writes into (txn_slot: the
    -- current one, unless it enqueued earlier), so that it holds one slot.
    INSERT INTO millrace.ack (slot, job_id, tick_id, token, state, attempt)
    VALUES (millrace.txn_slot(), p_job, p_tick, p_token, 1, p_attempt);
    INSERT INTO millrace.finished (bucket, id, attempt, state, queue, kind, args, priority, max_attempts, created_at,
                                  started_at, finished_at, owner)
    VALUES (millrace.history_bucket(1::smallint, v_at), p_job, p_attempt, 1, p_queue, p_kind, NULL, p_priority,
            p_max_attempts, p_created_at, least(p_started, v_at), v_at, p_owner);
END $function$;
COMMENT ON FUNCTION millrace.complete(p_job bigint, p_tick bigint, p_token bigint, p_attempt integer, p_queue text, p_kind text, p_args jsonb, p_priority smallint, p_max_attempts integer, p_created_at timestamp with time zone, p_started timestamp with time zone, p_owner integer) IS
    'complete finalizes an attempt inside the caller''s transaction (exactly-once for the handler''s database effects): the ack, the batch''s done row when it is the last, and the history row (without args: history keeps none for a completed attempt, and p_args is not read; it stays in the signature of version 8), bucketed by the time it is called, not by its transaction''s start, which may be older than the job. The caller''s transaction must be READ COMMITTED. It reads the batch''s state in a subtransaction rolled back at once, so that the caller''s transaction holds only the slot its ack goes to.';

CREATE OR REPLACE FUNCTION millrace.mark_started(p_owner integer, p_tick bigint[], p_token bigint[], p_job bigint[])
 RETURNS SETOF bigint
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
 SET jit TO 'off'
 SET plan_cache_mode TO 'force_generic_plan'
AS $function$
DECLARE
    -- One generic plan per statement (plan_cache_mode): see claim.
    v_fenced bigint[];
BEGIN
    -- Fencing, as in flush: each batch's fence lock held shared while its
    -- newest lease is checked; a release or adoption takes it exclusively.
    PERFORM pg_advisory_xact_lock_shared(millrace.fence_space(), (t % 2147483647)::int)
    FROM (SELECT DISTINCT t FROM unnest(p_tick) t ORDER BY t) x;
    -- A batch whose rows are gone (closed and reclaimed while this
    -- process was stopped) has no holder: fenced too.
    -- The holder's token as millrace.holder reads it, inline (as flush
    -- does): a call of holder per batch, its SET clauses, cost more than
    -- its two probes.
    SELECT coalesce(array_agg(x.t), '{}') INTO v_fenced FROM (
        SELECT DISTINCT u.t, u.k FROM unnest(p_tick, p_token) AS u(t, k)) x
    WHERE (SELECT h.token FROM ((SELECT l.token FROM millrace.lease l WHERE l.tick_id = x.t ORDER BY l.token DESC LIMIT 1)
                                UNION ALL
                                (SELECT t.tick_id FROM millrace.tick t WHERE t.tick_id = x.t AND NOT t.carried LIMIT 1)) h
           ORDER BY h.token DESC LIMIT 1) IS DISTINCT FROM x.k
       OR (SELECT count(*) FROM millrace.done d WHERE d.tick_id = x.t) > 0;  -- a probe, not EXISTS (see flush)
    INSERT INTO millrace.start (slot, tick_id, token, jobs)
    SELECT millrace.current_segment(), u.t, u.k, array_agg(u.j ORDER BY u.j)
    FROM unnest(p_tick, p_token, p_job) AS u(t, k, j)
    WHERE u.t <> ALL (v_fenced)
    GROUP BY u.t, u.k;
    RETURN QUERY SELECT unnest(v_fenced);
END $function$;
COMMENT ON FUNCTION millrace.mark_started(p_owner integer, p_tick bigint[], p_token bigint[], p_job bigint[]) IS
    'mark_started records that process p_owner is about to start jobs p_job of batches p_tick under lease tokens p_token (parallel arrays; one row per batch), before their handlers run: if the process dies while they run, rescue charges them an attempt, and only them. It returns the batches that were released meanwhile (fenced): their jobs must not start. A replay after a lost reply marks the same jobs again, which changes nothing.';
