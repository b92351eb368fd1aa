-- millrace functions, leader and processes: registration and liveness, rescue of dead processes' batches, promotion of due jobs, periodic slots, tally rounds.
--
-- The current definition of every function lives once, in internal/schema/functions/;
-- Migrate applies these files with CREATE OR REPLACE after the versioned migrations,
-- in file-name order, in the same transaction. A signature change needs a migration
-- that drops the old function (docs/contributing.md).

CREATE OR REPLACE FUNCTION millrace.register(p_name text, p_host text, p_pid integer)
 RETURNS integer
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
 SET jit TO 'off'
AS $function$
DECLARE
    v_id int := nextval('millrace.process_id_seq')::int;
BEGIN
    -- Lock first, then insert: a registered row is never seen unlocked
    -- while its process lives.
    PERFORM pg_advisory_lock(millrace.lock_space(), v_id);
    INSERT INTO millrace.process (id, name, host, pid) VALUES (v_id, left(p_name, 200), left(p_host, 200), p_pid);
    RETURN v_id;
END $function$;
COMMENT ON FUNCTION millrace.register(p_name text, p_host text, p_pid integer) IS
    'register records a client process and takes its liveness lock in the caller''s session (the lock belongs to the session, not to the function).';

CREATE OR REPLACE FUNCTION millrace.release(p_owner integer)
 RETURNS integer
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
 SET jit TO 'off'
AS $function$
DECLARE
    v record;
    v_n int := 0;
BEGIN
    FOR v IN SELECT * FROM millrace.open_batches() o WHERE o.owner = p_owner ORDER BY o.tick_id LOOP
        PERFORM pg_advisory_xact_lock(millrace.fence_space(), (v.tick_id % 2147483647)::int);
        CONTINUE WHEN (SELECT h.token FROM millrace.holder(v.tick_id) h) <> v.token;
        INSERT INTO millrace.lease (slot, queue, tick_id, token, owner)
        VALUES (millrace.current_segment(), v.queue, v.tick_id, nextval('millrace.tick_id_seq'), 0);
        PERFORM pg_notify('millrace', v.queue);
        v_n := v_n + 1;
    END LOOP;
    RETURN v_n;
END $function$;
COMMENT ON FUNCTION millrace.release(p_owner integer) IS
    'release gives the open batches held by process p_owner back to any claimer of their queue at once (a stopping process calls it for the jobs it did not finish), instead of waiting for the leader to see it gone.';

CREATE OR REPLACE FUNCTION millrace.process_alive(p integer)
 RETURNS boolean
 LANGUAGE sql
 STABLE
 SET search_path TO 'pg_catalog', 'pg_temp'
 SET jit TO 'off'
AS $function$
    SELECT EXISTS (
        SELECT 1 FROM pg_locks l
        WHERE l.locktype = 'advisory' AND l.granted
          AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())
          AND l.classid = millrace.lock_space()::oid AND l.objid = p::oid AND l.objsubid = 2)
$function$;
COMMENT ON FUNCTION millrace.process_alive(p integer) IS
    'process_alive reports whether process p holds its liveness lock.';

CREATE OR REPLACE FUNCTION millrace.rescue(p_stuck interval)
 RETURNS TABLE(queue text, tick_id bigint, owner integer, reason text)
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
 SET jit TO 'off'
AS $function$
#variable_conflict use_column
DECLARE
    v record;
    v_alive boolean;
BEGIN
    PERFORM pg_advisory_xact_lock(millrace.maint_space(), 1);
    FOR v IN SELECT * FROM millrace.open_batches() o WHERE o.owner <> 0 ORDER BY o.tick_id LOOP
        v_alive := millrace.process_alive(v.owner);
        CONTINUE WHEN v_alive AND v.leased_at > now() - p_stuck;
        PERFORM pg_advisory_xact_lock(millrace.fence_space(), (v.tick_id % 2147483647)::int);
        CONTINUE WHEN (SELECT h.token FROM millrace.holder(v.tick_id) h) <> v.token;
        INSERT INTO millrace.lease (slot, queue, tick_id, token, owner)
        VALUES (millrace.current_segment(), v.queue, v.tick_id, nextval('millrace.tick_id_seq'), 0);
        PERFORM pg_notify('millrace', v.queue);
        queue := v.queue; tick_id := v.tick_id; owner := v.owner;
        reason := CASE WHEN v_alive THEN 'stuck' ELSE 'dead' END;
        RETURN NEXT;
    END LOOP;
    -- Forget processes that are gone (budgeted: one dead tuple per process).
    DELETE FROM millrace.process p WHERE NOT millrace.process_alive(p.id);
END $function$;
COMMENT ON FUNCTION millrace.rescue(p_stuck interval) IS
    'rescue releases, to any claimer of their queue, the open batches whose holder is dead (its liveness lock is free: it exited, crashed, lost its connection, or never lived past a claim that committed late) or whose lease is older than p_stuck. It does not depend on the process table, so a batch claimed after its process was declared dead is found too. It returns what it released and forgets dead processes.';

