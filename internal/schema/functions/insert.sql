-- millrace functions, enqueue: the input rules, unique keys, and the insert every producer path goes through (enqueue, enqueue_many, the Go client).
--
-- The current definition of every function lives once, in internal/schema/functions/;
-- Migrate applies these files with CREATE OR REPLACE after the versioned migrations,
-- in file-name order, in the same transaction. A signature change needs a migration
-- that drops the old function (docs/contributing.md).

CREATE OR REPLACE FUNCTION millrace.check_job(p_kind text, p_args jsonb, p_queue text, p_priority integer, p_max_attempts integer)
 RETURNS void
 LANGUAGE plpgsql
 IMMUTABLE
 SET search_path TO 'pg_catalog', 'pg_temp'
 SET jit TO 'off'
 SET plan_cache_mode TO 'auto'
AS $function$
BEGIN
    IF p_kind IS NULL OR octet_length(p_kind) NOT BETWEEN 1 AND 255 THEN
        RAISE EXCEPTION 'millrace: kind must be 1 to 255 bytes' USING ERRCODE = '22023';
    END IF;
    IF p_queue IS NULL OR octet_length(p_queue) NOT BETWEEN 1 AND 128 THEN
        RAISE EXCEPTION 'millrace: queue must be 1 to 128 bytes' USING ERRCODE = '22023';
    END IF;
    IF p_args IS NULL THEN
        RAISE EXCEPTION 'millrace: args must not be null' USING ERRCODE = '22023';
    END IF;
    IF p_priority IS NULL OR p_priority NOT BETWEEN 0 AND 32767 THEN
        RAISE EXCEPTION 'millrace: priority must be 0 to 32767' USING ERRCODE = '22023';
    END IF;
    IF p_max_attempts IS NULL OR p_max_attempts NOT BETWEEN 1 AND 1000 THEN
        RAISE EXCEPTION 'millrace: max_attempts must be 1 to 1000' USING ERRCODE = '22023';
    END IF;
END $function$;
COMMENT ON FUNCTION millrace.check_job(p_kind text, p_args jsonb, p_queue text, p_priority integer, p_max_attempts integer) IS
    'check_job enforces the rules every enqueue path meets (the Go client mirrors them with the same messages).';

CREATE OR REPLACE FUNCTION millrace.uniq_blocks(p_job bigint, p_states integer, p_until timestamp with time zone, p_since timestamp with time zone, OUT blocks boolean, OUT final smallint, OUT final_at timestamp with time zone)
 RETURNS record
 LANGUAGE plpgsql
 SET search_path TO 'pg_catalog', 'pg_temp'
 SET jit TO 'off'
 SET plan_cache_mode TO 'auto'
AS $function$
BEGIN
    IF p_until IS NOT NULL AND p_until <= now() THEN
        blocks := false;
        RETURN;
    END IF;
    -- A job still waiting (in the schedule, or its newest row not yet
    -- claimed) and never cancelled has run to no end: it blocks, and
    -- history has nothing to say. Two index probes and live_state's answer
    -- this, where history's lookup plans two statements over the buckets
    -- at each call (0.27 ms of a duplicate's 0.30 ms, 2.1 ms in the full
    -- mix at 800 jobs/s). A job retried by retry(...) has a new id; a
    -- cancelled one goes the long way.
    IF NOT EXISTS (SELECT 1 FROM millrace.cancel c WHERE c.job_id = p_job)
       AND millrace.live_state(p_job) IN ('scheduled', 'available') THEN
        blocks := true;
        RETURN;
    END IF;
    SELECT f.state, f.started_at INTO final, final_at FROM millrace.final_attempt(p_job, p_since) f;
    blocks := CASE final
                  WHEN 1 THEN p_states & 2 <> 0
                  WHEN 3 THEN p_states & 4 <> 0
                  WHEN 4 THEN p_states & 8 <> 0
                  ELSE EXISTS (SELECT 1 FROM millrace.job j WHERE j.id = p_job)
                       OR EXISTS (SELECT 1 FROM millrace.sched s WHERE s.id = p_job) END;
