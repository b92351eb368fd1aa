-- millrace storage protocol, version 6: lookups that cost what they return.
--
-- Version 5 answered "has job N finished, and how?" by probing all 68
-- history buckets: a plan over 68 partitions and their indexes (planning
-- ~2 ms, 272 relation locks) per call. A unique insert, a cancel, a job's
-- state, and every unique key a reclaim looked at paid it, and a reclaim
-- paid it once per key while it held its slot's ACCESS EXCLUSIVE locks:
-- measured at 800 jobs/s with the bench's mix, a reclaim held them 1.3 s on
-- average, and every producer and claimer stood still behind it.
--
-- A job's history rows are written after it was created, so only the
-- buckets whose time range reaches from its creation to now can hold them.
-- History rows are now bucketed by the server's clock when they are
-- written (clock_timestamp(), never the worker's clock), and a lookup that
-- knows when its job was created probes only those buckets (one to three
-- per ring), planned for exactly those partitions. A reclaim decides which
-- unique keys still block in one statement, not one lookup per key.
--
-- Also: history counts come from tally rounds instead of a count of every
-- history row (see "history counts" below), and cancel takes its queue's
-- claim lock before it looks.

-- history_buckets lists the history buckets that rows finished between
-- p_from and p_to can be in: the two-hour buckets of completed rows (0-35)
-- and the daily buckets of every other state (36-67), each ring at most
-- once around. A range that is not finite, or longer than the daily ring,
-- lists every bucket.
CREATE FUNCTION millrace.history_buckets(p_from timestamptz, p_to timestamptz) RETURNS smallint[]
LANGUAGE sql IMMUTABLE SET search_path = pg_catalog, pg_temp AS $$
    SELECT CASE
        WHEN p_from IS NULL OR p_to IS NULL OR NOT isfinite(p_from) OR NOT isfinite(p_to)
             OR greatest(p_from, p_to) - least(p_from, p_to) >= interval '32 days'
        THEN ARRAY(SELECT g::smallint FROM generate_series(0, 67) g)
        ELSE ARRAY(
            SELECT DISTINCT b FROM (
                SELECT (((g % 36) + 36) % 36)::smallint AS b
                FROM generate_series(floor(extract(epoch FROM least(p_from, p_to)) / 7200)::bigint,
                                     least(floor(extract(epoch FROM greatest(p_from, p_to)) / 7200)::bigint,
                                           floor(extract(epoch FROM least(p_from, p_to)) / 7200)::bigint + 35)) g
                UNION ALL
                SELECT (36 + ((g % 32) + 32) % 32)::smallint
                FROM generate_series(floor(extract(epoch FROM least(p_from, p_to)) / 86400)::bigint,
                                     floor(extract(epoch FROM greatest(p_from, p_to)) / 86400)::bigint) g) x
            ORDER BY b) END
$$;

-- history_slack widens a bucket range: a server clock that stepped back by
-- up to this much between a job's creation and its end.
CREATE FUNCTION millrace.history_slack() RETURNS interval LANGUAGE sql IMMUTABLE
SET search_path = pg_catalog, pg_temp AS $$ SELECT interval '1 hour' $$;

-- history_v6 is when this migration ran: rows written before it were
-- bucketed by the worker's clock (version 5), whose skew nothing bounds, so
-- a job created before then is looked for in every bucket. The history is
-- locked first, so that no version 5 flush writes a row after this time
-- (one waiting for the lock finishes after the migration, with version 5's
-- code, for a job created before it). The time is written as an epoch,
-- whatever the migrating session's DateStyle.
LOCK TABLE millrace.finished IN ACCESS EXCLUSIVE MODE;
DO $$
BEGIN
    EXECUTE format('CREATE FUNCTION millrace.history_v6() RETURNS timestamptz LANGUAGE sql IMMUTABLE'
                   ' SET search_path = pg_catalog, pg_temp AS $f$ SELECT to_timestamp(%s) $f$',
                   extract(epoch FROM clock_timestamp()));
END $$;

-- history_since lists the buckets that can hold the history of a job
-- created at p_since: from then (or now, if p_since is later) until now,
-- widened by history_slack; every bucket for a job created before version
-- 6 or at an unknown time.
CREATE FUNCTION millrace.history_since(p_since timestamptz) RETURNS smallint[] LANGUAGE sql VOLATILE
SET search_path = pg_catalog, pg_temp AS $$
    SELECT CASE WHEN p_since IS NULL OR p_since < millrace.history_v6()
                THEN millrace.history_buckets(NULL, NULL)
                ELSE millrace.history_buckets(least(p_since, clock_timestamp()) - millrace.history_slack(),
                                              clock_timestamp() + millrace.history_slack()) END
$$;

-- final_state(p_id, p_since) is final_state(p_id) for a job created at
-- p_since: only the buckets history_since lists are planned and read
-- (every one when p_since is NULL).
CREATE FUNCTION millrace.final_state(p_id bigint, p_since timestamptz) RETURNS smallint LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, pg_temp SET jit = off AS $$
DECLARE
    v_s smallint;
BEGIN
    EXECUTE format('SELECT h.state FROM millrace.finished h WHERE h.bucket = ANY (%L::smallint[]) AND h.id = $1'
                   ' AND h.state IN (1, 3, 4) LIMIT 1', millrace.history_since(p_since))
    INTO v_s USING p_id;
    RETURN v_s;
END $$;

-- live_since is when live job p_id was created, from its newest job or
-- schedule row; NULL when it has none (it finished, or never existed).
CREATE FUNCTION millrace.live_since(p_id bigint) RETURNS timestamptz LANGUAGE sql VOLATILE
SET search_path = pg_catalog, pg_temp SET jit = off AS $$
    SELECT coalesce((SELECT j.created_at FROM millrace.job j WHERE j.id = p_id LIMIT 1),
                    (SELECT s.created_at FROM millrace.sched s WHERE s.id = p_id LIMIT 1))
$$;

-- pending says job p_id exists and has not finished. An unfinished job
-- always has a job row or a schedule row (reclaims carry them forward).
CREATE OR REPLACE FUNCTION millrace.pending(p_id bigint) RETURNS boolean LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, pg_temp SET jit = off AS $$
DECLARE
    v_since timestamptz := millrace.live_since(p_id);
BEGIN
    RETURN v_since IS NOT NULL AND millrace.final_state(p_id, v_since) IS NULL;
END $$;

-- uniq_blocks(job, states, until, since) says a key row (its job created at
-- p_since) still blocks a new job with its key: its period has not ended,
-- and its job is finished in a state the key names, or unfinished (it has
-- a live row). Version 5's three-argument form, which probed every
-- bucket, has no caller left.
DROP FUNCTION millrace.uniq_blocks(bigint, int, timestamptz);
CREATE FUNCTION millrace.uniq_blocks(p_job bigint, p_states int, p_until timestamptz, p_since timestamptz)
RETURNS boolean LANGUAGE plpgsql VOLATILE SET search_path = pg_catalog, pg_temp SET jit = off AS $$
BEGIN
    IF p_until IS NOT NULL AND p_until <= now() THEN
        RETURN false;
    END IF;
    RETURN CASE millrace.final_state(p_job, p_since)
               WHEN 1 THEN p_states & 2 <> 0
               WHEN 3 THEN p_states & 4 <> 0
               WHEN 4 THEN p_states & 8 <> 0
               ELSE EXISTS (SELECT 1 FROM millrace.job j WHERE j.id = p_job)
                    OR EXISTS (SELECT 1 FROM millrace.sched s WHERE s.id = p_job) END;
END $$;

-- uniq_kept returns the key rows of slot p_slot that still block (as
-- uniq_blocks says), in one statement: their jobs' history is probed only
-- in the buckets from the oldest key's creation until now. The test is
-- written out rather than calling a shared function: it runs once per key
-- under the reclaim's ACCESS EXCLUSIVE locks, and a call per row measured
-- 1.6 to 8 times slower (2,000 keys: 18 ms inline, 30 ms through an SQL
-- function, 150 ms through one with a SET clause).
CREATE FUNCTION millrace.uniq_kept(p_slot smallint) RETURNS SETOF millrace.uniq
LANGUAGE plpgsql VOLATILE SET search_path = pg_catalog, pg_temp SET jit = off AS $$
DECLARE
    v_from timestamptz;
BEGIN
    SELECT min(u.at) INTO v_from FROM millrace.uniq u WHERE u.slot = p_slot AND (u.until IS NULL OR u.until > now());
    IF v_from IS NULL THEN
        RETURN;
    END IF;
    RETURN QUERY EXECUTE format($q$
        SELECT u.* FROM millrace.uniq u
        LEFT JOIN LATERAL (SELECT h.state FROM millrace.finished h
                           WHERE h.bucket = ANY (%L::smallint[]) AND h.id = u.job_id AND h.state IN (1, 3, 4) LIMIT 1) f ON true
        WHERE u.slot = $1 AND (u.until IS NULL OR u.until > now())
          AND CASE f.state
                  WHEN 1 THEN u.states & 2 <> 0
                  WHEN 3 THEN u.states & 4 <> 0
                  WHEN 4 THEN u.states & 8 <> 0
                  ELSE EXISTS (SELECT 1 FROM millrace.job j WHERE j.id = u.job_id)
                       OR EXISTS (SELECT 1 FROM millrace.sched s WHERE s.id = u.job_id) END$q$,
        millrace.history_since(v_from))
    USING p_slot;
END $$;

REVOKE EXECUTE ON FUNCTION millrace.history_buckets(timestamptz, timestamptz), millrace.history_slack(),
    millrace.history_v6(), millrace.history_since(timestamptz),
    millrace.final_state(bigint, timestamptz), millrace.live_since(bigint),
    millrace.uniq_blocks(bigint, int, timestamptz, timestamptz), millrace.uniq_kept(smallint) FROM PUBLIC;

-- complete (version 5's, in the caller's transaction) buckets its history
-- row by the time it is called, not by its transaction's start, which may
-- be older than the job.
CREATE OR REPLACE FUNCTION millrace.complete(
    p_job bigint, p_tick bigint, p_token bigint, p_attempt int, p_queue text, p_kind text, p_args jsonb,
    p_priority smallint, p_max_attempts int, p_created_at timestamptz, p_started timestamptz, p_owner int
) RETURNS void LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp SET jit = off AS $$
BEGIN
    PERFORM pg_advisory_xact_lock_shared(millrace.fence_space(), (p_tick % 2147483647)::int);
    IF (SELECT h.token FROM millrace.holder(p_tick) h) IS DISTINCT FROM p_token
       OR EXISTS (SELECT 1 FROM millrace.done d WHERE d.tick_id = p_tick) THEN
        RAISE EXCEPTION 'millrace: job % was released to another process; it cannot be completed here', p_job
            USING ERRCODE = '40001';
    END IF;
    IF EXISTS (SELECT 1 FROM millrace.ack a WHERE a.tick_id = p_tick AND a.job_id = p_job) THEN
        RAISE EXCEPTION 'millrace: job % already has an outcome', p_job USING ERRCODE = '55000';
    END IF;
    INSERT INTO millrace.ack (slot, job_id, tick_id, token, state, attempt)
    VALUES (millrace.current_segment(), p_job, p_tick, p_token, 1, p_attempt);
    INSERT INTO millrace.finished (bucket, id, attempt, state, queue, kind, args, priority, max_attempts, created_at,
                                  started_at, finished_at, owner)
    VALUES (millrace.history_bucket(1::smallint, clock_timestamp()), p_job, p_attempt, 1, p_queue, p_kind, p_args, p_priority,
            p_max_attempts, p_created_at, p_started, clock_timestamp(), p_owner);
END $$;

-- ------------------------------------------------------------ callers
-- The functions below are version 5's, with their lookups bounded as above.

CREATE OR REPLACE FUNCTION millrace.insert_many(
    p_kind text[], p_args jsonb[], p_queue text[], p_priority int[], p_run_at timestamptz[], p_max_attempts int[],
    p_unique_key text[] DEFAULT NULL, p_unique_states int[] DEFAULT NULL, p_unique_until timestamptz[] DEFAULT NULL,
    p_timeout_ms int[] DEFAULT NULL, p_notify boolean DEFAULT true
) RETURNS TABLE (id bigint, duplicate boolean, scheduled boolean, run_at timestamptz)
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp SET jit = off AS $$
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
        RAISE EXCEPTION 'millrace: job % of enqueue_many: args must be at most 1048576 bytes encoded', v_bad.i USING ERRCODE = '22023';
    END IF;
    IF p_timeout_ms IS NOT NULL AND EXISTS (SELECT 1 FROM unnest(p_timeout_ms) t WHERE t < 0) THEN
        RAISE EXCEPTION 'millrace: timeout must not be negative' USING ERRCODE = '22023';
    END IF;
    v_slot := millrace.txn_slot();
    v_gen := millrace.current_gen();

    IF p_unique_key IS NULL OR NOT EXISTS (SELECT 1 FROM unnest(p_unique_key) k WHERE k IS NOT NULL) THEN
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
        SELECT u.id, false, coalesce(u.r > v_now, false), greatest(coalesce(u.r, v_now), v_now) FROM u ORDER BY u.i;
    ELSE
        IF current_setting('transaction_isolation') <> 'read committed' THEN
            RAISE EXCEPTION 'millrace: unique jobs must be inserted at READ COMMITTED (this transaction is %)',
                current_setting('transaction_isolation') USING ERRCODE = '0A000';
        END IF;
        FOR i IN 1 .. v_n LOOP
            duplicate := false;
            scheduled := p_run_at[i] IS NOT NULL AND p_run_at[i] > v_now;
            run_at := greatest(coalesce(p_run_at[i], v_now), v_now);
            IF p_unique_key[i] IS NOT NULL THEN
                PERFORM pg_advisory_xact_lock(millrace.uniq_space(), hashtext(p_unique_key[i]));
                SELECT * INTO v_u FROM millrace.uniq u WHERE u.key = p_unique_key[i] ORDER BY u.job_id DESC LIMIT 1;
                IF FOUND AND millrace.uniq_blocks(v_u.job_id, v_u.states, v_u.until, v_u.at) THEN
                    id := v_u.job_id;
                    duplicate := true;
                    SELECT s.due_at INTO run_at FROM millrace.sched s WHERE s.id = v_u.job_id ORDER BY s.due_at DESC LIMIT 1;
                    scheduled := FOUND AND run_at > v_now;
                    IF NOT scheduled THEN
                        run_at := NULL;
                    END IF;
                    RETURN NEXT;
                    CONTINUE;
                END IF;
            END IF;
            v_id := nextval('millrace.job_id_seq');
            IF scheduled THEN
                INSERT INTO millrace.sched (gen, id, queue, kind, args, priority, attempt, max_attempts, created_at, due_at, timeout_ms)
                VALUES (v_gen, v_id, p_queue[i], p_kind[i], p_args[i], p_priority[i], 0, p_max_attempts[i], v_now, p_run_at[i],
                        coalesce(p_timeout_ms[i], 0));
            ELSE
                INSERT INTO millrace.job (slot, id, queue, kind, args, priority, attempt, max_attempts, created_at, ready_at, timeout_ms)
                VALUES (v_slot, v_id, p_queue[i], p_kind[i], p_args[i], p_priority[i], 0, p_max_attempts[i], v_now, v_now,
                        coalesce(p_timeout_ms[i], 0));
            END IF;
            IF p_unique_key[i] IS NOT NULL THEN
                INSERT INTO millrace.uniq (slot, key, job_id, states, until)
                VALUES (millrace.current_segment(), p_unique_key[i], v_id, coalesce(p_unique_states[i], 0), p_unique_until[i]);
            END IF;
            id := v_id;
            RETURN NEXT;
        END LOOP;
    END IF;
    IF p_notify THEN
        FOR v_q IN SELECT DISTINCT q FROM unnest(p_queue, p_run_at) AS x(q, r) WHERE r IS NULL OR r <= v_now LOOP
            PERFORM pg_notify('millrace', v_q);
        END LOOP;
    END IF;
END $$;

-- enqueue inserts one job inside the caller's transaction and returns its
-- id (for a duplicate of a unique job, the existing job's id): the job
-- exists if and only if that transaction commits, at any isolation level
-- and any transaction age. p_unique_key, when set, makes the job unique
-- (see insert_many); p_unique_states lists the finished states that keep

CREATE OR REPLACE FUNCTION millrace.flush(
    p_owner int, p_seq bigint,
    p_job bigint[], p_tick bigint[], p_token bigint[], p_state smallint[], p_attempt int[], p_error text[],
    p_retry_at timestamptz[], p_queue text[], p_kind text[], p_args jsonb[], p_priority smallint[],
    p_max_attempts int[], p_created_at timestamptz[], p_timeout_ms int[], p_started timestamptz[], p_finished timestamptz[],
    p_done_tick bigint[], p_done_token bigint[], p_done_queue text[],
    p_replay boolean DEFAULT true
) RETURNS SETOF bigint LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp SET jit = off AS $$
DECLARE
    v_fenced bigint[];
    v_new    boolean[];
    v_slot   smallint;
    v_n      bigint;
BEGIN
    PERFORM pg_advisory_xact_lock(millrace.flush_space(), p_owner);
    IF EXISTS (SELECT 1 FROM millrace.flush f WHERE f.owner = p_owner AND f.seq = p_seq) THEN
        RETURN;  -- already applied: this is a replay
    END IF;
    v_slot := millrace.current_segment();
    INSERT INTO millrace.flush (slot, owner, seq) VALUES (v_slot, p_owner, p_seq);
    -- Fencing: hold each batch's fence lock shared while checking that no
    -- newer lease exists; a release or adoption takes it exclusively.
    PERFORM pg_advisory_xact_lock_shared(millrace.fence_space(), (t % 2147483647)::int)
    FROM (SELECT DISTINCT t FROM unnest(p_tick || p_done_tick) t ORDER BY t) x;
    -- A batch is fenced when the token given is not its newest lease, or
    -- when it is closed or gone.
    SELECT coalesce(array_agg(x.t), '{}') INTO v_fenced FROM (
        SELECT DISTINCT u.t, u.k FROM unnest(p_tick || p_done_tick, p_token || p_done_token) AS u(t, k)) x
    WHERE (SELECT h.token FROM millrace.holder(x.t) h) IS DISTINCT FROM x.k
       OR EXISTS (SELECT 1 FROM millrace.done d WHERE d.tick_id = x.t);
    -- v_new[i]: ack i is written (not fenced, not already written).
    SELECT coalesce(array_agg(u.t <> ALL (v_fenced)
               AND (NOT p_replay OR NOT EXISTS (SELECT 1 FROM millrace.ack a WHERE a.tick_id = u.t AND a.job_id = u.j))
               ORDER BY u.i), '{}')
    INTO v_new
    FROM unnest(p_job, p_tick) WITH ORDINALITY AS u(j, t, i);

    INSERT INTO millrace.ack (slot, job_id, tick_id, token, state, attempt, error)
    SELECT v_slot, u.j, u.t, u.k, u.s, u.a, u.e
    FROM unnest(p_job, p_tick, p_token, p_state, p_attempt, p_error) WITH ORDINALITY AS u(j, t, k, s, a, e, i)
    WHERE v_new[u.i];

    INSERT INTO millrace.sched (gen, id, queue, kind, args, priority, attempt, max_attempts, created_at, due_at, last_error, timeout_ms)
    SELECT millrace.current_gen(), u.j, u.q, u.kd, u.ar, u.p, CASE WHEN u.s = 5 THEN u.a - 1 ELSE u.a END, u.m,
           least(u.c, now()),  -- a job is never created later than now: lookups bound its history by it
           u.r, u.e,
           coalesce(u.tm, 0)
    FROM unnest(p_job, p_state, p_attempt, p_error, p_retry_at, p_queue, p_kind, p_args, p_priority,
                p_max_attempts, p_created_at, p_timeout_ms) WITH ORDINALITY AS u(j, s, a, e, r, q, kd, ar, p, m, c, tm, i)
    WHERE u.s IN (2, 5) AND v_new[u.i];

    INSERT INTO millrace.finished (bucket, id, attempt, state, queue, kind, args, priority, max_attempts, created_at,
                                  started_at, finished_at, error, owner)
    SELECT millrace.history_bucket(u.s, clock_timestamp()), u.j, u.a, u.s, u.q, u.kd, u.ar, u.p, u.m, u.c,
           u.st, coalesce(u.f, now()), u.e, p_owner
    FROM unnest(p_job, p_state, p_attempt, p_error, p_queue, p_kind, p_args, p_priority,
                p_max_attempts, p_created_at, p_started, p_finished) WITH ORDINALITY AS u(j, s, a, e, q, kd, ar, p, m, c, st, f, i)
    WHERE v_new[u.i]
      -- a job cancelled while waiting is in history already
      AND NOT (u.s = 4 AND u.st IS NULL AND millrace.final_state(u.j, u.c) = 4);

    INSERT INTO millrace.done (slot, queue, tick_id)
    SELECT DISTINCT v_slot, u.q, u.t FROM unnest(p_done_tick, p_done_queue) AS u(t, q)
    WHERE u.t <> ALL (v_fenced);

    RETURN QUERY SELECT unnest(v_fenced);
END $$;


CREATE OR REPLACE FUNCTION millrace.job_state(p_id bigint) RETURNS text LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp SET jit = off AS $$
DECLARE
    -- A live job's job or schedule row says when it was created; a job with
    -- neither finished (or never existed), and every bucket is probed.
    v_s smallint := millrace.final_state(p_id, millrace.live_since(p_id));
    v_j millrace.job;
    v_f record;
BEGIN
    IF v_s IS NOT NULL THEN
        RETURN (ARRAY['completed', 'failed', 'discarded', 'cancelled', 'snoozed'])[v_s];
    END IF;
    IF EXISTS (SELECT 1 FROM millrace.sched s
               LEFT JOIN LATERAL (SELECT p.upto, p.snap FROM millrace.promote p ORDER BY p.round DESC LIMIT 1) lp ON true
               WHERE s.id = p_id AND NOT (coalesce(pg_visible_in_snapshot(s.txid, lp.snap), false) AND s.due_at <= lp.upto)) THEN
        RETURN 'scheduled';
    END IF;
    SELECT * INTO v_j FROM millrace.job j WHERE j.id = p_id ORDER BY j.ready_at DESC LIMIT 1;
    IF NOT FOUND THEN
        RETURN NULL;
    END IF;
    SELECT t.prev_snap, t.snap, t.more, t.upto_txid, t.upto_id INTO v_f FROM millrace.tick t
    WHERE t.queue = v_j.queue AND t.priority = v_j.priority ORDER BY t.tick_id DESC LIMIT 1;
    IF NOT FOUND OR NOT pg_visible_in_snapshot(v_j.txid, v_f.snap)
       OR (v_f.more AND NOT pg_visible_in_snapshot(v_j.txid, v_f.prev_snap) AND (v_j.txid, v_j.id) > (v_f.upto_txid, v_f.upto_id)) THEN
        RETURN 'available';
    END IF;
    RETURN 'running';
END $$;


-- cancel (version 5's) now takes its queue's claim lock before it looks:
-- a claim of the job that has not committed yet would otherwise hand it
-- to a worker unmarked after cancel had finished it as cancelled.
CREATE OR REPLACE FUNCTION millrace.cancel(p_id bigint) RETURNS text LANGUAGE plpgsql SECURITY DEFINER
SET search_path = pg_catalog, pg_temp SET jit = off AS $$
DECLARE
    v_state text;
    v_j record;
    v_q text := coalesce((SELECT j.queue FROM millrace.job j WHERE j.id = p_id LIMIT 1),
                         (SELECT s.queue FROM millrace.sched s WHERE s.id = p_id LIMIT 1));
BEGIN
    IF v_q IS NOT NULL THEN
        PERFORM pg_advisory_xact_lock(millrace.claim_space(), hashtext(v_q));
    END IF;
    v_state := millrace.job_state(p_id);
    IF v_state IS NULL THEN
        RETURN 'unknown';
    END IF;
    IF v_state IN ('completed', 'discarded', 'cancelled') THEN
        RETURN 'finished';
    END IF;
    IF NOT EXISTS (SELECT 1 FROM millrace.cancel c WHERE c.job_id = p_id) THEN
        INSERT INTO millrace.cancel (slot, job_id) VALUES (millrace.current_segment(), p_id);
    END IF;
    IF v_state = 'running' THEN
        -- Only a running job needs its process told now (it also polls).
        PERFORM pg_notify('millrace_cancel', p_id::text);
        RETURN 'cancelling';
    END IF;
    IF v_state = 'scheduled' THEN
        SELECT s.attempt, s.queue, s.kind, s.args, s.priority, s.max_attempts, s.created_at INTO v_j
        FROM millrace.sched s WHERE s.id = p_id ORDER BY s.due_at DESC LIMIT 1;
    ELSE
        SELECT j.attempt, j.queue, j.kind, j.args, j.priority, j.max_attempts, j.created_at INTO v_j
        FROM millrace.job j WHERE j.id = p_id ORDER BY j.ready_at DESC LIMIT 1;
    END IF;
    INSERT INTO millrace.finished (bucket, id, attempt, state, queue, kind, args, priority, max_attempts, created_at,
                                  started_at, finished_at, error, owner)
    VALUES (millrace.history_bucket(4::smallint, clock_timestamp()), p_id, v_j.attempt, 4, v_j.queue, v_j.kind, v_j.args,
            v_j.priority, v_j.max_attempts, v_j.created_at, NULL, clock_timestamp(), 'cancelled before it ran', 0);
    RETURN 'cancelled';
END $$;


CREATE OR REPLACE FUNCTION millrace.reclaim_slot(p_slot smallint, p_into smallint) RETURNS bigint
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp SET jit = off AS $$
DECLARE
    v_n bigint;
    v_total bigint := 0;
    v_open bigint[];
BEGIN
    -- Jobs not yet claimed.
    INSERT INTO millrace.job (slot, id, queue, kind, args, priority, attempt, max_attempts, created_at, txid, ready_at, timeout_ms)
    SELECT p_into, j.id, j.queue, j.kind, j.args, j.priority, j.attempt, j.max_attempts, j.created_at, j.txid, j.ready_at, j.timeout_ms
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

    -- Open batches' ticks, and each lane's newest tick as its frontier.
    INSERT INTO millrace.tick (slot, queue, priority, tick_id, prev_snap, snap, after_txid, after_id, upto_txid, upto_id,
                               more, owner, req, njobs, carried, at)
    SELECT p_into, t.queue, t.priority, t.tick_id, t.prev_snap, t.snap, t.after_txid, t.after_id, t.upto_txid, t.upto_id,
           t.more, t.owner, t.req, t.njobs, t.tick_id <> ALL (v_open), t.at
    FROM millrace.tick t
    WHERE t.slot = p_slot
      AND ((NOT t.carried AND t.tick_id = ANY (v_open))
           OR t.tick_id IN (
               -- each lane's newest tick in this slot, if it is the lane's newest anywhere
               SELECT l.tick_id FROM (SELECT DISTINCT ON (x.queue, x.priority) x.queue, x.priority, x.tick_id FROM millrace.tick x
                                      WHERE x.slot = p_slot ORDER BY x.queue, x.priority, x.tick_id DESC) l
               WHERE l.tick_id = (SELECT n.tick_id FROM millrace.tick n WHERE n.queue = l.queue AND n.priority = l.priority
                                  ORDER BY n.tick_id DESC LIMIT 1)));
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

    INSERT INTO millrace.promote (slot, round, upto, snap, total)
    SELECT p_into, p.round, p.upto, p.snap, p.total FROM millrace.promote p
    WHERE p.slot = p_slot AND NOT EXISTS (SELECT 1 FROM millrace.promote n WHERE n.round > p.round)
    ORDER BY p.round DESC LIMIT 1;

    -- The newest tally round (version 6), where the next round starts.
    INSERT INTO millrace.tally_round (slot, round, snap, at)
    SELECT p_into, r.round, r.snap, r.at FROM millrace.tally_round r
    WHERE r.slot = p_slot AND NOT EXISTS (SELECT 1 FROM millrace.tally_round n WHERE n.round > r.round)
    ORDER BY r.round DESC LIMIT 1;

    -- A cancellation stays while a row of its job may still be claimed or
    -- promoted: a job row in another slot, or a schedule row.
    INSERT INTO millrace.cancel (slot, job_id, at)
    SELECT p_into, c.job_id, c.at FROM millrace.cancel c
    WHERE c.slot = p_slot
      AND (EXISTS (SELECT 1 FROM millrace.job j WHERE j.id = c.job_id AND j.slot <> p_slot)
           OR EXISTS (SELECT 1 FROM millrace.sched s WHERE s.id = c.job_id));
    GET DIAGNOSTICS v_n = ROW_COUNT;
    v_total := v_total + v_n;

    INSERT INTO millrace.uniq (slot, key, job_id, states, until, at)
    SELECT p_into, u.key, u.job_id, u.states, u.until, u.at FROM millrace.uniq_kept(p_slot) u;
    GET DIAGNOSTICS v_n = ROW_COUNT;
    v_total := v_total + v_n;

    EXECUTE 'TRUNCATE ' || array_to_string(millrace.slot_tables(p_slot), ', ');
    RETURN v_total;
END $$;

-- ------------------------------------------------------------ history counts
-- Version 5's queue_counts counted every history row for the completed and
-- discarded columns: at 800 jobs/s, 24 hours of history is 69 million
-- rows, read in full by every dashboard poll. Counts are now tallied like
-- claims take batches: a tally round takes a snapshot and counts the
-- history rows visible in it and not in the previous round's (by the
-- inserting transaction's id: the range from the previous snapshot's xmax,
-- plus its in-progress ids), and writes one row per (bucket, queue, state).
-- A count is the sum of the tally rows plus the rows written since the
-- newest round: its cost is the number of rounds kept and the rows of the
-- last few seconds, not the size of history. Tally rows live in buckets
-- like the history they count and are truncated with it; rounds live in
-- the ring and the newest is carried forward. Nothing is updated or
-- deleted.
ALTER TABLE millrace.finished ADD COLUMN txid xid8;  -- NULL for rows written before version 6: counted in round 0
ALTER TABLE millrace.finished ALTER COLUMN txid SET DEFAULT pg_current_xact_id();
CREATE INDEX finished_txid ON millrace.finished (txid);

CREATE TABLE millrace.tally (
    bucket smallint NOT NULL,
    round  bigint NOT NULL,
    queue  text NOT NULL,
    state  smallint NOT NULL,
    n      bigint NOT NULL
) PARTITION BY LIST (bucket);

CREATE TABLE millrace.tally_round (
    slot  smallint NOT NULL,
    round bigint NOT NULL,
    snap  pg_snapshot NOT NULL,
    at    timestamptz NOT NULL DEFAULT now()
) PARTITION BY LIST (slot);
CREATE INDEX tally_round_round ON millrace.tally_round (round);

DO $$
BEGIN
    FOR b IN 0 .. 67 LOOP
        EXECUTE format('CREATE TABLE millrace.%I PARTITION OF millrace.tally FOR VALUES IN (%s)'
                       ' WITH (autovacuum_enabled = false, toast.autovacuum_enabled = false)', 'tally_' || b, b);
    END LOOP;
    FOR s IN 0 .. millrace.slots() - 1 LOOP
        EXECUTE format('CREATE TABLE millrace.%I PARTITION OF millrace.tally_round FOR VALUES IN (%s)'
                       ' WITH (autovacuum_enabled = false, toast.autovacuum_enabled = false)', 'tally_round_' || s, s);
    END LOOP;
END $$;

CREATE OR REPLACE FUNCTION millrace.slot_tables(p_slot int) RETURNS text[] LANGUAGE sql IMMUTABLE
AS $$ SELECT ARRAY(SELECT format('millrace.%I', t || '_' || p_slot)
                   FROM unnest(ARRAY['job', 'tick', 'lease', 'ack', 'done', 'flush', 'promote', 'cancel', 'uniq',
                                     'tally_round']) t) $$;

-- Round 0 counts the history written before version 6 (its rows have no
-- txid; the ALTER above holds every bucket, so none is being written).
INSERT INTO millrace.tally_round (slot, round, snap) VALUES (millrace.current_segment(), 0, pg_current_snapshot());
INSERT INTO millrace.tally (bucket, round, queue, state, n)
SELECT h.bucket, 0, h.queue, h.state, count(*) FROM millrace.finished h GROUP BY h.bucket, h.queue, h.state;

-- history_new counts, by bucket, queue and state, the history rows whose
-- transaction is visible in p_snap and not in p_prev.
CREATE FUNCTION millrace.history_new(p_prev pg_snapshot, p_snap pg_snapshot)
RETURNS TABLE (bucket smallint, queue text, state smallint, n bigint)
LANGUAGE sql VOLATILE SET search_path = pg_catalog, pg_temp SET jit = off AS $$
    SELECT h.bucket, h.queue, h.state, count(*) FROM millrace.finished h
    WHERE ((h.txid >= pg_snapshot_xmax(p_prev) AND h.txid < pg_snapshot_xmax(p_snap))
           OR h.txid = ANY (ARRAY(SELECT pg_snapshot_xip(p_prev))))
      AND pg_visible_in_snapshot(h.txid, p_snap)
    GROUP BY h.bucket, h.queue, h.state
$$;

-- tally runs a tally round if the newest is at least p_every old (the
-- leader calls it at every maintenance round); it returns the rows it
-- counted, or NULL when it was not yet time.
CREATE FUNCTION millrace.tally(p_every interval) RETURNS bigint LANGUAGE plpgsql SECURITY DEFINER
SET search_path = pg_catalog, pg_temp SET jit = off AS $$
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
END $$;

-- queue_counts is the number of jobs per queue and state: live ones
-- (derived from live_jobs), discarded and completed ones still in history
-- (the tally, plus the rows written since its newest round), and whether
-- the queue is paused. Nothing is counted in a row.
CREATE OR REPLACE FUNCTION millrace.queue_counts()
RETURNS TABLE (queue text, available bigint, running bigint, scheduled bigint, discarded bigint, paused boolean,
               completed bigint)
LANGUAGE sql VOLATILE SECURITY DEFINER SET search_path = pg_catalog, pg_temp SET jit = off AS $$
    WITH live AS MATERIALIZED (SELECT x.queue, x.state FROM millrace.live_jobs() x),
    lastr AS (SELECT r.snap FROM millrace.tally_round r ORDER BY r.round DESC LIMIT 1),
    counted AS (
        SELECT t.queue, t.state, t.n FROM millrace.tally t WHERE t.state IN (1, 3)
        UNION ALL
        SELECT x.queue, x.state, x.n FROM lastr CROSS JOIN LATERAL millrace.history_new(lastr.snap, pg_current_snapshot()) x
        WHERE x.state IN (1, 3)),
    hist AS MATERIALIZED (
        SELECT c.queue, coalesce(sum(c.n) FILTER (WHERE c.state = 3), 0)::bigint AS discarded,
               coalesce(sum(c.n) FILTER (WHERE c.state = 1), 0)::bigint AS completed
        FROM counted c GROUP BY c.queue),
    qs AS (SELECT DISTINCT l.queue FROM live l UNION SELECT h.queue FROM hist h
           UNION SELECT DISTINCT s.queue FROM millrace.queue_state s)
    SELECT q.queue,
           (SELECT count(*) FROM live l WHERE l.queue = q.queue AND l.state = 'available'),
           (SELECT count(*) FROM live l WHERE l.queue = q.queue AND l.state = 'running'),
           (SELECT count(*) FROM live l WHERE l.queue = q.queue AND l.state = 'scheduled'),
           coalesce((SELECT h.discarded FROM hist h WHERE h.queue = q.queue), 0),
           millrace.queue_paused(q.queue),
           coalesce((SELECT h.completed FROM hist h WHERE h.queue = q.queue), 0)
    FROM qs q ORDER BY q.queue
$$;

-- expire_history truncates the history buckets whose newest row is older
-- than the retention of its kind (completed: p_completed; others:
-- p_other), each with its tally, both under NOWAIT locks (a bucket being
-- read is skipped until the next round), and forgets periodic slots older
-- than a week. It returns the buckets truncated.
CREATE OR REPLACE FUNCTION millrace.expire_history(p_completed interval, p_other interval) RETURNS int
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp SET jit = off SET lock_timeout = '50ms' AS $$
DECLARE
    v_max timestamptz;
    v_n int := 0;
BEGIN
    FOR b IN 0 .. 67 LOOP
        EXECUTE format('SELECT max(finished_at) FROM millrace.%I', 'finished_' || b) INTO v_max;
        CONTINUE WHEN v_max IS NULL OR v_max >= now() - CASE WHEN b < 36 THEN p_completed ELSE p_other END;
        BEGIN
            EXECUTE format('LOCK TABLE millrace.%I, millrace.%I IN ACCESS EXCLUSIVE MODE NOWAIT', 'finished_' || b, 'tally_' || b);
            EXECUTE format('TRUNCATE millrace.%I, millrace.%I', 'finished_' || b, 'tally_' || b);
            v_n := v_n + 1;
        EXCEPTION WHEN lock_not_available THEN
            NULL;
        END;
    END LOOP;
    DELETE FROM millrace.periodic p WHERE p.at < now() - interval '7 days';
    RETURN v_n;
END $$;

REVOKE EXECUTE ON FUNCTION millrace.history_new(pg_snapshot, pg_snapshot), millrace.tally(interval) FROM PUBLIC;
DO $$
BEGIN
    IF EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'millrace_worker') THEN
        GRANT EXECUTE ON FUNCTION millrace.tally(interval) TO millrace_worker;
    END IF;
    IF EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'millrace_admin') THEN
        GRANT SELECT ON ALL TABLES IN SCHEMA millrace TO millrace_admin;
    END IF;
END $$;