CREATE OR REPLACE FUNCTION millrace.next_due()
 RETURNS timestamp with time zone
 LANGUAGE sql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
 SET jit TO 'off'
AS $function$
    SELECT min(s.due_at) FROM millrace.sched s
    WHERE s.due_at > coalesce((SELECT p.upto FROM millrace.promote p ORDER BY p.round DESC LIMIT 1), '-infinity')
$function$;
COMMENT ON FUNCTION millrace.next_due() IS
    'next_due is when the next scheduled job not yet promoted is due (NULL: none); the leader''s promoter sleeps until then, and at most 50 ms.';

CREATE OR REPLACE FUNCTION millrace.promote(p_compact_min bigint DEFAULT 10000)
 RETURNS bigint
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
 SET jit TO 'off'
AS $function$
DECLARE
    v_snap  pg_snapshot;
    v_now   timestamptz := clock_timestamp();
    v_last  millrace.promote;
    v_n     bigint := 0;
    v_q     text;
    v_gen   millrace.sched_gen;
    v_copied bigint;
    v_queues text[];
BEGIN
    PERFORM pg_advisory_xact_lock(millrace.maint_space(), 2);
    v_snap := pg_current_snapshot();
    SELECT * INTO v_last FROM millrace.promote p ORDER BY p.round DESC LIMIT 1;
    -- A round's time never goes below the last one's, even if the server
    -- clock steps back: otherwise due rows would be promoted twice.
    v_now := greatest(clock_timestamp(), v_last.upto);
    WITH due AS (
        SELECT s.* FROM millrace.sched s
        WHERE v_last IS NULL AND s.due_at <= v_now AND pg_visible_in_snapshot(s.txid, v_snap)
        UNION ALL
        SELECT s.* FROM millrace.sched s
        WHERE v_last IS NOT NULL AND s.due_at > v_last.upto AND s.due_at <= v_now AND pg_visible_in_snapshot(s.txid, v_snap)
        UNION ALL
        SELECT s.* FROM millrace.sched s
        WHERE v_last IS NOT NULL AND s.txid >= pg_snapshot_xmax(v_last.snap) AND s.due_at <= v_last.upto
          AND pg_visible_in_snapshot(s.txid, v_snap)
        UNION ALL
        SELECT s.* FROM millrace.sched s
        WHERE v_last IS NOT NULL AND s.txid = ANY (ARRAY(SELECT pg_snapshot_xip(v_last.snap))) AND s.due_at <= v_last.upto
          AND pg_visible_in_snapshot(s.txid, v_snap)),
    ins AS (
        INSERT INTO millrace.job (slot, id, queue, kind, args, priority, attempt, max_attempts, created_at, ready_at, timeout_ms)
        SELECT millrace.current_segment(), id, queue, kind, args, priority, attempt, max_attempts, created_at, due_at, timeout_ms
        FROM due
        WHERE NOT EXISTS (SELECT 1 FROM millrace.cancel c WHERE c.job_id = due.id)  -- cancelled while scheduled
        RETURNING job.queue)
    SELECT count(*), array_agg(DISTINCT ins.queue) INTO v_n, v_queues FROM ins;
    FOR v_q IN SELECT unnest(v_queues) LOOP
        PERFORM pg_notify('millrace', v_q);
    END LOOP;
    IF v_n > 0 OR v_last IS NULL OR v_now - v_last.upto > interval '1 minute' THEN
        INSERT INTO millrace.promote (slot, round, upto, snap, total)
        VALUES (millrace.current_segment(), nextval('millrace.tick_id_seq'), v_now, v_snap, coalesce(v_last.total, 0) + v_n)
        RETURNING * INTO v_last;
    END IF;

    SELECT * INTO v_gen FROM millrace.sched_gen g ORDER BY g.id DESC LIMIT 1;
    IF v_last.total - v_gen.promoted >= greatest(p_compact_min, v_gen.copied) THEN
        BEGIN
            EXECUTE format('LOCK TABLE millrace.%I IN ACCESS EXCLUSIVE MODE NOWAIT', 'sched_' || v_gen.gen);
            EXECUTE format($q$
                INSERT INTO millrace.sched (gen, id, queue, kind, args, priority, attempt, max_attempts, created_at, due_at,
                                            last_error, txid, timeout_ms)
                SELECT %s, s.id, s.queue, s.kind, s.args, s.priority, s.attempt, s.max_attempts, s.created_at, s.due_at,
                       s.last_error, s.txid, s.timeout_ms
                FROM millrace.%I s
                WHERE NOT (pg_visible_in_snapshot(s.txid, $1) AND s.due_at <= $2)$q$, 1 - v_gen.gen, 'sched_' || v_gen.gen)
            USING v_last.snap, v_last.upto;
            GET DIAGNOSTICS v_copied = ROW_COUNT;
            EXECUTE format('TRUNCATE millrace.%I', 'sched_' || v_gen.gen);
            INSERT INTO millrace.sched_gen (id, gen, copied, promoted)
            VALUES (nextval('millrace.ring_seq'), 1 - v_gen.gen, v_copied, v_last.total);
        EXCEPTION WHEN lock_not_available THEN
            NULL;  -- a producer is writing into it; compact at a later round
        END;
    END IF;
    RETURN v_n;