END $function$;
COMMENT ON FUNCTION millrace.uniq_blocks(p_job bigint, p_states integer, p_until timestamp with time zone, p_since timestamp with time zone, OUT blocks boolean, OUT final smallint, OUT final_at timestamp with time zone) IS
    'uniq_blocks(job, states, until, since) says a key row (its job created at p_since) still blocks a new job with its key: its period has not ended, and its job is finished in a state the key names, or unfinished (it has a live row); final is the job''s finished state when history holds one (as final_state), and final_at when that final attempt started (final_attempt), so that a duplicate''s state and time are known without a second lookup.';

CREATE OR REPLACE FUNCTION millrace.insert_many(p_kind text[], p_args jsonb[], p_queue text[], p_priority integer[], p_run_at timestamp with time zone[], p_max_attempts integer[], p_unique_key text[] DEFAULT NULL::text[], p_unique_states integer[] DEFAULT NULL::integer[], p_unique_until timestamp with time zone[] DEFAULT NULL::timestamp with time zone[], p_timeout_ms integer[] DEFAULT NULL::integer[], p_notify boolean DEFAULT true)
 RETURNS TABLE(id bigint, duplicate boolean, scheduled boolean, run_at timestamp with time zone, state text)
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
 SET jit TO 'off'
 SET plan_cache_mode TO 'auto'
AS $function$
#variable_conflict use_column
DECLARE
    v_n int := cardinality(p_kind);
    v_bad record;
    v_q text;
    v_id bigint;
    v_u record;
    v_now timestamptz := now();
    v_slot smallint;
    v_gen smallint;
    v_blocks boolean;
    v_shown timestamptz;
    v_final smallint;
    v_final_at timestamptz;
    v_state text;
    v_due bigint;
    v_pi int[] := '{}';      -- the rows without a unique key, written after the loop,
    v_pid bigint[] := '{}';  -- and their ids (taken in the rows' order)
BEGIN
    IF cardinality(p_args) <> v_n OR cardinality(p_queue) <> v_n OR cardinality(p_priority) <> v_n
       OR cardinality(p_run_at) <> v_n OR cardinality(p_max_attempts) <> v_n
       OR (p_unique_key IS NOT NULL AND cardinality(p_unique_key) <> v_n)
       OR (p_unique_states IS NOT NULL AND cardinality(p_unique_states) <> v_n)
       OR (p_unique_until IS NOT NULL AND cardinality(p_unique_until) <> v_n)
       OR (p_timeout_ms IS NOT NULL AND cardinality(p_timeout_ms) <> v_n) THEN
        RAISE EXCEPTION 'millrace: enqueue_many arrays must have equal lengths' USING ERRCODE = '22023';
    END IF;
    SELECT u.i INTO v_bad FROM unnest(p_kind, p_args, p_queue, p_priority, p_max_attempts) WITH ORDINALITY AS u(k, a, q, p, m, i)
    WHERE k IS NULL OR octet_length(k) NOT BETWEEN 1 AND 255 OR q IS NULL OR octet_length(q) NOT BETWEEN 1 AND 128
       OR a IS NULL OR octet_length(a::text) > 1048576 OR p IS NULL OR p NOT BETWEEN 0 AND 32767
       OR m IS NULL OR m NOT BETWEEN 1 AND 1000
    LIMIT 1;
    IF FOUND THEN
        PERFORM millrace.check_job(p_kind[v_bad.i], p_args[v_bad.i], p_queue[v_bad.i], p_priority[v_bad.i], p_max_attempts[v_bad.i]);
        RAISE EXCEPTION 'millrace: %args must be at most 1048576 bytes encoded (this job''s are %)',
            CASE WHEN v_n > 1 THEN format('job %s of the %s inserted: ', v_bad.i, v_n) ELSE '' END,
            octet_length(p_args[v_bad.i]::text) USING ERRCODE = '22023';
    END IF;
    IF p_timeout_ms IS NOT NULL AND EXISTS (SELECT 1 FROM unnest(p_timeout_ms) t WHERE t < 0) THEN
        RAISE EXCEPTION 'millrace: timeout must not be negative' USING ERRCODE = '22023';
    END IF;
    -- A due time is a time every client can read and write back: finite,
    -- years 1 to 9999 (RFC 3339, JSON, Go's time.Time). 'infinity' would
    -- never come due, and no reader could scan it.
    IF EXISTS (SELECT 1 FROM unnest(p_run_at) r
               WHERE r < '0001-01-01 00:00:00+00'::timestamptz OR r >= '10000-01-01 00:00:00+00'::timestamptz) THEN
        RAISE EXCEPTION 'millrace: run_at must be a finite time in years 1 to 9999 (UTC)' USING ERRCODE = '22023';
    END IF;
    v_gen := millrace.current_gen();

    IF p_unique_key IS NULL OR NOT EXISTS (SELECT 1 FROM unnest(p_unique_key) k WHERE k IS NOT NULL) THEN
        v_slot := millrace.txn_slot();
        RETURN QUERY
        WITH u AS (
            SELECT nextval('millrace.job_id_seq') AS id, i, k, a, q, p, r, m, coalesce(t, 0) AS t
            FROM unnest(p_kind, p_args, p_queue, p_priority, p_run_at, p_max_attempts,
                        coalesce(p_timeout_ms, array_fill(0, ARRAY[v_n]))) WITH ORDINALITY AS u(k, a, q, p, r, m, t, i)
            ORDER BY i),
        now_ AS (
            INSERT INTO millrace.job (slot, id, queue, kind, args, priority, attempt, max_attempts, created_at, ready_at, timeout_ms)
            SELECT v_slot, u.id, q, k, a, p, 0, m, v_now, v_now, u.t FROM u WHERE r IS NULL OR r <= v_now
            RETURNING 1),
        later AS (
            INSERT INTO millrace.sched (gen, id, queue, kind, args, priority, attempt, max_attempts, created_at, due_at, timeout_ms)
            SELECT v_gen, u.id, q, k, a, p, 0, m, v_now, r, u.t FROM u WHERE r > v_now
            RETURNING 1)
        SELECT u.id, false, coalesce(u.r > v_now, false), greatest(coalesce(u.r, v_now), v_now),
               CASE WHEN u.r > v_now THEN 'scheduled' ELSE 'available' END FROM u ORDER BY u.i;
    ELSE
        IF current_setting('transaction_isolation') <> 'read committed' THEN
            RAISE EXCEPTION 'millrace: unique jobs must be inserted at READ COMMITTED (this transaction is %)',
                current_setting('transaction_isolation') USING ERRCODE = '0A000';
        END IF;
        FOR i IN 1 .. v_n LOOP
            duplicate := false;
            scheduled := p_run_at[i] IS NOT NULL AND p_run_at[i] > v_now;
            run_at := greatest(coalesce(p_run_at[i], v_now), v_now);
            state := CASE WHEN scheduled THEN 'scheduled' ELSE 'available' END;
            IF p_unique_key[i] IS NOT NULL THEN
                -- The key's lock is taken here, outside the block below, and
                -- held to the end of the transaction: two inserts of one key
                -- run one after the other.
                PERFORM pg_advisory_xact_lock(millrace.uniq_space(), hashtext(p_unique_key[i]));
                -- The key's newest row may be in any slot not yet reclaimed,
                -- and its job's row too: reading them opens (ACCESS SHARE)
                -- the uniq and job partitions of every slot, which would keep
                -- every slot from being reclaimed until this transaction
                -- ends (issue 20.3). The reads run in a block that is then
                -- rolled back, which lets go of those locks at once
                -- (PostgreSQL releases the locks a rolled-back subtransaction
                -- took); the local variables keep what was read. Each read
                -- is one statement, so under one snapshot taken after its
                -- locks: a reclaim that moves rows from a slot into the
                -- current one either committed before it (the rows are seen
                -- where they went) or waits for it. Letting go early changes
                -- no decision: a concurrent insert of the key waits for the
                -- key's lock; a reclaim moves the key's row (same key, same
                -- job) or drops it only when it no longer blocks; the key's
                -- job finishing is a race an insert had with it before too.
                v_blocks := false;
                v_final := NULL;
                v_shown := NULL;
                BEGIN
                    SELECT * INTO v_u FROM millrace.uniq u WHERE u.key = p_unique_key[i] ORDER BY u.job_id DESC LIMIT 1;
                    IF FOUND THEN
                        SELECT b.blocks, b.final, b.final_at INTO v_blocks, v_final, v_final_at
                        FROM millrace.uniq_blocks(v_u.job_id, v_u.states, v_u.until, v_u.at) b;
                    END IF;
                    IF v_blocks THEN
                        -- The state the caller reports for the duplicate (as
                        -- job_state says it), and when the job is or was
                        -- due, read here under the key's lock rather than by
                        -- a second call: a finished job's final attempt's
                        -- start, a scheduled one's due time, else the time
                        -- its newest row became ready (by id first, OFFSET
                        -- 0: see cancel).
                        v_state := CASE v_final WHEN 1 THEN 'completed' WHEN 3 THEN 'discarded' WHEN 4 THEN 'cancelled'
                                                ELSE millrace.live_state(v_u.job_id) END;
                        IF v_final IS NOT NULL THEN
                            v_shown := v_final_at;
                        ELSIF v_state = 'scheduled' THEN
                            SELECT millrace.due_shown(s.due_at) INTO v_shown
                            FROM (SELECT s.due_at FROM millrace.sched s WHERE s.id = v_u.job_id OFFSET 0) s
                            ORDER BY s.due_at DESC LIMIT 1;
                        ELSE
                            SELECT j.ready_at INTO v_shown
                            FROM (SELECT j.ready_at FROM millrace.job j WHERE j.id = v_u.job_id OFFSET 0) j
                            ORDER BY j.ready_at DESC LIMIT 1;
                        END IF;
                    END IF;
                    RAISE EXCEPTION USING ERRCODE = 'MR001';  -- roll the reads back: their locks go
                EXCEPTION WHEN SQLSTATE 'MR001' THEN
                    NULL;
                END;
                IF v_blocks THEN
                    id := v_u.job_id;
                    duplicate := true;
                    state := v_state;
                    run_at := v_shown;
                    scheduled := coalesce(v_state = 'scheduled', false);
                    RETURN NEXT;
                    CONTINUE;
                END IF;
            END IF;
            v_id := nextval('millrace.job_id_seq');
            id := v_id;
            IF p_unique_key[i] IS NULL THEN
                -- No key to look up: written with the others after the loop,
                -- in one statement per table (a statement a row was most of
                -- a large batch's time), under the id taken here, in order.
                v_pi[cardinality(v_pi) + 1] := i;
                v_pid[cardinality(v_pid) + 1] := v_id;
                RETURN NEXT;
                CONTINUE;
            END IF;
            -- The slot is fixed at the first row written, not before: a
            -- transaction that only found duplicates holds no slot.
            v_slot := millrace.txn_slot();
            IF scheduled THEN
                INSERT INTO millrace.sched (gen, id, queue, kind, args, priority, attempt, max_attempts, created_at, due_at, timeout_ms)
                VALUES (v_gen, v_id, p_queue[i], p_kind[i], p_args[i], p_priority[i], 0, p_max_attempts[i], v_now, p_run_at[i],
                        coalesce(p_timeout_ms[i], 0));
            ELSE
                INSERT INTO millrace.job (slot, id, queue, kind, args, priority, attempt, max_attempts, created_at, ready_at, timeout_ms)
                VALUES (v_slot, v_id, p_queue[i], p_kind[i], p_args[i], p_priority[i], 0, p_max_attempts[i], v_now, v_now,
                        coalesce(p_timeout_ms[i], 0));
            END IF;
            -- Into the slot the transaction writes its jobs into (not the
            -- current one, which may have moved on): one slot held.
            INSERT INTO millrace.uniq (slot, key, job_id, states, until)
            VALUES (v_slot, p_unique_key[i], v_id, coalesce(p_unique_states[i], 0), p_unique_until[i]);
            RETURN NEXT;
        END LOOP;
        IF cardinality(v_pi) > 0 THEN
            v_slot := millrace.txn_slot();
            INSERT INTO millrace.job (slot, id, queue, kind, args, priority, attempt, max_attempts, created_at, ready_at, timeout_ms)
            SELECT v_slot, u.id, p_queue[u.i], p_kind[u.i], p_args[u.i], p_priority[u.i], 0, p_max_attempts[u.i], v_now, v_now,
                   coalesce(p_timeout_ms[u.i], 0)
            FROM unnest(v_pi, v_pid) u(i, id) WHERE p_run_at[u.i] IS NULL OR p_run_at[u.i] <= v_now;
            INSERT INTO millrace.sched (gen, id, queue, kind, args, priority, attempt, max_attempts, created_at, due_at, timeout_ms)
            SELECT v_gen, u.id, p_queue[u.i], p_kind[u.i], p_args[u.i], p_priority[u.i], 0, p_max_attempts[u.i], v_now, p_run_at[u.i],
                   coalesce(p_timeout_ms[u.i], 0)
            FROM unnest(v_pi, v_pid) u(i, id) WHERE p_run_at[u.i] > v_now;
        END IF;
    END IF;
    IF p_notify THEN
        FOR v_q IN SELECT DISTINCT q FROM unnest(p_queue, p_run_at) AS x(q, r) WHERE r IS NULL OR r <= v_now LOOP
            PERFORM pg_notify('millrace', v_q);
        END LOOP;
        -- A job scheduled to fall due within a second wakes the leader's
        -- promoter, which, with nothing due sooner, looks again only a
        -- second later. The payload is when the soonest falls due
        -- (microseconds since the epoch): the promoter then runs its next
        -- round at that time, and no round to learn it.
        SELECT floor(extract(epoch FROM min(r)) * 1000000)::bigint INTO v_due
        FROM unnest(p_run_at) r WHERE r > v_now AND r < clock_timestamp() + interval '1 second';
        IF v_due IS NOT NULL THEN
            PERFORM pg_notify('millrace_sched', v_due::text);
        END IF;
    END IF;
END $function$;
COMMENT ON FUNCTION millrace.insert_many(p_kind text[], p_args jsonb[], p_queue text[], p_priority integer[], p_run_at timestamp with time zone[], p_max_attempts integer[], p_unique_key text[], p_unique_states integer[], p_unique_until timestamp with time zone[], p_timeout_ms integer[], p_notify boolean) IS
    'insert_many inserts jobs (parallel arrays; NULL run_at means now; a run_at must be finite, in years 1 to 9999) and returns, in order, each job''s id, whether it was a duplicate of a unique job (its id is then the existing job''s and nothing was inserted), whether it is scheduled, when it is due, and its state; for a duplicate, those of the existing job, read under the key''s lock: its state as job_state says it, and run_at when it is due (scheduled), became ready (available, running) or last started (completed, discarded, cancelled: its final attempt''s start as history shows it). A job with a unique key is inserted only if no job holding the same key still blocks it (see uniq); keys are locked for the rest of the transaction, and unique inserts need READ COMMITTED (a REPEATABLE READ snapshot could not see a concurrent insert of the same key). The key is looked up in every slot in a subtransaction rolled back at once, so that the caller''s transaction holds only the slot it writes (none for a duplicate). One NOTIFY per queue with a job due now (a NOTIFY serializes commits), and one on millrace_sched when a scheduled job falls due within a second, its payload the soonest such due time in microseconds since the epoch (later ones are found by the leader''s promoter, which looks at least once a second).';

CREATE OR REPLACE FUNCTION millrace.enqueue(p_kind text, p_args jsonb DEFAULT '{}'::jsonb, p_queue text DEFAULT 'default'::text, p_priority integer DEFAULT 0, p_run_at timestamp with time zone DEFAULT NULL::timestamp with time zone, p_max_attempts integer DEFAULT 25, p_notify boolean DEFAULT true, p_unique_key text DEFAULT NULL::text, p_unique_states integer DEFAULT 0, p_unique_until timestamp with time zone DEFAULT NULL::timestamp with time zone, p_timeout_ms integer DEFAULT 0)
 RETURNS bigint
 LANGUAGE sql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
 SET jit TO 'off'
AS $function$
    SELECT i.id FROM millrace.insert_many(ARRAY[p_kind], ARRAY[p_args], ARRAY[p_queue], ARRAY[p_priority], ARRAY[p_run_at],
                                          ARRAY[p_max_attempts], ARRAY[p_unique_key], ARRAY[p_unique_states],
                                          ARRAY[p_unique_until], ARRAY[p_timeout_ms], p_notify) i
$function$;
COMMENT ON FUNCTION millrace.enqueue(p_kind text, p_args jsonb, p_queue text, p_priority integer, p_run_at timestamp with time zone, p_max_attempts integer, p_notify boolean, p_unique_key text, p_unique_states integer, p_unique_until timestamp with time zone, p_timeout_ms integer) IS
    'enqueue inserts one job inside the caller''s transaction and returns its id (for a duplicate of a unique job, the existing job''s id): the job exists if and only if that transaction commits, at any isolation level and any transaction age. p_unique_key, when set, makes the job unique (see insert_many); p_unique_states lists the finished states that keep blocking (bits: 2 completed, 4 discarded, 8 cancelled), p_unique_until ends the key''s period.';

CREATE OR REPLACE FUNCTION millrace.enqueue_unique(p_kind text, p_args jsonb DEFAULT '{}'::jsonb, p_queue text DEFAULT 'default'::text, p_priority integer DEFAULT 0, p_run_at timestamp with time zone DEFAULT NULL::timestamp with time zone, p_max_attempts integer DEFAULT 25, p_notify boolean DEFAULT true, p_unique_key text DEFAULT NULL::text, p_unique_states integer DEFAULT 0, p_unique_until timestamp with time zone DEFAULT NULL::timestamp with time zone, p_timeout_ms integer DEFAULT 0, OUT id bigint, OUT duplicate boolean, OUT state text, OUT run_at timestamp with time zone)
 RETURNS record
 LANGUAGE sql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
 SET jit TO 'off'
AS $function$
    SELECT i.id, i.duplicate, i.state, i.run_at
    FROM millrace.insert_many(ARRAY[p_kind], ARRAY[p_args], ARRAY[p_queue], ARRAY[p_priority], ARRAY[p_run_at],
                              ARRAY[p_max_attempts], ARRAY[p_unique_key], ARRAY[p_unique_states],
                              ARRAY[p_unique_until], ARRAY[p_timeout_ms], p_notify) i
$function$;
COMMENT ON FUNCTION millrace.enqueue_unique(p_kind text, p_args jsonb, p_queue text, p_priority integer, p_run_at timestamp with time zone, p_max_attempts integer, p_notify boolean, p_unique_key text, p_unique_states integer, p_unique_until timestamp with time zone, p_timeout_ms integer, OUT id bigint, OUT duplicate boolean, OUT state text, OUT run_at timestamp with time zone) IS
    'enqueue_unique is enqueue (same parameters, same insert) that also says what happened: the job''s id, whether it was a duplicate of a unique job (nothing was inserted; id, state and run_at are then the existing job''s, as insert_many gives them), its state, and when it is due.';

CREATE OR REPLACE FUNCTION millrace.enqueue_many(p_kind text[], p_args jsonb[], p_queue text[], p_priority integer[], p_run_at timestamp with time zone[], p_max_attempts integer[], p_notify boolean DEFAULT true, p_unique_key text[] DEFAULT NULL::text[], p_unique_states integer[] DEFAULT NULL::integer[], p_unique_until timestamp with time zone[] DEFAULT NULL::timestamp with time zone[], p_timeout_ms integer[] DEFAULT NULL::integer[])
 RETURNS SETOF bigint
 LANGUAGE sql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
 SET jit TO 'off'
AS $function$
    SELECT i.id FROM millrace.insert_many(p_kind, p_args, p_queue, p_priority, p_run_at, p_max_attempts,
                                          p_unique_key, p_unique_states, p_unique_until, p_timeout_ms, p_notify) i
$function$;
COMMENT ON FUNCTION millrace.enqueue_many(p_kind text[], p_args jsonb[], p_queue text[], p_priority integer[], p_run_at timestamp with time zone[], p_max_attempts integer[], p_notify boolean, p_unique_key text[], p_unique_states integer[], p_unique_until timestamp with time zone[], p_timeout_ms integer[]) IS
    'enqueue_many inserts many jobs in one statement and returns their ids in order (see insert_many).';