END $function$;
COMMENT ON FUNCTION millrace.promote(p_compact_min bigint) IS
    'promote moves scheduled jobs that are due into the current slot; a promoted job is ready from the time it was due. Every p_compact_min promotions it compacts the schedule into its other generation.';

CREATE OR REPLACE FUNCTION millrace.periodic_last(p_name text)
 RETURNS timestamp with time zone
 LANGUAGE sql
 STABLE SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
 SET jit TO 'off'
AS $function$
    SELECT max(p.slot_at) FROM millrace.periodic p WHERE p.name = p_name
$function$;
COMMENT ON FUNCTION millrace.periodic_last(p_name text) IS
    'periodic_last is the newest slot of periodic job p_name enqueued.';

CREATE OR REPLACE FUNCTION millrace.periodic_run(p_name text, p_slot_at timestamp with time zone, p_kind text, p_args jsonb, p_queue text, p_priority integer, p_max_attempts integer, p_timeout_ms integer DEFAULT 0)
 RETURNS bigint
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
 SET jit TO 'off'
AS $function$
DECLARE
    v_id bigint;
BEGIN
    -- Leaders trying the same slot are serialized; the later one sees the
    -- earlier one's row once it commits (READ COMMITTED: each statement
    -- here takes a new snapshot).
    PERFORM pg_advisory_xact_lock(millrace.uniq_space(), hashtext('periodic:' || p_name));
    IF EXISTS (SELECT 1 FROM millrace.periodic p WHERE p.name = p_name AND p.slot_at = p_slot_at) THEN
        RETURN NULL;
    END IF;
    SELECT i.id INTO v_id FROM millrace.insert_many(ARRAY[p_kind], ARRAY[p_args], ARRAY[p_queue], ARRAY[p_priority],
                                                    ARRAY[NULL::timestamptz], ARRAY[p_max_attempts], NULL, NULL, NULL,
                                                    ARRAY[p_timeout_ms]) i;
    INSERT INTO millrace.periodic (name, slot_at, job_id) VALUES (p_name, p_slot_at, v_id);
    RETURN v_id;
END $function$;
COMMENT ON FUNCTION millrace.periodic_run(p_name text, p_slot_at timestamp with time zone, p_kind text, p_args jsonb, p_queue text, p_priority integer, p_max_attempts integer, p_timeout_ms integer) IS
    'periodic_run enqueues the job of periodic slot (p_name, p_slot_at) unless some process did already; it returns the job''s id, or NULL.';

CREATE OR REPLACE FUNCTION millrace.tally(p_every interval)
 RETURNS bigint
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
 SET jit TO 'off'
AS $function$
DECLARE
    v_last  millrace.tally_round;
    v_snap  pg_snapshot;
    v_round bigint;
    v_n     bigint;
BEGIN
    -- A round's snapshot must see every transaction but its own as others
    -- do: its own xid (left out of its in-progress list) would pass as
    -- counted, and an older snapshot would count rows again.
    IF pg_current_xact_id_if_assigned() IS NOT NULL OR current_setting('transaction_isolation') <> 'read committed' THEN
        RAISE EXCEPTION 'millrace: tally must run at READ COMMITTED in a transaction that has written nothing'
            USING ERRCODE = '0A000';
    END IF;
    IF NOT pg_try_advisory_xact_lock(millrace.maint_space(), 3) THEN
        RETURN NULL;  -- another leader is tallying
    END IF;
    SELECT * INTO v_last FROM millrace.tally_round r ORDER BY r.round DESC LIMIT 1;
    IF v_last.at > now() - p_every THEN
        RETURN NULL;
    END IF;
    v_snap := pg_current_snapshot();
    v_round := nextval('millrace.ring_seq');
    WITH ins AS (
        INSERT INTO millrace.tally (bucket, round, queue, state, n)
        SELECT x.bucket, v_round, x.queue, x.state, x.n FROM millrace.history_new(v_last.snap, v_snap) x
        RETURNING tally.n)
    SELECT coalesce(sum(ins.n), 0) INTO v_n FROM ins;
    INSERT INTO millrace.tally_round (slot, round, snap) VALUES (millrace.current_segment(), v_round, v_snap);
    RETURN v_n;
END $function$;
COMMENT ON FUNCTION millrace.tally(p_every interval) IS
    'tally runs a tally round if the newest is at least p_every old (the leader calls it at every maintenance round); it returns the rows it counted, or NULL when it was not yet time.';
