-- millrace schema version 4, populated and dumped by TestUpgradeFromEachVersion -update-dumps.
-- Frozen: version 4's migrations never change, so neither does this file.
-- expect 1 available
-- expect 2 available
-- expect 3 available
-- expect 4 scheduled
--
-- PostgreSQL database dump
--


-- Dumped from database version 15.18 (Debian 15.18-0+deb12u1)
-- Dumped by pg_dump version 15.18 (Debian 15.18-0+deb12u1)

SET statement_timeout = 0;
SET lock_timeout = 0;
SET idle_in_transaction_session_timeout = 0;
SET client_encoding = 'UTF8';
SET standard_conforming_strings = on;
SELECT pg_catalog.set_config('search_path', '', false);
SET check_function_bodies = false;
SET xmloption = content;
SET client_min_messages = warning;
SET row_security = off;

--
-- Name: millrace; Type: SCHEMA; Schema: -; Owner: -
--

CREATE SCHEMA millrace;


SET default_tablespace = '';

--
-- Name: job; Type: TABLE; Schema: millrace; Owner: -
--

CREATE TABLE millrace.job (
    slot smallint NOT NULL,
    id bigint NOT NULL,
    queue text NOT NULL,
    kind text NOT NULL,
    args jsonb NOT NULL,
    priority smallint NOT NULL,
    attempt integer NOT NULL,
    max_attempts integer NOT NULL,
    created_at timestamp with time zone NOT NULL,
    txid xid8 DEFAULT pg_current_xact_id() NOT NULL
)
PARTITION BY LIST (slot);


--
-- Name: batch_jobs(bigint); Type: FUNCTION; Schema: millrace; Owner: -
--

CREATE FUNCTION millrace.batch_jobs(p_tick bigint) RETURNS SETOF millrace.job
    LANGUAGE sql
    SET search_path TO 'pg_catalog', 'pg_temp'
    SET jit TO 'off'
    AS $$
    SELECT r.* FROM (SELECT * FROM millrace.tick t WHERE t.tick_id = p_tick AND NOT t.carried LIMIT 1) t
    CROSS JOIN LATERAL millrace.range_jobs(t.queue, t.prev_snap, t.snap, t.after_txid, t.after_id,
                                           t.upto_txid, t.upto_id, 2147483647, 9223372036854775807) r
    WHERE NOT EXISTS (SELECT 1 FROM millrace.ack a WHERE a.tick_id = p_tick AND a.job_id = r.id)
$$;


--
-- Name: check_job(text, jsonb, text, integer, integer); Type: FUNCTION; Schema: millrace; Owner: -
--

CREATE FUNCTION millrace.check_job(p_kind text, p_args jsonb, p_queue text, p_priority integer, p_max_attempts integer) RETURNS void
    LANGUAGE plpgsql IMMUTABLE
    SET search_path TO 'pg_catalog', 'pg_temp'
    SET jit TO 'off'
    AS $$
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
END $$;


--
-- Name: claim(text, integer, bigint, boolean, integer, bigint); Type: FUNCTION; Schema: millrace; Owner: -
--

CREATE FUNCTION millrace.claim(p_queue text, p_owner integer, p_req bigint, p_retry boolean DEFAULT false, p_max_jobs integer DEFAULT 1000, p_max_bytes bigint DEFAULT 8388608) RETURNS TABLE(tick_id bigint, token bigint, id bigint, kind text, args jsonb, priority smallint, attempt integer, max_attempts integer, created_at timestamp with time zone)
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    SET jit TO 'off'
    AS $$
#variable_conflict use_column
DECLARE
    v_tick  bigint;
    v_token bigint;
    v_last_token bigint;
    v_owner int;
    v_last  millrace.tick;
    v_prev  pg_snapshot;
    v_snap  pg_snapshot;
    v_after_txid xid8;
    v_after_id   bigint;
    v_r     millrace.job;
    v_n     int;
    v_bytes bigint;
    v_upto_txid xid8;
    v_upto_id   bigint;
BEGIN
    IF p_max_jobs IS NULL OR p_max_jobs < 1 OR p_max_bytes IS NULL OR p_max_bytes < 1 THEN
        RAISE EXCEPTION 'millrace: claim limits must be positive' USING ERRCODE = '22023';
    END IF;
    PERFORM pg_advisory_xact_lock(millrace.claim_space(), hashtext(p_queue));

    IF p_retry THEN
        -- The batch an earlier call with this request id took: a new tick,
        -- or an adopted one (a lease with this owner and request id).
        SELECT x.tick_id, x.token INTO v_tick, v_token FROM (
            (SELECT t.tick_id, t.tick_id AS token FROM millrace.tick t
             WHERE t.owner = p_owner AND t.req = p_req AND t.queue = p_queue AND NOT t.carried LIMIT 1)
            UNION ALL
            (SELECT l.tick_id, l.token FROM millrace.lease l
             WHERE l.owner = p_owner AND l.req = p_req AND l.queue = p_queue AND l.owner <> 0
             ORDER BY l.token DESC LIMIT 1)) x
        ORDER BY x.token DESC LIMIT 1;  -- the last batch the call took
        IF FOUND THEN
            SELECT h.token, h.owner INTO v_last_token, v_owner FROM millrace.holder(v_tick) h;
            IF v_last_token = v_token AND v_owner = p_owner
               AND NOT EXISTS (SELECT 1 FROM millrace.done d WHERE d.tick_id = v_tick) THEN
                RETURN QUERY SELECT v_tick, v_token, b.id, b.kind, b.args, b.priority, b.attempt, b.max_attempts, b.created_at
                             FROM millrace.batch_jobs(v_tick) b;
                RETURN;
            END IF;
        END IF;
    END IF;

    -- Adopt released batches; close any that turn out to be fully acked.
    LOOP
        SELECT l.tick_id INTO v_tick FROM millrace.lease l
        WHERE l.queue = p_queue AND l.owner = 0
          AND NOT EXISTS (SELECT 1 FROM millrace.lease n WHERE n.tick_id = l.tick_id AND n.token > l.token)
          AND NOT EXISTS (SELECT 1 FROM millrace.done d WHERE d.tick_id = l.tick_id)
        ORDER BY l.tick_id LIMIT 1;
        EXIT WHEN NOT FOUND;
        PERFORM pg_advisory_xact_lock(millrace.fence_space(), (v_tick % 2147483647)::int);
        INSERT INTO millrace.lease (slot, queue, tick_id, token, owner, req)
        VALUES (millrace.current_segment(), p_queue, v_tick, nextval('millrace.tick_id_seq'), p_owner, p_req)
        RETURNING lease.token INTO v_token;
        RETURN QUERY SELECT v_tick, v_token, b.id, b.kind, b.args, b.priority, b.attempt, b.max_attempts, b.created_at
                     FROM millrace.batch_jobs(v_tick) b;
        IF FOUND THEN
            RETURN;
        END IF;
        INSERT INTO millrace.done (slot, queue, tick_id) VALUES (millrace.current_segment(), p_queue, v_tick);
    END LOOP;

    -- The queue's frontier: its newest tick.
    SELECT * INTO v_last FROM millrace.tick t WHERE t.queue = p_queue ORDER BY t.tick_id DESC LIMIT 1;
    v_tick := nextval('millrace.tick_id_seq');
    FOR pass IN 1 .. 2 LOOP
        IF pass = 1 THEN
            CONTINUE WHEN v_last IS NULL OR NOT v_last.more;
            -- The newest tick stopped at its cap: continue its range.
            v_prev := v_last.prev_snap;
            v_snap := v_last.snap;
            v_after_txid := v_last.upto_txid;
            v_after_id := v_last.upto_id;
        ELSE
            v_prev := coalesce(v_last.snap, '1:1:'::pg_snapshot);
            v_snap := pg_current_snapshot();
            v_after_txid := NULL;
            v_after_id := NULL;
        END IF;
        v_n := 0;
        v_bytes := 0;
        FOR v_r IN SELECT * FROM millrace.range_jobs(p_queue, v_prev, v_snap, v_after_txid, v_after_id,
                                                     NULL, NULL, p_max_jobs, p_max_bytes) LOOP
            v_n := v_n + 1;
            v_bytes := v_bytes + pg_column_size(v_r.args);
            v_upto_txid := v_r.txid;
            v_upto_id := v_r.id;
            tick_id := v_tick; token := v_tick; id := v_r.id; kind := v_r.kind; args := v_r.args;
            priority := v_r.priority; attempt := v_r.attempt; max_attempts := v_r.max_attempts;
            created_at := v_r.created_at;
            RETURN NEXT;
        END LOOP;
        IF v_n > 0 THEN
            INSERT INTO millrace.tick (slot, queue, tick_id, prev_snap, snap, after_txid, after_id, upto_txid, upto_id,
                                       more, owner, req, njobs)
            VALUES (millrace.current_segment(), p_queue, v_tick, v_prev, v_snap, v_after_txid, v_after_id,
                    v_upto_txid, v_upto_id, v_n >= p_max_jobs OR v_bytes >= p_max_bytes, p_owner, p_req, v_n);
            RETURN;
        END IF;
    END LOOP;
END $$;


--
-- Name: claim_space(); Type: FUNCTION; Schema: millrace; Owner: -
--

CREATE FUNCTION millrace.claim_space() RETURNS integer
    LANGUAGE sql IMMUTABLE
    AS $$ SELECT 1836412276 $$;


--
-- Name: current_gen(); Type: FUNCTION; Schema: millrace; Owner: -
--

CREATE FUNCTION millrace.current_gen() RETURNS smallint
    LANGUAGE sql STABLE
    AS $$ SELECT gen FROM millrace.sched_gen ORDER BY id DESC LIMIT 1 $$;


--
-- Name: current_segment(); Type: FUNCTION; Schema: millrace; Owner: -
--

CREATE FUNCTION millrace.current_segment() RETURNS smallint
    LANGUAGE sql STABLE
    AS $$ SELECT segment FROM millrace.rotation ORDER BY id DESC LIMIT 1 $$;


--
-- Name: enqueue(text, jsonb, text, integer, timestamp with time zone, integer, boolean); Type: FUNCTION; Schema: millrace; Owner: -
--

CREATE FUNCTION millrace.enqueue(p_kind text, p_args jsonb DEFAULT '{}'::jsonb, p_queue text DEFAULT 'default'::text, p_priority integer DEFAULT 0, p_run_at timestamp with time zone DEFAULT NULL::timestamp with time zone, p_max_attempts integer DEFAULT 25, p_notify boolean DEFAULT true) RETURNS bigint
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    SET jit TO 'off'
    AS $$
DECLARE
    v_id bigint := nextval('millrace.job_id_seq');
BEGIN
    PERFORM millrace.check_job(p_kind, p_args, p_queue, p_priority, p_max_attempts);
    IF octet_length(p_args::text) > 1048576 THEN
        RAISE EXCEPTION 'millrace: args must be at most 1048576 bytes encoded' USING ERRCODE = '22023';
    END IF;
    IF p_run_at IS NOT NULL AND p_run_at > now() THEN
        INSERT INTO millrace.sched (gen, id, queue, kind, args, priority, attempt, max_attempts, created_at, due_at)
        VALUES (millrace.current_gen(), v_id, p_queue, p_kind, p_args, p_priority, 0, p_max_attempts, now(), p_run_at);
    ELSE
        INSERT INTO millrace.job (slot, id, queue, kind, args, priority, attempt, max_attempts, created_at)
        VALUES (millrace.txn_slot(), v_id, p_queue, p_kind, p_args, p_priority, 0, p_max_attempts, now());
        IF p_notify THEN
            PERFORM pg_notify('millrace', p_queue);
        END IF;
    END IF;
    RETURN v_id;
END $$;


--
-- Name: enqueue_many(text[], jsonb[], text[], integer[], timestamp with time zone[], integer[], boolean); Type: FUNCTION; Schema: millrace; Owner: -
--

CREATE FUNCTION millrace.enqueue_many(p_kind text[], p_args jsonb[], p_queue text[], p_priority integer[], p_run_at timestamp with time zone[], p_max_attempts integer[], p_notify boolean DEFAULT true) RETURNS SETOF bigint
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    SET jit TO 'off'
    AS $$
DECLARE
    v_n int := cardinality(p_kind);
    v_bad record;
    v_q text;
BEGIN
    IF cardinality(p_args) <> v_n OR cardinality(p_queue) <> v_n OR cardinality(p_priority) <> v_n
       OR cardinality(p_run_at) <> v_n OR cardinality(p_max_attempts) <> v_n THEN
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
    RETURN QUERY
    WITH u AS (
        SELECT nextval('millrace.job_id_seq') AS id, i, k, a, q, p, r, m
        FROM unnest(p_kind, p_args, p_queue, p_priority, p_run_at, p_max_attempts) WITH ORDINALITY AS u(k, a, q, p, r, m, i)
        ORDER BY i),
    now_ AS (
        INSERT INTO millrace.job (slot, id, queue, kind, args, priority, attempt, max_attempts, created_at)
        SELECT millrace.txn_slot(), id, q, k, a, p, 0, m, now() FROM u WHERE r IS NULL OR r <= now()
        RETURNING 1),
    later AS (
        INSERT INTO millrace.sched (gen, id, queue, kind, args, priority, attempt, max_attempts, created_at, due_at)
        SELECT millrace.current_gen(), id, q, k, a, p, 0, m, now(), r FROM u WHERE r > now()
        RETURNING 1)
    SELECT u.id FROM u ORDER BY u.i;
    IF p_notify THEN
        FOR v_q IN SELECT DISTINCT q FROM unnest(p_queue, p_run_at) AS x(q, r) WHERE r IS NULL OR r <= now() LOOP
            PERFORM pg_notify('millrace', v_q);
        END LOOP;
    END IF;
END $$;


--
-- Name: fence_space(); Type: FUNCTION; Schema: millrace; Owner: -
--

CREATE FUNCTION millrace.fence_space() RETURNS integer
    LANGUAGE sql IMMUTABLE
    AS $$ SELECT 1836412275 $$;


--
-- Name: flush(integer, bigint, bigint[], bigint[], bigint[], smallint[], integer[], text[], timestamp with time zone[], text[], text[], jsonb[], smallint[], integer[], timestamp with time zone[], bigint[], bigint[], text[], boolean); Type: FUNCTION; Schema: millrace; Owner: -
--

CREATE FUNCTION millrace.flush(p_owner integer, p_seq bigint, p_job bigint[], p_tick bigint[], p_token bigint[], p_state smallint[], p_attempt integer[], p_error text[], p_retry_at timestamp with time zone[], p_queue text[], p_kind text[], p_args jsonb[], p_priority smallint[], p_max_attempts integer[], p_created_at timestamp with time zone[], p_done_tick bigint[], p_done_token bigint[], p_done_queue text[], p_replay boolean DEFAULT true) RETURNS SETOF bigint
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    SET jit TO 'off'
    AS $$
DECLARE
    v_fenced bigint[];
    v_new    boolean[];
    v_slot   smallint;
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
    -- A batch is fenced when the token given is not its newest lease (it
    -- was released or adopted since), or when it is closed or gone (a late
    -- flush after its slots were reclaimed must not count again).
    SELECT coalesce(array_agg(x.t), '{}') INTO v_fenced FROM (
        SELECT DISTINCT u.t, u.k FROM unnest(p_tick || p_done_tick, p_token || p_done_token) AS u(t, k)) x
    WHERE (SELECT h.token FROM millrace.holder(x.t) h) IS DISTINCT FROM x.k
       OR EXISTS (SELECT 1 FROM millrace.done d WHERE d.tick_id = x.t);
    -- Acks already written (a replay that outlived its flush row) are not
    -- written again, nor their retries or discards.
    -- v_new[i]: ack i is written (one flag per ack, looked up by position).
    SELECT coalesce(array_agg(u.t <> ALL (v_fenced)
               AND (NOT p_replay OR NOT EXISTS (SELECT 1 FROM millrace.ack a WHERE a.tick_id = u.t AND a.job_id = u.j))
               ORDER BY u.i), '{}')
    INTO v_new
    FROM unnest(p_job, p_tick) WITH ORDINALITY AS u(j, t, i);

    INSERT INTO millrace.ack (slot, job_id, tick_id, token, state, attempt, error)
    SELECT v_slot, u.j, u.t, u.k, u.s, u.a, u.e
    FROM unnest(p_job, p_tick, p_token, p_state, p_attempt, p_error) WITH ORDINALITY AS u(j, t, k, s, a, e, i)
    WHERE v_new[u.i];

    INSERT INTO millrace.sched (gen, id, queue, kind, args, priority, attempt, max_attempts, created_at, due_at, last_error)
    SELECT millrace.current_gen(), u.j, u.q, u.kd, u.ar, u.p, u.a, u.m, u.c, u.r, u.e
    FROM unnest(p_job, p_tick, p_state, p_attempt, p_error, p_retry_at, p_queue, p_kind, p_args, p_priority,
                p_max_attempts, p_created_at) WITH ORDINALITY AS u(j, t, s, a, e, r, q, kd, ar, p, m, c, i)
    WHERE u.s = 2 AND v_new[u.i];

    INSERT INTO millrace.discarded (id, queue, kind, args, priority, attempt, max_attempts, created_at, error)
    SELECT u.j, u.q, u.kd, u.ar, u.p, u.a, u.m, u.c, coalesce(u.e, '')
    FROM unnest(p_job, p_tick, p_state, p_attempt, p_error, p_queue, p_kind, p_args, p_priority,
                p_max_attempts, p_created_at) WITH ORDINALITY AS u(j, t, s, a, e, q, kd, ar, p, m, c, i)
    WHERE u.s = 3 AND v_new[u.i];

    INSERT INTO millrace.done (slot, queue, tick_id)
    SELECT DISTINCT v_slot, u.q, u.t FROM unnest(p_done_tick, p_done_queue) AS u(t, q)
    WHERE u.t <> ALL (v_fenced);

    RETURN QUERY SELECT unnest(v_fenced);
END $$;


--
-- Name: flush_space(); Type: FUNCTION; Schema: millrace; Owner: -
--

CREATE FUNCTION millrace.flush_space() RETURNS integer
    LANGUAGE sql IMMUTABLE
    AS $$ SELECT 1836412277 $$;


--
-- Name: holder(bigint); Type: FUNCTION; Schema: millrace; Owner: -
--

CREATE FUNCTION millrace.holder(p_tick bigint, OUT token bigint, OUT owner integer) RETURNS record
    LANGUAGE sql STABLE
    SET search_path TO 'pg_catalog', 'pg_temp'
    SET jit TO 'off'
    AS $$
    SELECT token, owner FROM (
        (SELECT l.token, l.owner FROM millrace.lease l WHERE l.tick_id = p_tick ORDER BY l.token DESC LIMIT 1)
        UNION ALL
        (SELECT t.tick_id, t.owner FROM millrace.tick t WHERE t.tick_id = p_tick AND NOT t.carried LIMIT 1)) h
    ORDER BY token DESC LIMIT 1
$$;


--
-- Name: live_jobs(); Type: FUNCTION; Schema: millrace; Owner: -
--

CREATE FUNCTION millrace.live_jobs() RETURNS TABLE(id bigint, queue text, kind text, args jsonb, priority smallint, attempt integer, max_attempts integer, created_at timestamp with time zone, state text, run_at timestamp with time zone, tick_id bigint, owner integer)
    LANGUAGE sql STABLE SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    SET jit TO 'off'
    AS $$
    WITH f AS (
        SELECT DISTINCT ON (t.queue) t.queue, t.prev_snap, t.snap, t.more, t.upto_txid, t.upto_id
        FROM millrace.tick t ORDER BY t.queue, t.tick_id DESC),
    o AS (SELECT * FROM millrace.open_batches()),
    running AS (
        SELECT b.id, b.queue, b.kind, b.args, b.priority, b.attempt, b.max_attempts, b.created_at,
               CASE WHEN o.owner = 0 THEN 'available' ELSE 'running' END AS state,  -- owner 0: released
               NULL::timestamptz AS run_at, o.tick_id, o.owner
        FROM o CROSS JOIN LATERAL millrace.batch_jobs(o.tick_id) b),
    lastp AS (SELECT p.upto, p.snap FROM millrace.promote p ORDER BY p.round DESC LIMIT 1)
    SELECT DISTINCT ON (j.id) j.id, j.queue, j.kind, j.args, j.priority, j.attempt, j.max_attempts, j.created_at,
           'available', NULL::timestamptz, NULL::bigint, NULL::int
    FROM millrace.job j LEFT JOIN f ON f.queue = j.queue
    WHERE (f.snap IS NULL OR NOT pg_visible_in_snapshot(j.txid, f.snap)
           OR (f.more AND NOT pg_visible_in_snapshot(j.txid, f.prev_snap) AND (j.txid, j.id) > (f.upto_txid, f.upto_id)))
      AND NOT EXISTS (SELECT 1 FROM running r WHERE r.id = j.id)
    UNION ALL
    SELECT * FROM running
    UNION ALL
    SELECT s.id, s.queue, s.kind, s.args, s.priority, s.attempt, s.max_attempts, s.created_at,
           'scheduled', s.due_at, NULL, NULL
    FROM millrace.sched s LEFT JOIN lastp ON true
    WHERE NOT (coalesce(pg_visible_in_snapshot(s.txid, lastp.snap), false) AND s.due_at <= lastp.upto)
$$;


--
-- Name: lock_space(); Type: FUNCTION; Schema: millrace; Owner: -
--

CREATE FUNCTION millrace.lock_space() RETURNS integer
    LANGUAGE sql IMMUTABLE
    AS $$ SELECT 1836412274 $$;


--
-- Name: maint_space(); Type: FUNCTION; Schema: millrace; Owner: -
--

CREATE FUNCTION millrace.maint_space() RETURNS integer
    LANGUAGE sql IMMUTABLE
    AS $$ SELECT 1836412278 $$;


--
-- Name: open_batches(); Type: FUNCTION; Schema: millrace; Owner: -
--

CREATE FUNCTION millrace.open_batches() RETURNS TABLE(queue text, tick_id bigint, token bigint, owner integer, leased_at timestamp with time zone)
    LANGUAGE sql STABLE
    SET search_path TO 'pg_catalog', 'pg_temp'
    SET jit TO 'off'
    AS $$
    SELECT t.queue, t.tick_id, h.token, h.owner, h.at
    FROM millrace.tick t
    CROSS JOIN LATERAL (
        SELECT token, owner, at FROM (
            (SELECT l.token, l.owner, l.at FROM millrace.lease l WHERE l.tick_id = t.tick_id ORDER BY l.token DESC LIMIT 1)
            UNION ALL SELECT t.tick_id, t.owner, t.at) x
        ORDER BY token DESC LIMIT 1) h
    WHERE NOT t.carried
      AND t.tick_id NOT IN (SELECT d.tick_id FROM millrace.done d)  -- one hashed pass over done
$$;


--
-- Name: process_alive(integer); Type: FUNCTION; Schema: millrace; Owner: -
--

CREATE FUNCTION millrace.process_alive(p integer) RETURNS boolean
    LANGUAGE sql STABLE
    SET search_path TO 'pg_catalog', 'pg_temp'
    SET jit TO 'off'
    AS $$
    SELECT EXISTS (
        SELECT 1 FROM pg_locks l
        WHERE l.locktype = 'advisory' AND l.granted
          AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())
          AND l.classid = millrace.lock_space()::oid AND l.objid = p::oid AND l.objsubid = 2)
$$;


--
-- Name: promote(bigint); Type: FUNCTION; Schema: millrace; Owner: -
--

CREATE FUNCTION millrace.promote(p_compact_min bigint DEFAULT 10000) RETURNS bigint
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    SET jit TO 'off'
    AS $_$
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
    PERFORM pg_advisory_xact_lock(millrace.maint_space(), 1);
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
        INSERT INTO millrace.job (slot, id, queue, kind, args, priority, attempt, max_attempts, created_at)
        SELECT millrace.current_segment(), id, queue, kind, args, priority, attempt, max_attempts, created_at FROM due
        RETURNING job.queue)
    SELECT count(*), array_agg(DISTINCT ins.queue) INTO v_n, v_queues FROM ins;
    FOR v_q IN SELECT unnest(v_queues) LOOP
        PERFORM pg_notify('millrace', v_q);
    END LOOP;
    -- Record the round when it promoted something, and at least once a
    -- minute so that the xid range of the next round stays short.
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
                INSERT INTO millrace.sched (gen, id, queue, kind, args, priority, attempt, max_attempts, created_at, due_at, last_error, txid)
                SELECT %s, s.id, s.queue, s.kind, s.args, s.priority, s.attempt, s.max_attempts, s.created_at, s.due_at, s.last_error, s.txid
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
END $_$;


--
-- Name: queue_counts(); Type: FUNCTION; Schema: millrace; Owner: -
--

CREATE FUNCTION millrace.queue_counts() RETURNS TABLE(queue text, available bigint, running bigint, scheduled bigint, discarded bigint)
    LANGUAGE sql STABLE SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    SET jit TO 'off'
    AS $$
    SELECT q.queue,
           count(*) FILTER (WHERE j.state = 'available'),
           count(*) FILTER (WHERE j.state = 'running'),
           count(*) FILTER (WHERE j.state = 'scheduled'),
           (SELECT count(*) FROM millrace.discarded d WHERE d.queue = q.queue)
    FROM (SELECT DISTINCT x.queue FROM millrace.live_jobs() x
          UNION SELECT DISTINCT d.queue FROM millrace.discarded d) q
    LEFT JOIN millrace.live_jobs() j ON j.queue = q.queue
    GROUP BY q.queue ORDER BY q.queue
$$;


--
-- Name: range_jobs(text, pg_snapshot, pg_snapshot, xid8, bigint, xid8, bigint, integer, bigint); Type: FUNCTION; Schema: millrace; Owner: -
--

CREATE FUNCTION millrace.range_jobs(p_queue text, p_prev pg_snapshot, p_snap pg_snapshot, p_after_txid xid8, p_after_id bigint, p_upto_txid xid8, p_upto_id bigint, p_max_jobs integer, p_max_bytes bigint) RETURNS SETOF millrace.job
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'pg_temp'
    SET jit TO 'off'
    SET plan_cache_mode TO 'force_custom_plan'
    AS $$
-- Plans are made for each call's bounds: a cached generic plan would turn
-- the optional bounds below into filters, and a continued range would be
-- rescanned from its start at every claim.
DECLARE
    v_x     xid8;
    v_r     millrace.job;
    v_n     int := 0;
    v_bytes bigint := 0;
    v_lo    xid8 := pg_snapshot_xmax(p_prev);
BEGIN
    FOR v_x IN SELECT x FROM pg_snapshot_xip(p_prev) x
               WHERE (p_after_txid IS NULL OR x >= p_after_txid) AND (p_upto_txid IS NULL OR x <= p_upto_txid)
               ORDER BY x LOOP
        CONTINUE WHEN NOT pg_visible_in_snapshot(v_x, p_snap);
        FOR v_r IN SELECT * FROM millrace.job j
                   WHERE j.queue = p_queue AND j.txid = v_x
                     AND (p_after_txid IS NULL OR v_x > p_after_txid OR j.id > p_after_id)
                     AND (p_upto_txid IS NULL OR v_x < p_upto_txid OR j.id <= p_upto_id)
                   ORDER BY j.txid, j.id LOOP
            RETURN NEXT v_r;
            v_n := v_n + 1;
            v_bytes := v_bytes + pg_column_size(v_r.args);
            IF v_n >= p_max_jobs OR v_bytes >= p_max_bytes THEN
                RETURN;
            END IF;
        END LOOP;
    END LOOP;
    IF p_after_txid IS NOT NULL AND p_after_txid > v_lo THEN
        v_lo := p_after_txid;
    END IF;
    FOR v_r IN SELECT * FROM millrace.job j
               WHERE j.queue = p_queue AND j.txid >= v_lo AND j.txid < pg_snapshot_xmax(p_snap)
                 AND (p_after_txid IS NULL OR (j.txid, j.id) > (p_after_txid, p_after_id))
                 AND (p_upto_txid IS NULL OR (j.txid, j.id) <= (p_upto_txid, p_upto_id))
                 AND pg_visible_in_snapshot(j.txid, p_snap)
               ORDER BY j.txid, j.id LOOP
        RETURN NEXT v_r;
        v_n := v_n + 1;
        v_bytes := v_bytes + pg_column_size(v_r.args);
        IF v_n >= p_max_jobs OR v_bytes >= p_max_bytes THEN
            RETURN;
        END IF;
    END LOOP;
END $$;


--
-- Name: reclaim_slot(smallint, smallint); Type: FUNCTION; Schema: millrace; Owner: -
--

CREATE FUNCTION millrace.reclaim_slot(p_slot smallint, p_into smallint) RETURNS bigint
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'pg_temp'
    SET jit TO 'off'
    AS $$
DECLARE
    v_n bigint;
    v_total bigint := 0;
    v_open bigint[];
BEGIN
    -- Jobs not yet claimed.
    INSERT INTO millrace.job (slot, id, queue, kind, args, priority, attempt, max_attempts, created_at, txid)
    SELECT p_into, j.id, j.queue, j.kind, j.args, j.priority, j.attempt, j.max_attempts, j.created_at, j.txid
    FROM millrace.unclaimed(p_slot) j;
    GET DIAGNOSTICS v_n = ROW_COUNT;
    v_total := v_total + v_n;

    v_open := ARRAY(SELECT o.tick_id FROM millrace.open_batches() o);

    -- Jobs of open batches that have no ack yet.
    INSERT INTO millrace.job (slot, id, queue, kind, args, priority, attempt, max_attempts, created_at, txid)
    SELECT DISTINCT ON (b.id) p_into, b.id, b.queue, b.kind, b.args, b.priority, b.attempt, b.max_attempts, b.created_at, b.txid
    FROM unnest(v_open) o(tick_id) CROSS JOIN LATERAL millrace.batch_jobs(o.tick_id) b
    WHERE b.slot = p_slot
      AND NOT EXISTS (SELECT 1 FROM millrace.job c WHERE c.slot = p_into AND c.queue = b.queue AND c.txid = b.txid AND c.id = b.id);
    GET DIAGNOSTICS v_n = ROW_COUNT;
    v_total := v_total + v_n;

    -- Open batches' ticks, and each queue's newest tick as its frontier.
    INSERT INTO millrace.tick (slot, queue, tick_id, prev_snap, snap, after_txid, after_id, upto_txid, upto_id,
                               more, owner, req, njobs, carried, at)
    SELECT p_into, t.queue, t.tick_id, t.prev_snap, t.snap, t.after_txid, t.after_id, t.upto_txid, t.upto_id,
           t.more, t.owner, t.req, t.njobs, t.tick_id <> ALL (v_open), t.at
    FROM millrace.tick t
    WHERE t.slot = p_slot
      AND ((NOT t.carried AND t.tick_id = ANY (v_open))
           OR t.tick_id IN (
               -- each queue's newest tick in this slot, if it is the queue's newest anywhere
               SELECT l.tick_id FROM (SELECT DISTINCT ON (x.queue) x.queue, x.tick_id FROM millrace.tick x
                                      WHERE x.slot = p_slot ORDER BY x.queue, x.tick_id DESC) l
               WHERE l.tick_id = (SELECT n.tick_id FROM millrace.tick n WHERE n.queue = l.queue
                                  ORDER BY n.tick_id DESC LIMIT 1)));
    GET DIAGNOSTICS v_n = ROW_COUNT;
    v_total := v_total + v_n;
    -- (A copy keeps carried = false only when its batch is open: a
    -- finished batch copied as its queue's frontier is only a frontier.)

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

    EXECUTE 'TRUNCATE ' || array_to_string(millrace.slot_tables(p_slot), ', ');
    RETURN v_total;
END $$;


--
-- Name: register(text, text, integer); Type: FUNCTION; Schema: millrace; Owner: -
--

CREATE FUNCTION millrace.register(p_name text, p_host text, p_pid integer) RETURNS integer
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    SET jit TO 'off'
    AS $$
DECLARE
    v_id int := nextval('millrace.process_id_seq')::int;
BEGIN
    -- Lock first, then insert: a registered row is never seen unlocked
    -- while its process lives.
    PERFORM pg_advisory_lock(millrace.lock_space(), v_id);
    INSERT INTO millrace.process (id, name, host, pid) VALUES (v_id, left(p_name, 200), left(p_host, 200), p_pid);
    RETURN v_id;
END $$;


--
-- Name: release(integer); Type: FUNCTION; Schema: millrace; Owner: -
--

CREATE FUNCTION millrace.release(p_owner integer) RETURNS integer
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    SET jit TO 'off'
    AS $$
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
END $$;


--
-- Name: rescue(interval); Type: FUNCTION; Schema: millrace; Owner: -
--

CREATE FUNCTION millrace.rescue(p_stuck interval) RETURNS TABLE(queue text, tick_id bigint, owner integer, reason text)
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    SET jit TO 'off'
    AS $$
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
END $$;


--
-- Name: ring_stats(); Type: FUNCTION; Schema: millrace; Owner: -
--

CREATE FUNCTION millrace.ring_stats(OUT current_slot smallint, OUT since timestamp with time zone, OUT rotations bigint, OUT reclaims bigint, OUT last_reclaim timestamp with time zone) RETURNS record
    LANGUAGE sql STABLE SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    SET jit TO 'off'
    AS $$
    SELECT r.segment, r.at, r.n, c.n, c.at
    FROM (SELECT * FROM millrace.rotation ORDER BY id DESC LIMIT 1) r
    LEFT JOIN LATERAL (SELECT * FROM millrace.reclaim ORDER BY id DESC LIMIT 1) c ON true
$$;


--
-- Name: rotate(interval, bigint); Type: FUNCTION; Schema: millrace; Owner: -
--

CREATE FUNCTION millrace.rotate(p_after interval, p_max_carry bigint DEFAULT 5000) RETURNS TABLE(action text, segment smallint, detail text)
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    SET jit TO 'off'
    SET lock_timeout TO '50ms'
    AS $$
#variable_conflict use_column
DECLARE
    v_cur   record;
    v_slot  record;
    v_clean smallint[];
    v_copied bigint;
    v_try   int;
    v_holders text;
    v_n     bigint;
BEGIN
    IF NOT pg_try_advisory_xact_lock(millrace.maint_space(), 0) THEN
        action := 'busy'; segment := NULL; detail := 'another rotation is running';
        RETURN NEXT;
        RETURN;
    END IF;
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
        SELECT count(*) INTO v_n FROM (SELECT 1 FROM millrace.unclaimed(v_slot.slot) LIMIT p_max_carry + 1) u;
        -- ... unless no slot is clean: then the backlog is carried rather
        -- than letting the ring stop.
        IF v_n > p_max_carry AND EXISTS (
                SELECT 1 FROM generate_series(0, millrace.slots() - 1) g
                WHERE g <> v_cur.segment
                  AND millrace.slot_is_clean(g)) THEN
            action := 'blocked'; segment := v_slot.slot;
            detail := format('slot %s holds more than %s jobs not yet claimed (a backlog); it is reclaimed once they are',
                             v_slot.slot, p_max_carry);
            RETURN NEXT;
            CONTINUE;
        END IF;
        v_copied := NULL;
        FOR v_try IN 1 .. 20 LOOP
            BEGIN
                EXECUTE 'LOCK TABLE ' || array_to_string(millrace.slot_tables(v_slot.slot), ', ')
                        || ' IN ACCESS EXCLUSIVE MODE NOWAIT';
                v_copied := millrace.reclaim_slot(v_slot.slot, v_cur.segment);
                EXIT;
            EXCEPTION WHEN lock_not_available THEN
                PERFORM pg_sleep(0.002);
            END;
        END LOOP;
        IF v_copied IS NULL THEN
            SELECT string_agg(DISTINCT format('pid %s (%s, %s, transaction open %s s)', a.pid,
                       coalesce(nullif(a.application_name, ''), a.usename::text), a.state,
                       coalesce(extract(epoch FROM now() - a.xact_start)::bigint, 0)), '; ')
            INTO v_holders
            FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid
            WHERE l.locktype = 'relation' AND l.granted AND l.pid <> pg_backend_pid()
              AND l.relation = ANY (SELECT x::regclass::oid FROM unnest(millrace.slot_tables(v_slot.slot)) x);
            action := 'blocked'; segment := v_slot.slot;
            detail := format('slot %s cannot be reclaimed: %s', v_slot.slot,
                             coalesce('in use by ' || v_holders, 'its tables are in use'));
            RETURN NEXT;
            CONTINUE;
        END IF;
        SELECT coalesce(max(c.n), 0) + 1 INTO v_n FROM millrace.reclaim c;
        INSERT INTO millrace.reclaim (id, segment, n, copied) VALUES (nextval('millrace.ring_seq'), v_slot.slot, v_n, v_copied);
        action := 'reclaimed'; segment := v_slot.slot;
        detail := format('slot %s reclaimed into slot %s, %s rows carried forward', v_slot.slot, v_cur.segment, v_copied);
        RETURN NEXT;
    END LOOP;

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
END $$;


--
-- Name: schema_version(); Type: FUNCTION; Schema: millrace; Owner: -
--

CREATE FUNCTION millrace.schema_version() RETURNS integer
    LANGUAGE sql STABLE SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
    SELECT coalesce(max(version), 0) FROM millrace.migration
$$;


--
-- Name: slot_is_clean(integer); Type: FUNCTION; Schema: millrace; Owner: -
--

CREATE FUNCTION millrace.slot_is_clean(p_slot integer) RETURNS boolean
    LANGUAGE sql STABLE
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
    SELECT coalesce((SELECT max(c.id) FROM millrace.reclaim c WHERE c.segment = p_slot), 0)
         > coalesce((SELECT max(r.id) FROM millrace.rotation r WHERE r.segment = p_slot), 0)
$$;


--
-- Name: slot_tables(integer); Type: FUNCTION; Schema: millrace; Owner: -
--

CREATE FUNCTION millrace.slot_tables(p_slot integer) RETURNS text[]
    LANGUAGE sql IMMUTABLE
    AS $$ SELECT ARRAY(SELECT format('millrace.%I', t || '_' || p_slot)
                   FROM unnest(ARRAY['job', 'tick', 'lease', 'ack', 'done', 'flush', 'promote']) t) $$;


--
-- Name: slots(); Type: FUNCTION; Schema: millrace; Owner: -
--

CREATE FUNCTION millrace.slots() RETURNS smallint
    LANGUAGE sql IMMUTABLE
    AS $$ SELECT 4::smallint $$;


--
-- Name: txn_slot(); Type: FUNCTION; Schema: millrace; Owner: -
--

CREATE FUNCTION millrace.txn_slot() RETURNS smallint
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
DECLARE
    v text := current_setting('millrace.txn_slot', true);
BEGIN
    IF v IS NULL OR v = '' THEN
        v := millrace.current_segment()::text;
        PERFORM set_config('millrace.txn_slot', v, true);
    END IF;
    RETURN v::smallint;
END $$;


--
-- Name: unclaimed(smallint); Type: FUNCTION; Schema: millrace; Owner: -
--

CREATE FUNCTION millrace.unclaimed(p_slot smallint) RETURNS SETOF millrace.job
    LANGUAGE sql
    SET search_path TO 'pg_catalog', 'pg_temp'
    SET jit TO 'off'
    AS $$
    WITH RECURSIVE qs AS (
        (SELECT j.queue FROM millrace.job j WHERE j.slot = p_slot ORDER BY j.queue LIMIT 1)
        UNION ALL
        SELECT (SELECT j.queue FROM millrace.job j WHERE j.slot = p_slot AND j.queue > qs.queue ORDER BY j.queue LIMIT 1)
        FROM qs WHERE qs.queue IS NOT NULL),
    f AS MATERIALIZED (
        SELECT qs.queue, t.prev_snap, t.snap, t.more, t.upto_txid, t.upto_id FROM qs
        LEFT JOIN LATERAL (SELECT * FROM millrace.tick t WHERE t.queue = qs.queue ORDER BY t.tick_id DESC LIMIT 1) t ON true
        WHERE qs.queue IS NOT NULL)
    SELECT j.* FROM f JOIN millrace.job j ON j.slot = p_slot AND j.queue = f.queue
    WHERE f.snap IS NULL
       OR NOT pg_visible_in_snapshot(j.txid, f.snap)
       OR (f.more AND NOT pg_visible_in_snapshot(j.txid, f.prev_snap) AND (j.txid, j.id) > (f.upto_txid, f.upto_id))
$$;


--
-- Name: ack; Type: TABLE; Schema: millrace; Owner: -
--

CREATE TABLE millrace.ack (
    slot smallint NOT NULL,
    job_id bigint NOT NULL,
    tick_id bigint NOT NULL,
    token bigint NOT NULL,
    state smallint NOT NULL,
    attempt integer NOT NULL,
    at timestamp with time zone DEFAULT now() NOT NULL,
    error text
)
PARTITION BY LIST (slot);


SET default_table_access_method = heap;

--
-- Name: ack_0; Type: TABLE; Schema: millrace; Owner: -
--

CREATE TABLE millrace.ack_0 (
    slot smallint NOT NULL,
    job_id bigint NOT NULL,
    tick_id bigint NOT NULL,
    token bigint NOT NULL,
    state smallint NOT NULL,
    attempt integer NOT NULL,
    at timestamp with time zone DEFAULT now() NOT NULL,
    error text
)
WITH (autovacuum_enabled='false', toast.autovacuum_enabled='false');


--
-- Name: ack_1; Type: TABLE; Schema: millrace; Owner: -
--

CREATE TABLE millrace.ack_1 (
    slot smallint NOT NULL,
    job_id bigint NOT NULL,
    tick_id bigint NOT NULL,
    token bigint NOT NULL,
    state smallint NOT NULL,
    attempt integer NOT NULL,
    at timestamp with time zone DEFAULT now() NOT NULL,
    error text
)
WITH (autovacuum_enabled='false', toast.autovacuum_enabled='false');


--
-- Name: ack_2; Type: TABLE; Schema: millrace; Owner: -
--

CREATE TABLE millrace.ack_2 (
    slot smallint NOT NULL,
    job_id bigint NOT NULL,
    tick_id bigint NOT NULL,
    token bigint NOT NULL,
    state smallint NOT NULL,
    attempt integer NOT NULL,
    at timestamp with time zone DEFAULT now() NOT NULL,
    error text
)
WITH (autovacuum_enabled='false', toast.autovacuum_enabled='false');


--
-- Name: ack_3; Type: TABLE; Schema: millrace; Owner: -
--

CREATE TABLE millrace.ack_3 (
    slot smallint NOT NULL,
    job_id bigint NOT NULL,
    tick_id bigint NOT NULL,
    token bigint NOT NULL,
    state smallint NOT NULL,
    attempt integer NOT NULL,
    at timestamp with time zone DEFAULT now() NOT NULL,
    error text
)
WITH (autovacuum_enabled='false', toast.autovacuum_enabled='false');


--
-- Name: discarded; Type: TABLE; Schema: millrace; Owner: -
--

CREATE TABLE millrace.discarded (
    id bigint NOT NULL,
    queue text NOT NULL,
    kind text NOT NULL,
    args jsonb NOT NULL,
    priority smallint NOT NULL,
    attempt integer NOT NULL,
    max_attempts integer NOT NULL,
    created_at timestamp with time zone NOT NULL,
    error text NOT NULL,
    discarded_at timestamp with time zone DEFAULT now() NOT NULL
);


--
-- Name: done; Type: TABLE; Schema: millrace; Owner: -
--

CREATE TABLE millrace.done (
    slot smallint NOT NULL,
    queue text NOT NULL,
    tick_id bigint NOT NULL,
    at timestamp with time zone DEFAULT now() NOT NULL
)
PARTITION BY LIST (slot);


--
-- Name: done_0; Type: TABLE; Schema: millrace; Owner: -
--

CREATE TABLE millrace.done_0 (
    slot smallint NOT NULL,
    queue text NOT NULL,
    tick_id bigint NOT NULL,
    at timestamp with time zone DEFAULT now() NOT NULL
)
WITH (autovacuum_enabled='false', toast.autovacuum_enabled='false');


--
-- Name: done_1; Type: TABLE; Schema: millrace; Owner: -
--

CREATE TABLE millrace.done_1 (
    slot smallint NOT NULL,
    queue text NOT NULL,
    tick_id bigint NOT NULL,
    at timestamp with time zone DEFAULT now() NOT NULL
)
WITH (autovacuum_enabled='false', toast.autovacuum_enabled='false');


--
-- Name: done_2; Type: TABLE; Schema: millrace; Owner: -
--

CREATE TABLE millrace.done_2 (
    slot smallint NOT NULL,
    queue text NOT NULL,
    tick_id bigint NOT NULL,
    at timestamp with time zone DEFAULT now() NOT NULL
)
WITH (autovacuum_enabled='false', toast.autovacuum_enabled='false');


--
-- Name: done_3; Type: TABLE; Schema: millrace; Owner: -
--

CREATE TABLE millrace.done_3 (
    slot smallint NOT NULL,
    queue text NOT NULL,
    tick_id bigint NOT NULL,
    at timestamp with time zone DEFAULT now() NOT NULL
)
WITH (autovacuum_enabled='false', toast.autovacuum_enabled='false');


--
-- Name: flush; Type: TABLE; Schema: millrace; Owner: -
--

CREATE TABLE millrace.flush (
    slot smallint NOT NULL,
    owner integer NOT NULL,
    seq bigint NOT NULL,
    at timestamp with time zone DEFAULT now() NOT NULL
)
PARTITION BY LIST (slot);


--
-- Name: flush_0; Type: TABLE; Schema: millrace; Owner: -
--

CREATE TABLE millrace.flush_0 (
    slot smallint NOT NULL,
    owner integer NOT NULL,
    seq bigint NOT NULL,
    at timestamp with time zone DEFAULT now() NOT NULL
)
WITH (autovacuum_enabled='false');


--
-- Name: flush_1; Type: TABLE; Schema: millrace; Owner: -
--

CREATE TABLE millrace.flush_1 (
    slot smallint NOT NULL,
    owner integer NOT NULL,
    seq bigint NOT NULL,
    at timestamp with time zone DEFAULT now() NOT NULL
)
WITH (autovacuum_enabled='false');


--
-- Name: flush_2; Type: TABLE; Schema: millrace; Owner: -
--

CREATE TABLE millrace.flush_2 (
    slot smallint NOT NULL,
    owner integer NOT NULL,
    seq bigint NOT NULL,
    at timestamp with time zone DEFAULT now() NOT NULL
)
WITH (autovacuum_enabled='false');


--
-- Name: flush_3; Type: TABLE; Schema: millrace; Owner: -
--

CREATE TABLE millrace.flush_3 (
    slot smallint NOT NULL,
    owner integer NOT NULL,
    seq bigint NOT NULL,
    at timestamp with time zone DEFAULT now() NOT NULL
)
WITH (autovacuum_enabled='false');


--
-- Name: job_0; Type: TABLE; Schema: millrace; Owner: -
--

CREATE TABLE millrace.job_0 (
    slot smallint NOT NULL,
    id bigint NOT NULL,
    queue text NOT NULL,
    kind text NOT NULL,
    args jsonb NOT NULL,
    priority smallint NOT NULL,
    attempt integer NOT NULL,
    max_attempts integer NOT NULL,
    created_at timestamp with time zone NOT NULL,
    txid xid8 DEFAULT pg_current_xact_id() NOT NULL
)
WITH (autovacuum_enabled='false', toast.autovacuum_enabled='false');


--
-- Name: job_1; Type: TABLE; Schema: millrace; Owner: -
--

CREATE TABLE millrace.job_1 (
    slot smallint NOT NULL,
    id bigint NOT NULL,
    queue text NOT NULL,
    kind text NOT NULL,
    args jsonb NOT NULL,
    priority smallint NOT NULL,
    attempt integer NOT NULL,
    max_attempts integer NOT NULL,
    created_at timestamp with time zone NOT NULL,
    txid xid8 DEFAULT pg_current_xact_id() NOT NULL
)
WITH (autovacuum_enabled='false', toast.autovacuum_enabled='false');


--
-- Name: job_2; Type: TABLE; Schema: millrace; Owner: -
--

CREATE TABLE millrace.job_2 (
    slot smallint NOT NULL,
    id bigint NOT NULL,
    queue text NOT NULL,
    kind text NOT NULL,
    args jsonb NOT NULL,
    priority smallint NOT NULL,
    attempt integer NOT NULL,
    max_attempts integer NOT NULL,
    created_at timestamp with time zone NOT NULL,
    txid xid8 DEFAULT pg_current_xact_id() NOT NULL
)
WITH (autovacuum_enabled='false', toast.autovacuum_enabled='false');


--
-- Name: job_3; Type: TABLE; Schema: millrace; Owner: -
--

CREATE TABLE millrace.job_3 (
    slot smallint NOT NULL,
    id bigint NOT NULL,
    queue text NOT NULL,
    kind text NOT NULL,
    args jsonb NOT NULL,
    priority smallint NOT NULL,
    attempt integer NOT NULL,
    max_attempts integer NOT NULL,
    created_at timestamp with time zone NOT NULL,
    txid xid8 DEFAULT pg_current_xact_id() NOT NULL
)
WITH (autovacuum_enabled='false', toast.autovacuum_enabled='false');


--
-- Name: job_id_seq; Type: SEQUENCE; Schema: millrace; Owner: -
--

CREATE SEQUENCE millrace.job_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1;


--
-- Name: jobs; Type: VIEW; Schema: millrace; Owner: -
--

CREATE VIEW millrace.jobs AS
 SELECT live_jobs.id,
    live_jobs.queue,
    live_jobs.kind,
    live_jobs.args,
    live_jobs.priority,
    live_jobs.attempt,
    live_jobs.max_attempts,
    live_jobs.created_at,
    live_jobs.state,
    live_jobs.run_at,
    live_jobs.tick_id,
    live_jobs.owner
   FROM millrace.live_jobs() live_jobs(id, queue, kind, args, priority, attempt, max_attempts, created_at, state, run_at, tick_id, owner);


--
-- Name: lease; Type: TABLE; Schema: millrace; Owner: -
--

CREATE TABLE millrace.lease (
    slot smallint NOT NULL,
    queue text NOT NULL,
    tick_id bigint NOT NULL,
    token bigint NOT NULL,
    owner integer NOT NULL,
    req bigint DEFAULT 0 NOT NULL,
    at timestamp with time zone DEFAULT now() NOT NULL
)
PARTITION BY LIST (slot);


--
-- Name: lease_0; Type: TABLE; Schema: millrace; Owner: -
--

CREATE TABLE millrace.lease_0 (
    slot smallint NOT NULL,
    queue text NOT NULL,
    tick_id bigint NOT NULL,
    token bigint NOT NULL,
    owner integer NOT NULL,
    req bigint DEFAULT 0 NOT NULL,
    at timestamp with time zone DEFAULT now() NOT NULL
)
WITH (autovacuum_enabled='false', toast.autovacuum_enabled='false');


--
-- Name: lease_1; Type: TABLE; Schema: millrace; Owner: -
--

CREATE TABLE millrace.lease_1 (
    slot smallint NOT NULL,
    queue text NOT NULL,
    tick_id bigint NOT NULL,
    token bigint NOT NULL,
    owner integer NOT NULL,
    req bigint DEFAULT 0 NOT NULL,
    at timestamp with time zone DEFAULT now() NOT NULL
)
WITH (autovacuum_enabled='false', toast.autovacuum_enabled='false');


--
-- Name: lease_2; Type: TABLE; Schema: millrace; Owner: -
--

CREATE TABLE millrace.lease_2 (
    slot smallint NOT NULL,
    queue text NOT NULL,
    tick_id bigint NOT NULL,
    token bigint NOT NULL,
    owner integer NOT NULL,
    req bigint DEFAULT 0 NOT NULL,
    at timestamp with time zone DEFAULT now() NOT NULL
)
WITH (autovacuum_enabled='false', toast.autovacuum_enabled='false');


--
-- Name: lease_3; Type: TABLE; Schema: millrace; Owner: -
--

CREATE TABLE millrace.lease_3 (
    slot smallint NOT NULL,
    queue text NOT NULL,
    tick_id bigint NOT NULL,
    token bigint NOT NULL,
    owner integer NOT NULL,
    req bigint DEFAULT 0 NOT NULL,
    at timestamp with time zone DEFAULT now() NOT NULL
)
WITH (autovacuum_enabled='false', toast.autovacuum_enabled='false');


--
-- Name: migration; Type: TABLE; Schema: millrace; Owner: -
--

CREATE TABLE millrace.migration (
    version integer NOT NULL,
    name text NOT NULL,
    applied_at timestamp with time zone DEFAULT now() NOT NULL
);


--
-- Name: process; Type: TABLE; Schema: millrace; Owner: -
--

CREATE TABLE millrace.process (
    id integer NOT NULL,
    name text NOT NULL,
    host text NOT NULL,
    pid integer NOT NULL,
    started_at timestamp with time zone DEFAULT now() NOT NULL
);


--
-- Name: process_id_seq; Type: SEQUENCE; Schema: millrace; Owner: -
--

CREATE SEQUENCE millrace.process_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    MAXVALUE 2147483647
    CACHE 1
    CYCLE;


--
-- Name: promote; Type: TABLE; Schema: millrace; Owner: -
--

CREATE TABLE millrace.promote (
    slot smallint NOT NULL,
    round bigint NOT NULL,
    upto timestamp with time zone NOT NULL,
    snap pg_snapshot NOT NULL,
    total bigint NOT NULL
)
PARTITION BY LIST (slot);


--
-- Name: promote_0; Type: TABLE; Schema: millrace; Owner: -
--

CREATE TABLE millrace.promote_0 (
    slot smallint NOT NULL,
    round bigint NOT NULL,
    upto timestamp with time zone NOT NULL,
    snap pg_snapshot NOT NULL,
    total bigint NOT NULL
)
WITH (autovacuum_enabled='false', toast.autovacuum_enabled='false');


--
-- Name: promote_1; Type: TABLE; Schema: millrace; Owner: -
--

CREATE TABLE millrace.promote_1 (
    slot smallint NOT NULL,
    round bigint NOT NULL,
    upto timestamp with time zone NOT NULL,
    snap pg_snapshot NOT NULL,
    total bigint NOT NULL
)
WITH (autovacuum_enabled='false', toast.autovacuum_enabled='false');


--
-- Name: promote_2; Type: TABLE; Schema: millrace; Owner: -
--

CREATE TABLE millrace.promote_2 (
    slot smallint NOT NULL,
    round bigint NOT NULL,
    upto timestamp with time zone NOT NULL,
    snap pg_snapshot NOT NULL,
    total bigint NOT NULL
)
WITH (autovacuum_enabled='false', toast.autovacuum_enabled='false');


--
-- Name: promote_3; Type: TABLE; Schema: millrace; Owner: -
--

CREATE TABLE millrace.promote_3 (
    slot smallint NOT NULL,
    round bigint NOT NULL,
    upto timestamp with time zone NOT NULL,
    snap pg_snapshot NOT NULL,
    total bigint NOT NULL
)
WITH (autovacuum_enabled='false', toast.autovacuum_enabled='false');


--
-- Name: reclaim; Type: TABLE; Schema: millrace; Owner: -
--

CREATE TABLE millrace.reclaim (
    id bigint NOT NULL,
    segment smallint NOT NULL,
    n bigint NOT NULL,
    copied bigint NOT NULL,
    at timestamp with time zone DEFAULT now() NOT NULL
);


--
-- Name: ring_seq; Type: SEQUENCE; Schema: millrace; Owner: -
--

CREATE SEQUENCE millrace.ring_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1;


--
-- Name: rotation; Type: TABLE; Schema: millrace; Owner: -
--

CREATE TABLE millrace.rotation (
    id bigint NOT NULL,
    segment smallint NOT NULL,
    at timestamp with time zone DEFAULT now() NOT NULL,
    n bigint DEFAULT 0 NOT NULL,
    CONSTRAINT rotation_segment_check CHECK (((segment >= 0) AND (segment <= 3)))
);


--
-- Name: rotation_id_seq; Type: SEQUENCE; Schema: millrace; Owner: -
--

CREATE SEQUENCE millrace.rotation_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1;


--
-- Name: sched; Type: TABLE; Schema: millrace; Owner: -
--

CREATE TABLE millrace.sched (
    gen smallint NOT NULL,
    id bigint NOT NULL,
    queue text NOT NULL,
    kind text NOT NULL,
    args jsonb NOT NULL,
    priority smallint NOT NULL,
    attempt integer NOT NULL,
    max_attempts integer NOT NULL,
    created_at timestamp with time zone NOT NULL,
    due_at timestamp with time zone NOT NULL,
    last_error text,
    txid xid8 DEFAULT pg_current_xact_id() NOT NULL
)
PARTITION BY LIST (gen);


--
-- Name: sched_0; Type: TABLE; Schema: millrace; Owner: -
--

CREATE TABLE millrace.sched_0 (
    gen smallint NOT NULL,
    id bigint NOT NULL,
    queue text NOT NULL,
    kind text NOT NULL,
    args jsonb NOT NULL,
    priority smallint NOT NULL,
    attempt integer NOT NULL,
    max_attempts integer NOT NULL,
    created_at timestamp with time zone NOT NULL,
    due_at timestamp with time zone NOT NULL,
    last_error text,
    txid xid8 DEFAULT pg_current_xact_id() NOT NULL
)
WITH (autovacuum_enabled='false', toast.autovacuum_enabled='false');


--
-- Name: sched_1; Type: TABLE; Schema: millrace; Owner: -
--

CREATE TABLE millrace.sched_1 (
    gen smallint NOT NULL,
    id bigint NOT NULL,
    queue text NOT NULL,
    kind text NOT NULL,
    args jsonb NOT NULL,
    priority smallint NOT NULL,
    attempt integer NOT NULL,
    max_attempts integer NOT NULL,
    created_at timestamp with time zone NOT NULL,
    due_at timestamp with time zone NOT NULL,
    last_error text,
    txid xid8 DEFAULT pg_current_xact_id() NOT NULL
)
WITH (autovacuum_enabled='false', toast.autovacuum_enabled='false');


--
-- Name: sched_gen; Type: TABLE; Schema: millrace; Owner: -
--

CREATE TABLE millrace.sched_gen (
    id bigint NOT NULL,
    gen smallint NOT NULL,
    copied bigint NOT NULL,
    promoted bigint NOT NULL,
    at timestamp with time zone DEFAULT now() NOT NULL
);


--
-- Name: tick; Type: TABLE; Schema: millrace; Owner: -
--

CREATE TABLE millrace.tick (
    slot smallint NOT NULL,
    queue text NOT NULL,
    tick_id bigint NOT NULL,
    prev_snap pg_snapshot NOT NULL,
    snap pg_snapshot NOT NULL,
    after_txid xid8,
    after_id bigint,
    upto_txid xid8 NOT NULL,
    upto_id bigint NOT NULL,
    more boolean NOT NULL,
    owner integer NOT NULL,
    req bigint NOT NULL,
    njobs integer NOT NULL,
    carried boolean DEFAULT false NOT NULL,
    at timestamp with time zone DEFAULT now() NOT NULL
)
PARTITION BY LIST (slot);


--
-- Name: tick_0; Type: TABLE; Schema: millrace; Owner: -
--

CREATE TABLE millrace.tick_0 (
    slot smallint NOT NULL,
    queue text NOT NULL,
    tick_id bigint NOT NULL,
    prev_snap pg_snapshot NOT NULL,
    snap pg_snapshot NOT NULL,
    after_txid xid8,
    after_id bigint,
    upto_txid xid8 NOT NULL,
    upto_id bigint NOT NULL,
    more boolean NOT NULL,
    owner integer NOT NULL,
    req bigint NOT NULL,
    njobs integer NOT NULL,
    carried boolean DEFAULT false NOT NULL,
    at timestamp with time zone DEFAULT now() NOT NULL
)
WITH (autovacuum_enabled='false', toast.autovacuum_enabled='false');


--
-- Name: tick_1; Type: TABLE; Schema: millrace; Owner: -
--

CREATE TABLE millrace.tick_1 (
    slot smallint NOT NULL,
    queue text NOT NULL,
    tick_id bigint NOT NULL,
    prev_snap pg_snapshot NOT NULL,
    snap pg_snapshot NOT NULL,
    after_txid xid8,
    after_id bigint,
    upto_txid xid8 NOT NULL,
    upto_id bigint NOT NULL,
    more boolean NOT NULL,
    owner integer NOT NULL,
    req bigint NOT NULL,
    njobs integer NOT NULL,
    carried boolean DEFAULT false NOT NULL,
    at timestamp with time zone DEFAULT now() NOT NULL
)
WITH (autovacuum_enabled='false', toast.autovacuum_enabled='false');


--
-- Name: tick_2; Type: TABLE; Schema: millrace; Owner: -
--

CREATE TABLE millrace.tick_2 (
    slot smallint NOT NULL,
    queue text NOT NULL,
    tick_id bigint NOT NULL,
    prev_snap pg_snapshot NOT NULL,
    snap pg_snapshot NOT NULL,
    after_txid xid8,
    after_id bigint,
    upto_txid xid8 NOT NULL,
    upto_id bigint NOT NULL,
    more boolean NOT NULL,
    owner integer NOT NULL,
    req bigint NOT NULL,
    njobs integer NOT NULL,
    carried boolean DEFAULT false NOT NULL,
    at timestamp with time zone DEFAULT now() NOT NULL
)
WITH (autovacuum_enabled='false', toast.autovacuum_enabled='false');


--
-- Name: tick_3; Type: TABLE; Schema: millrace; Owner: -
--

CREATE TABLE millrace.tick_3 (
    slot smallint NOT NULL,
    queue text NOT NULL,
    tick_id bigint NOT NULL,
    prev_snap pg_snapshot NOT NULL,
    snap pg_snapshot NOT NULL,
    after_txid xid8,
    after_id bigint,
    upto_txid xid8 NOT NULL,
    upto_id bigint NOT NULL,
    more boolean NOT NULL,
    owner integer NOT NULL,
    req bigint NOT NULL,
    njobs integer NOT NULL,
    carried boolean DEFAULT false NOT NULL,
    at timestamp with time zone DEFAULT now() NOT NULL
)
WITH (autovacuum_enabled='false', toast.autovacuum_enabled='false');


--
-- Name: tick_id_seq; Type: SEQUENCE; Schema: millrace; Owner: -
--

CREATE SEQUENCE millrace.tick_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1;


--
-- Name: ack_0; Type: TABLE ATTACH; Schema: millrace; Owner: -
--

ALTER TABLE ONLY millrace.ack ATTACH PARTITION millrace.ack_0 FOR VALUES IN ('0');


--
-- Name: ack_1; Type: TABLE ATTACH; Schema: millrace; Owner: -
--

ALTER TABLE ONLY millrace.ack ATTACH PARTITION millrace.ack_1 FOR VALUES IN ('1');


--
-- Name: ack_2; Type: TABLE ATTACH; Schema: millrace; Owner: -
--

ALTER TABLE ONLY millrace.ack ATTACH PARTITION millrace.ack_2 FOR VALUES IN ('2');


--
-- Name: ack_3; Type: TABLE ATTACH; Schema: millrace; Owner: -
--

ALTER TABLE ONLY millrace.ack ATTACH PARTITION millrace.ack_3 FOR VALUES IN ('3');


--
-- Name: done_0; Type: TABLE ATTACH; Schema: millrace; Owner: -
--

ALTER TABLE ONLY millrace.done ATTACH PARTITION millrace.done_0 FOR VALUES IN ('0');


--
-- Name: done_1; Type: TABLE ATTACH; Schema: millrace; Owner: -
--

ALTER TABLE ONLY millrace.done ATTACH PARTITION millrace.done_1 FOR VALUES IN ('1');


--
-- Name: done_2; Type: TABLE ATTACH; Schema: millrace; Owner: -
--

ALTER TABLE ONLY millrace.done ATTACH PARTITION millrace.done_2 FOR VALUES IN ('2');


--
-- Name: done_3; Type: TABLE ATTACH; Schema: millrace; Owner: -
--

ALTER TABLE ONLY millrace.done ATTACH PARTITION millrace.done_3 FOR VALUES IN ('3');


--
-- Name: flush_0; Type: TABLE ATTACH; Schema: millrace; Owner: -
--

ALTER TABLE ONLY millrace.flush ATTACH PARTITION millrace.flush_0 FOR VALUES IN ('0');


--
-- Name: flush_1; Type: TABLE ATTACH; Schema: millrace; Owner: -
--

ALTER TABLE ONLY millrace.flush ATTACH PARTITION millrace.flush_1 FOR VALUES IN ('1');


--
-- Name: flush_2; Type: TABLE ATTACH; Schema: millrace; Owner: -
--

ALTER TABLE ONLY millrace.flush ATTACH PARTITION millrace.flush_2 FOR VALUES IN ('2');


--
-- Name: flush_3; Type: TABLE ATTACH; Schema: millrace; Owner: -
--

ALTER TABLE ONLY millrace.flush ATTACH PARTITION millrace.flush_3 FOR VALUES IN ('3');


--
-- Name: job_0; Type: TABLE ATTACH; Schema: millrace; Owner: -
--

ALTER TABLE ONLY millrace.job ATTACH PARTITION millrace.job_0 FOR VALUES IN ('0');


--
-- Name: job_1; Type: TABLE ATTACH; Schema: millrace; Owner: -
--

ALTER TABLE ONLY millrace.job ATTACH PARTITION millrace.job_1 FOR VALUES IN ('1');


--
-- Name: job_2; Type: TABLE ATTACH; Schema: millrace; Owner: -
--

ALTER TABLE ONLY millrace.job ATTACH PARTITION millrace.job_2 FOR VALUES IN ('2');


--
-- Name: job_3; Type: TABLE ATTACH; Schema: millrace; Owner: -
--

ALTER TABLE ONLY millrace.job ATTACH PARTITION millrace.job_3 FOR VALUES IN ('3');


--
-- Name: lease_0; Type: TABLE ATTACH; Schema: millrace; Owner: -
--

ALTER TABLE ONLY millrace.lease ATTACH PARTITION millrace.lease_0 FOR VALUES IN ('0');


--
-- Name: lease_1; Type: TABLE ATTACH; Schema: millrace; Owner: -
--

ALTER TABLE ONLY millrace.lease ATTACH PARTITION millrace.lease_1 FOR VALUES IN ('1');


--
-- Name: lease_2; Type: TABLE ATTACH; Schema: millrace; Owner: -
--

ALTER TABLE ONLY millrace.lease ATTACH PARTITION millrace.lease_2 FOR VALUES IN ('2');


--
-- Name: lease_3; Type: TABLE ATTACH; Schema: millrace; Owner: -
--

ALTER TABLE ONLY millrace.lease ATTACH PARTITION millrace.lease_3 FOR VALUES IN ('3');


--
-- Name: promote_0; Type: TABLE ATTACH; Schema: millrace; Owner: -
--

ALTER TABLE ONLY millrace.promote ATTACH PARTITION millrace.promote_0 FOR VALUES IN ('0');


--
-- Name: promote_1; Type: TABLE ATTACH; Schema: millrace; Owner: -
--

ALTER TABLE ONLY millrace.promote ATTACH PARTITION millrace.promote_1 FOR VALUES IN ('1');


--
-- Name: promote_2; Type: TABLE ATTACH; Schema: millrace; Owner: -
--

ALTER TABLE ONLY millrace.promote ATTACH PARTITION millrace.promote_2 FOR VALUES IN ('2');


--
-- Name: promote_3; Type: TABLE ATTACH; Schema: millrace; Owner: -
--

ALTER TABLE ONLY millrace.promote ATTACH PARTITION millrace.promote_3 FOR VALUES IN ('3');


--
-- Name: sched_0; Type: TABLE ATTACH; Schema: millrace; Owner: -
--

ALTER TABLE ONLY millrace.sched ATTACH PARTITION millrace.sched_0 FOR VALUES IN ('0');


--
-- Name: sched_1; Type: TABLE ATTACH; Schema: millrace; Owner: -
--

ALTER TABLE ONLY millrace.sched ATTACH PARTITION millrace.sched_1 FOR VALUES IN ('1');


--
-- Name: tick_0; Type: TABLE ATTACH; Schema: millrace; Owner: -
--

ALTER TABLE ONLY millrace.tick ATTACH PARTITION millrace.tick_0 FOR VALUES IN ('0');


--
-- Name: tick_1; Type: TABLE ATTACH; Schema: millrace; Owner: -
--

ALTER TABLE ONLY millrace.tick ATTACH PARTITION millrace.tick_1 FOR VALUES IN ('1');


--
-- Name: tick_2; Type: TABLE ATTACH; Schema: millrace; Owner: -
--

ALTER TABLE ONLY millrace.tick ATTACH PARTITION millrace.tick_2 FOR VALUES IN ('2');


--
-- Name: tick_3; Type: TABLE ATTACH; Schema: millrace; Owner: -
--

ALTER TABLE ONLY millrace.tick ATTACH PARTITION millrace.tick_3 FOR VALUES IN ('3');


--
-- Data for Name: ack_0; Type: TABLE DATA; Schema: millrace; Owner: -
--



--
-- Data for Name: ack_1; Type: TABLE DATA; Schema: millrace; Owner: -
--



--
-- Data for Name: ack_2; Type: TABLE DATA; Schema: millrace; Owner: -
--



--
-- Data for Name: ack_3; Type: TABLE DATA; Schema: millrace; Owner: -
--



--
-- Data for Name: discarded; Type: TABLE DATA; Schema: millrace; Owner: -
--



--
-- Data for Name: done_0; Type: TABLE DATA; Schema: millrace; Owner: -
--



--
-- Data for Name: done_1; Type: TABLE DATA; Schema: millrace; Owner: -
--



--
-- Data for Name: done_2; Type: TABLE DATA; Schema: millrace; Owner: -
--



--
-- Data for Name: done_3; Type: TABLE DATA; Schema: millrace; Owner: -
--



--
-- Data for Name: flush_0; Type: TABLE DATA; Schema: millrace; Owner: -
--



--
-- Data for Name: flush_1; Type: TABLE DATA; Schema: millrace; Owner: -
--



--
-- Data for Name: flush_2; Type: TABLE DATA; Schema: millrace; Owner: -
--



--
-- Data for Name: flush_3; Type: TABLE DATA; Schema: millrace; Owner: -
--



--
-- Data for Name: job_0; Type: TABLE DATA; Schema: millrace; Owner: -
--

INSERT INTO millrace.job_0 VALUES (0, 1, 'q', 'k', '{"n": 0}', 0, 0, 25, '2026-11-25 18:36:08.353652+00', '907');
INSERT INTO millrace.job_0 VALUES (0, 2, 'q', 'k', '{"n": 1}', 0, 0, 25, '2026-11-25 18:36:08.366915+00', '908');
INSERT INTO millrace.job_0 VALUES (0, 3, 'q', 'k', '{"n": 2}', 0, 0, 25, '2026-11-25 18:36:08.384204+00', '909');


--
-- Data for Name: job_1; Type: TABLE DATA; Schema: millrace; Owner: -
--



--
-- Data for Name: job_2; Type: TABLE DATA; Schema: millrace; Owner: -
--



--
-- Data for Name: job_3; Type: TABLE DATA; Schema: millrace; Owner: -
--



--
-- Data for Name: lease_0; Type: TABLE DATA; Schema: millrace; Owner: -
--



--
-- Data for Name: lease_1; Type: TABLE DATA; Schema: millrace; Owner: -
--



--
-- Data for Name: lease_2; Type: TABLE DATA; Schema: millrace; Owner: -
--



--
-- Data for Name: lease_3; Type: TABLE DATA; Schema: millrace; Owner: -
--



--
-- Data for Name: migration; Type: TABLE DATA; Schema: millrace; Owner: -
--

INSERT INTO millrace.migration VALUES (1, 'init', '2026-11-25 18:36:06.401999+00');
INSERT INTO millrace.migration VALUES (2, 'claim_snapshot_first', '2026-11-25 18:36:06.401999+00');
INSERT INTO millrace.migration VALUES (3, 'protocol_v3', '2026-11-25 18:36:06.401999+00');
INSERT INTO millrace.migration VALUES (4, 'roles', '2026-11-25 18:36:06.401999+00');


--
-- Data for Name: process; Type: TABLE DATA; Schema: millrace; Owner: -
--



--
-- Data for Name: promote_0; Type: TABLE DATA; Schema: millrace; Owner: -
--



--
-- Data for Name: promote_1; Type: TABLE DATA; Schema: millrace; Owner: -
--



--
-- Data for Name: promote_2; Type: TABLE DATA; Schema: millrace; Owner: -
--



--
-- Data for Name: promote_3; Type: TABLE DATA; Schema: millrace; Owner: -
--



--
-- Data for Name: reclaim; Type: TABLE DATA; Schema: millrace; Owner: -
--

INSERT INTO millrace.reclaim VALUES (3, 1, 0, 0, '2026-11-25 18:36:06.401999+00');
INSERT INTO millrace.reclaim VALUES (4, 2, 0, 0, '2026-11-25 18:36:06.401999+00');
INSERT INTO millrace.reclaim VALUES (5, 3, 0, 0, '2026-11-25 18:36:06.401999+00');


--
-- Data for Name: rotation; Type: TABLE DATA; Schema: millrace; Owner: -
--

INSERT INTO millrace.rotation VALUES (1, 0, '2026-11-25 18:36:06.401999+00', 0);
INSERT INTO millrace.rotation VALUES (2, 0, '2026-11-25 18:36:06.401999+00', 0);


--
-- Data for Name: sched_0; Type: TABLE DATA; Schema: millrace; Owner: -
--

INSERT INTO millrace.sched_0 VALUES (0, 4, 'q', 'k', '{}', 0, 0, 25, '2026-11-25 18:36:08.391318+00', '2036-11-25 18:36:08.391318+00', NULL, '910');


--
-- Data for Name: sched_1; Type: TABLE DATA; Schema: millrace; Owner: -
--



--
-- Data for Name: sched_gen; Type: TABLE DATA; Schema: millrace; Owner: -
--

INSERT INTO millrace.sched_gen VALUES (6, 0, 0, 0, '2026-11-25 18:36:06.401999+00');


--
-- Data for Name: tick_0; Type: TABLE DATA; Schema: millrace; Owner: -
--



--
-- Data for Name: tick_1; Type: TABLE DATA; Schema: millrace; Owner: -
--



--
-- Data for Name: tick_2; Type: TABLE DATA; Schema: millrace; Owner: -
--



--
-- Data for Name: tick_3; Type: TABLE DATA; Schema: millrace; Owner: -
--



--
-- Name: job_id_seq; Type: SEQUENCE SET; Schema: millrace; Owner: -
--

SELECT pg_catalog.setval('millrace.job_id_seq', 4, true);


--
-- Name: process_id_seq; Type: SEQUENCE SET; Schema: millrace; Owner: -
--

SELECT pg_catalog.setval('millrace.process_id_seq', 1, false);


--
-- Name: ring_seq; Type: SEQUENCE SET; Schema: millrace; Owner: -
--

SELECT pg_catalog.setval('millrace.ring_seq', 6, true);


--
-- Name: rotation_id_seq; Type: SEQUENCE SET; Schema: millrace; Owner: -
--

SELECT pg_catalog.setval('millrace.rotation_id_seq', 1, true);


--
-- Name: tick_id_seq; Type: SEQUENCE SET; Schema: millrace; Owner: -
--

SELECT pg_catalog.setval('millrace.tick_id_seq', 1, false);


--
-- Name: migration migration_pkey; Type: CONSTRAINT; Schema: millrace; Owner: -
--

ALTER TABLE ONLY millrace.migration
    ADD CONSTRAINT migration_pkey PRIMARY KEY (version);


--
-- Name: process process_pkey; Type: CONSTRAINT; Schema: millrace; Owner: -
--

ALTER TABLE ONLY millrace.process
    ADD CONSTRAINT process_pkey PRIMARY KEY (id);


--
-- Name: reclaim reclaim_pkey; Type: CONSTRAINT; Schema: millrace; Owner: -
--

ALTER TABLE ONLY millrace.reclaim
    ADD CONSTRAINT reclaim_pkey PRIMARY KEY (id);


--
-- Name: rotation rotation_pkey; Type: CONSTRAINT; Schema: millrace; Owner: -
--

ALTER TABLE ONLY millrace.rotation
    ADD CONSTRAINT rotation_pkey PRIMARY KEY (id);


--
-- Name: sched_gen sched_gen_pkey; Type: CONSTRAINT; Schema: millrace; Owner: -
--

ALTER TABLE ONLY millrace.sched_gen
    ADD CONSTRAINT sched_gen_pkey PRIMARY KEY (id);


--
-- Name: ack_tick; Type: INDEX; Schema: millrace; Owner: -
--

CREATE INDEX ack_tick ON ONLY millrace.ack USING btree (tick_id, job_id);


--
-- Name: ack_0_tick_id_job_id_idx; Type: INDEX; Schema: millrace; Owner: -
--

CREATE INDEX ack_0_tick_id_job_id_idx ON millrace.ack_0 USING btree (tick_id, job_id);


--
-- Name: ack_1_tick_id_job_id_idx; Type: INDEX; Schema: millrace; Owner: -
--

CREATE INDEX ack_1_tick_id_job_id_idx ON millrace.ack_1 USING btree (tick_id, job_id);


--
-- Name: ack_2_tick_id_job_id_idx; Type: INDEX; Schema: millrace; Owner: -
--

CREATE INDEX ack_2_tick_id_job_id_idx ON millrace.ack_2 USING btree (tick_id, job_id);


--
-- Name: ack_3_tick_id_job_id_idx; Type: INDEX; Schema: millrace; Owner: -
--

CREATE INDEX ack_3_tick_id_job_id_idx ON millrace.ack_3 USING btree (tick_id, job_id);


--
-- Name: discarded_at; Type: INDEX; Schema: millrace; Owner: -
--

CREATE INDEX discarded_at ON millrace.discarded USING btree (discarded_at);


--
-- Name: discarded_id; Type: INDEX; Schema: millrace; Owner: -
--

CREATE INDEX discarded_id ON millrace.discarded USING btree (id);


--
-- Name: done_tick; Type: INDEX; Schema: millrace; Owner: -
--

CREATE INDEX done_tick ON ONLY millrace.done USING btree (tick_id);


--
-- Name: done_0_tick_id_idx; Type: INDEX; Schema: millrace; Owner: -
--

CREATE INDEX done_0_tick_id_idx ON millrace.done_0 USING btree (tick_id);


--
-- Name: done_1_tick_id_idx; Type: INDEX; Schema: millrace; Owner: -
--

CREATE INDEX done_1_tick_id_idx ON millrace.done_1 USING btree (tick_id);


--
-- Name: done_2_tick_id_idx; Type: INDEX; Schema: millrace; Owner: -
--

CREATE INDEX done_2_tick_id_idx ON millrace.done_2 USING btree (tick_id);


--
-- Name: done_3_tick_id_idx; Type: INDEX; Schema: millrace; Owner: -
--

CREATE INDEX done_3_tick_id_idx ON millrace.done_3 USING btree (tick_id);


--
-- Name: flush_owner_seq; Type: INDEX; Schema: millrace; Owner: -
--

CREATE INDEX flush_owner_seq ON ONLY millrace.flush USING btree (owner, seq);


--
-- Name: flush_0_owner_seq_idx; Type: INDEX; Schema: millrace; Owner: -
--

CREATE INDEX flush_0_owner_seq_idx ON millrace.flush_0 USING btree (owner, seq);


--
-- Name: flush_1_owner_seq_idx; Type: INDEX; Schema: millrace; Owner: -
--

CREATE INDEX flush_1_owner_seq_idx ON millrace.flush_1 USING btree (owner, seq);


--
-- Name: flush_2_owner_seq_idx; Type: INDEX; Schema: millrace; Owner: -
--

CREATE INDEX flush_2_owner_seq_idx ON millrace.flush_2 USING btree (owner, seq);


--
-- Name: flush_3_owner_seq_idx; Type: INDEX; Schema: millrace; Owner: -
--

CREATE INDEX flush_3_owner_seq_idx ON millrace.flush_3 USING btree (owner, seq);


--
-- Name: job_queue_txid; Type: INDEX; Schema: millrace; Owner: -
--

CREATE INDEX job_queue_txid ON ONLY millrace.job USING btree (queue, txid, id);


--
-- Name: job_0_queue_txid_id_idx; Type: INDEX; Schema: millrace; Owner: -
--

CREATE INDEX job_0_queue_txid_id_idx ON millrace.job_0 USING btree (queue, txid, id);


--
-- Name: job_1_queue_txid_id_idx; Type: INDEX; Schema: millrace; Owner: -
--

CREATE INDEX job_1_queue_txid_id_idx ON millrace.job_1 USING btree (queue, txid, id);


--
-- Name: job_2_queue_txid_id_idx; Type: INDEX; Schema: millrace; Owner: -
--

CREATE INDEX job_2_queue_txid_id_idx ON millrace.job_2 USING btree (queue, txid, id);


--
-- Name: job_3_queue_txid_id_idx; Type: INDEX; Schema: millrace; Owner: -
--

CREATE INDEX job_3_queue_txid_id_idx ON millrace.job_3 USING btree (queue, txid, id);


--
-- Name: lease_owner_req; Type: INDEX; Schema: millrace; Owner: -
--

CREATE INDEX lease_owner_req ON ONLY millrace.lease USING btree (owner, req) WHERE (owner <> 0);


--
-- Name: lease_0_owner_req_idx; Type: INDEX; Schema: millrace; Owner: -
--

CREATE INDEX lease_0_owner_req_idx ON millrace.lease_0 USING btree (owner, req) WHERE (owner <> 0);


--
-- Name: lease_released; Type: INDEX; Schema: millrace; Owner: -
--

CREATE INDEX lease_released ON ONLY millrace.lease USING btree (queue, tick_id) WHERE (owner = 0);


--
-- Name: lease_0_queue_tick_id_idx; Type: INDEX; Schema: millrace; Owner: -
--

CREATE INDEX lease_0_queue_tick_id_idx ON millrace.lease_0 USING btree (queue, tick_id) WHERE (owner = 0);


--
-- Name: lease_tick; Type: INDEX; Schema: millrace; Owner: -
--

CREATE INDEX lease_tick ON ONLY millrace.lease USING btree (tick_id, token);


--
-- Name: lease_0_tick_id_token_idx; Type: INDEX; Schema: millrace; Owner: -
--

CREATE INDEX lease_0_tick_id_token_idx ON millrace.lease_0 USING btree (tick_id, token);


--
-- Name: lease_1_owner_req_idx; Type: INDEX; Schema: millrace; Owner: -
--

CREATE INDEX lease_1_owner_req_idx ON millrace.lease_1 USING btree (owner, req) WHERE (owner <> 0);


--
-- Name: lease_1_queue_tick_id_idx; Type: INDEX; Schema: millrace; Owner: -
--

CREATE INDEX lease_1_queue_tick_id_idx ON millrace.lease_1 USING btree (queue, tick_id) WHERE (owner = 0);


--
-- Name: lease_1_tick_id_token_idx; Type: INDEX; Schema: millrace; Owner: -
--

CREATE INDEX lease_1_tick_id_token_idx ON millrace.lease_1 USING btree (tick_id, token);


--
-- Name: lease_2_owner_req_idx; Type: INDEX; Schema: millrace; Owner: -
--

CREATE INDEX lease_2_owner_req_idx ON millrace.lease_2 USING btree (owner, req) WHERE (owner <> 0);


--
-- Name: lease_2_queue_tick_id_idx; Type: INDEX; Schema: millrace; Owner: -
--

CREATE INDEX lease_2_queue_tick_id_idx ON millrace.lease_2 USING btree (queue, tick_id) WHERE (owner = 0);


--
-- Name: lease_2_tick_id_token_idx; Type: INDEX; Schema: millrace; Owner: -
--

CREATE INDEX lease_2_tick_id_token_idx ON millrace.lease_2 USING btree (tick_id, token);


--
-- Name: lease_3_owner_req_idx; Type: INDEX; Schema: millrace; Owner: -
--

CREATE INDEX lease_3_owner_req_idx ON millrace.lease_3 USING btree (owner, req) WHERE (owner <> 0);


--
-- Name: lease_3_queue_tick_id_idx; Type: INDEX; Schema: millrace; Owner: -
--

CREATE INDEX lease_3_queue_tick_id_idx ON millrace.lease_3 USING btree (queue, tick_id) WHERE (owner = 0);


--
-- Name: lease_3_tick_id_token_idx; Type: INDEX; Schema: millrace; Owner: -
--

CREATE INDEX lease_3_tick_id_token_idx ON millrace.lease_3 USING btree (tick_id, token);


--
-- Name: promote_round; Type: INDEX; Schema: millrace; Owner: -
--

CREATE INDEX promote_round ON ONLY millrace.promote USING btree (round);


--
-- Name: promote_0_round_idx; Type: INDEX; Schema: millrace; Owner: -
--

CREATE INDEX promote_0_round_idx ON millrace.promote_0 USING btree (round);


--
-- Name: promote_1_round_idx; Type: INDEX; Schema: millrace; Owner: -
--

CREATE INDEX promote_1_round_idx ON millrace.promote_1 USING btree (round);


--
-- Name: promote_2_round_idx; Type: INDEX; Schema: millrace; Owner: -
--

CREATE INDEX promote_2_round_idx ON millrace.promote_2 USING btree (round);


--
-- Name: promote_3_round_idx; Type: INDEX; Schema: millrace; Owner: -
--

CREATE INDEX promote_3_round_idx ON millrace.promote_3 USING btree (round);


--
-- Name: sched_due; Type: INDEX; Schema: millrace; Owner: -
--

CREATE INDEX sched_due ON ONLY millrace.sched USING btree (due_at);


--
-- Name: sched_0_due_at_idx; Type: INDEX; Schema: millrace; Owner: -
--

CREATE INDEX sched_0_due_at_idx ON millrace.sched_0 USING btree (due_at);


--
-- Name: sched_txid; Type: INDEX; Schema: millrace; Owner: -
--

CREATE INDEX sched_txid ON ONLY millrace.sched USING btree (txid);


--
-- Name: sched_0_txid_idx; Type: INDEX; Schema: millrace; Owner: -
--

CREATE INDEX sched_0_txid_idx ON millrace.sched_0 USING btree (txid);


--
-- Name: sched_1_due_at_idx; Type: INDEX; Schema: millrace; Owner: -
--

CREATE INDEX sched_1_due_at_idx ON millrace.sched_1 USING btree (due_at);


--
-- Name: sched_1_txid_idx; Type: INDEX; Schema: millrace; Owner: -
--

CREATE INDEX sched_1_txid_idx ON millrace.sched_1 USING btree (txid);


--
-- Name: tick_owner_req; Type: INDEX; Schema: millrace; Owner: -
--

CREATE INDEX tick_owner_req ON ONLY millrace.tick USING btree (owner, req);


--
-- Name: tick_0_owner_req_idx; Type: INDEX; Schema: millrace; Owner: -
--

CREATE INDEX tick_0_owner_req_idx ON millrace.tick_0 USING btree (owner, req);


--
-- Name: tick_queue_tick; Type: INDEX; Schema: millrace; Owner: -
--

CREATE INDEX tick_queue_tick ON ONLY millrace.tick USING btree (queue, tick_id);


--
-- Name: tick_0_queue_tick_id_idx; Type: INDEX; Schema: millrace; Owner: -
--

CREATE INDEX tick_0_queue_tick_id_idx ON millrace.tick_0 USING btree (queue, tick_id);


--
-- Name: tick_tick; Type: INDEX; Schema: millrace; Owner: -
--

CREATE INDEX tick_tick ON ONLY millrace.tick USING btree (tick_id);


--
-- Name: tick_0_tick_id_idx; Type: INDEX; Schema: millrace; Owner: -
--

CREATE INDEX tick_0_tick_id_idx ON millrace.tick_0 USING btree (tick_id);


--
-- Name: tick_1_owner_req_idx; Type: INDEX; Schema: millrace; Owner: -
--

CREATE INDEX tick_1_owner_req_idx ON millrace.tick_1 USING btree (owner, req);


--
-- Name: tick_1_queue_tick_id_idx; Type: INDEX; Schema: millrace; Owner: -
--

CREATE INDEX tick_1_queue_tick_id_idx ON millrace.tick_1 USING btree (queue, tick_id);


--
-- Name: tick_1_tick_id_idx; Type: INDEX; Schema: millrace; Owner: -
--

CREATE INDEX tick_1_tick_id_idx ON millrace.tick_1 USING btree (tick_id);


--
-- Name: tick_2_owner_req_idx; Type: INDEX; Schema: millrace; Owner: -
--

CREATE INDEX tick_2_owner_req_idx ON millrace.tick_2 USING btree (owner, req);


--
-- Name: tick_2_queue_tick_id_idx; Type: INDEX; Schema: millrace; Owner: -
--

CREATE INDEX tick_2_queue_tick_id_idx ON millrace.tick_2 USING btree (queue, tick_id);


--
-- Name: tick_2_tick_id_idx; Type: INDEX; Schema: millrace; Owner: -
--

CREATE INDEX tick_2_tick_id_idx ON millrace.tick_2 USING btree (tick_id);


--
-- Name: tick_3_owner_req_idx; Type: INDEX; Schema: millrace; Owner: -
--

CREATE INDEX tick_3_owner_req_idx ON millrace.tick_3 USING btree (owner, req);


--
-- Name: tick_3_queue_tick_id_idx; Type: INDEX; Schema: millrace; Owner: -
--

CREATE INDEX tick_3_queue_tick_id_idx ON millrace.tick_3 USING btree (queue, tick_id);


--
-- Name: tick_3_tick_id_idx; Type: INDEX; Schema: millrace; Owner: -
--

CREATE INDEX tick_3_tick_id_idx ON millrace.tick_3 USING btree (tick_id);


--
-- Name: ack_0_tick_id_job_id_idx; Type: INDEX ATTACH; Schema: millrace; Owner: -
--

ALTER INDEX millrace.ack_tick ATTACH PARTITION millrace.ack_0_tick_id_job_id_idx;


--
-- Name: ack_1_tick_id_job_id_idx; Type: INDEX ATTACH; Schema: millrace; Owner: -
--

ALTER INDEX millrace.ack_tick ATTACH PARTITION millrace.ack_1_tick_id_job_id_idx;


--
-- Name: ack_2_tick_id_job_id_idx; Type: INDEX ATTACH; Schema: millrace; Owner: -
--

ALTER INDEX millrace.ack_tick ATTACH PARTITION millrace.ack_2_tick_id_job_id_idx;


--
-- Name: ack_3_tick_id_job_id_idx; Type: INDEX ATTACH; Schema: millrace; Owner: -
--

ALTER INDEX millrace.ack_tick ATTACH PARTITION millrace.ack_3_tick_id_job_id_idx;


--
-- Name: done_0_tick_id_idx; Type: INDEX ATTACH; Schema: millrace; Owner: -
--

ALTER INDEX millrace.done_tick ATTACH PARTITION millrace.done_0_tick_id_idx;


--
-- Name: done_1_tick_id_idx; Type: INDEX ATTACH; Schema: millrace; Owner: -
--

ALTER INDEX millrace.done_tick ATTACH PARTITION millrace.done_1_tick_id_idx;


--
-- Name: done_2_tick_id_idx; Type: INDEX ATTACH; Schema: millrace; Owner: -
--

ALTER INDEX millrace.done_tick ATTACH PARTITION millrace.done_2_tick_id_idx;


--
-- Name: done_3_tick_id_idx; Type: INDEX ATTACH; Schema: millrace; Owner: -
--

ALTER INDEX millrace.done_tick ATTACH PARTITION millrace.done_3_tick_id_idx;


--
-- Name: flush_0_owner_seq_idx; Type: INDEX ATTACH; Schema: millrace; Owner: -
--

ALTER INDEX millrace.flush_owner_seq ATTACH PARTITION millrace.flush_0_owner_seq_idx;


--
-- Name: flush_1_owner_seq_idx; Type: INDEX ATTACH; Schema: millrace; Owner: -
--

ALTER INDEX millrace.flush_owner_seq ATTACH PARTITION millrace.flush_1_owner_seq_idx;


--
-- Name: flush_2_owner_seq_idx; Type: INDEX ATTACH; Schema: millrace; Owner: -
--

ALTER INDEX millrace.flush_owner_seq ATTACH PARTITION millrace.flush_2_owner_seq_idx;


--
-- Name: flush_3_owner_seq_idx; Type: INDEX ATTACH; Schema: millrace; Owner: -
--

ALTER INDEX millrace.flush_owner_seq ATTACH PARTITION millrace.flush_3_owner_seq_idx;


--
-- Name: job_0_queue_txid_id_idx; Type: INDEX ATTACH; Schema: millrace; Owner: -
--

ALTER INDEX millrace.job_queue_txid ATTACH PARTITION millrace.job_0_queue_txid_id_idx;


--
-- Name: job_1_queue_txid_id_idx; Type: INDEX ATTACH; Schema: millrace; Owner: -
--

ALTER INDEX millrace.job_queue_txid ATTACH PARTITION millrace.job_1_queue_txid_id_idx;


--
-- Name: job_2_queue_txid_id_idx; Type: INDEX ATTACH; Schema: millrace; Owner: -
--

ALTER INDEX millrace.job_queue_txid ATTACH PARTITION millrace.job_2_queue_txid_id_idx;


--
-- Name: job_3_queue_txid_id_idx; Type: INDEX ATTACH; Schema: millrace; Owner: -
--

ALTER INDEX millrace.job_queue_txid ATTACH PARTITION millrace.job_3_queue_txid_id_idx;


--
-- Name: lease_0_owner_req_idx; Type: INDEX ATTACH; Schema: millrace; Owner: -
--

ALTER INDEX millrace.lease_owner_req ATTACH PARTITION millrace.lease_0_owner_req_idx;


--
-- Name: lease_0_queue_tick_id_idx; Type: INDEX ATTACH; Schema: millrace; Owner: -
--

ALTER INDEX millrace.lease_released ATTACH PARTITION millrace.lease_0_queue_tick_id_idx;


--
-- Name: lease_0_tick_id_token_idx; Type: INDEX ATTACH; Schema: millrace; Owner: -
--

ALTER INDEX millrace.lease_tick ATTACH PARTITION millrace.lease_0_tick_id_token_idx;


--
-- Name: lease_1_owner_req_idx; Type: INDEX ATTACH; Schema: millrace; Owner: -
--

ALTER INDEX millrace.lease_owner_req ATTACH PARTITION millrace.lease_1_owner_req_idx;


--
-- Name: lease_1_queue_tick_id_idx; Type: INDEX ATTACH; Schema: millrace; Owner: -
--

ALTER INDEX millrace.lease_released ATTACH PARTITION millrace.lease_1_queue_tick_id_idx;


--
-- Name: lease_1_tick_id_token_idx; Type: INDEX ATTACH; Schema: millrace; Owner: -
--

ALTER INDEX millrace.lease_tick ATTACH PARTITION millrace.lease_1_tick_id_token_idx;


--
-- Name: lease_2_owner_req_idx; Type: INDEX ATTACH; Schema: millrace; Owner: -
--

ALTER INDEX millrace.lease_owner_req ATTACH PARTITION millrace.lease_2_owner_req_idx;


--
-- Name: lease_2_queue_tick_id_idx; Type: INDEX ATTACH; Schema: millrace; Owner: -
--

ALTER INDEX millrace.lease_released ATTACH PARTITION millrace.lease_2_queue_tick_id_idx;


--
-- Name: lease_2_tick_id_token_idx; Type: INDEX ATTACH; Schema: millrace; Owner: -
--

ALTER INDEX millrace.lease_tick ATTACH PARTITION millrace.lease_2_tick_id_token_idx;


--
-- Name: lease_3_owner_req_idx; Type: INDEX ATTACH; Schema: millrace; Owner: -
--

ALTER INDEX millrace.lease_owner_req ATTACH PARTITION millrace.lease_3_owner_req_idx;


--
-- Name: lease_3_queue_tick_id_idx; Type: INDEX ATTACH; Schema: millrace; Owner: -
--

ALTER INDEX millrace.lease_released ATTACH PARTITION millrace.lease_3_queue_tick_id_idx;


--
-- Name: lease_3_tick_id_token_idx; Type: INDEX ATTACH; Schema: millrace; Owner: -
--

ALTER INDEX millrace.lease_tick ATTACH PARTITION millrace.lease_3_tick_id_token_idx;


--
-- Name: promote_0_round_idx; Type: INDEX ATTACH; Schema: millrace; Owner: -
--

ALTER INDEX millrace.promote_round ATTACH PARTITION millrace.promote_0_round_idx;


--
-- Name: promote_1_round_idx; Type: INDEX ATTACH; Schema: millrace; Owner: -
--

ALTER INDEX millrace.promote_round ATTACH PARTITION millrace.promote_1_round_idx;


--
-- Name: promote_2_round_idx; Type: INDEX ATTACH; Schema: millrace; Owner: -
--

ALTER INDEX millrace.promote_round ATTACH PARTITION millrace.promote_2_round_idx;


--
-- Name: promote_3_round_idx; Type: INDEX ATTACH; Schema: millrace; Owner: -
--

ALTER INDEX millrace.promote_round ATTACH PARTITION millrace.promote_3_round_idx;


--
-- Name: sched_0_due_at_idx; Type: INDEX ATTACH; Schema: millrace; Owner: -
--

ALTER INDEX millrace.sched_due ATTACH PARTITION millrace.sched_0_due_at_idx;


--
-- Name: sched_0_txid_idx; Type: INDEX ATTACH; Schema: millrace; Owner: -
--

ALTER INDEX millrace.sched_txid ATTACH PARTITION millrace.sched_0_txid_idx;


--
-- Name: sched_1_due_at_idx; Type: INDEX ATTACH; Schema: millrace; Owner: -
--

ALTER INDEX millrace.sched_due ATTACH PARTITION millrace.sched_1_due_at_idx;


--
-- Name: sched_1_txid_idx; Type: INDEX ATTACH; Schema: millrace; Owner: -
--

ALTER INDEX millrace.sched_txid ATTACH PARTITION millrace.sched_1_txid_idx;


--
-- Name: tick_0_owner_req_idx; Type: INDEX ATTACH; Schema: millrace; Owner: -
--

ALTER INDEX millrace.tick_owner_req ATTACH PARTITION millrace.tick_0_owner_req_idx;


--
-- Name: tick_0_queue_tick_id_idx; Type: INDEX ATTACH; Schema: millrace; Owner: -
--

ALTER INDEX millrace.tick_queue_tick ATTACH PARTITION millrace.tick_0_queue_tick_id_idx;


--
-- Name: tick_0_tick_id_idx; Type: INDEX ATTACH; Schema: millrace; Owner: -
--

ALTER INDEX millrace.tick_tick ATTACH PARTITION millrace.tick_0_tick_id_idx;


--
-- Name: tick_1_owner_req_idx; Type: INDEX ATTACH; Schema: millrace; Owner: -
--

ALTER INDEX millrace.tick_owner_req ATTACH PARTITION millrace.tick_1_owner_req_idx;


--
-- Name: tick_1_queue_tick_id_idx; Type: INDEX ATTACH; Schema: millrace; Owner: -
--

ALTER INDEX millrace.tick_queue_tick ATTACH PARTITION millrace.tick_1_queue_tick_id_idx;


--
-- Name: tick_1_tick_id_idx; Type: INDEX ATTACH; Schema: millrace; Owner: -
--

ALTER INDEX millrace.tick_tick ATTACH PARTITION millrace.tick_1_tick_id_idx;


--
-- Name: tick_2_owner_req_idx; Type: INDEX ATTACH; Schema: millrace; Owner: -
--

ALTER INDEX millrace.tick_owner_req ATTACH PARTITION millrace.tick_2_owner_req_idx;


--
-- Name: tick_2_queue_tick_id_idx; Type: INDEX ATTACH; Schema: millrace; Owner: -
--

ALTER INDEX millrace.tick_queue_tick ATTACH PARTITION millrace.tick_2_queue_tick_id_idx;


--
-- Name: tick_2_tick_id_idx; Type: INDEX ATTACH; Schema: millrace; Owner: -
--

ALTER INDEX millrace.tick_tick ATTACH PARTITION millrace.tick_2_tick_id_idx;


--
-- Name: tick_3_owner_req_idx; Type: INDEX ATTACH; Schema: millrace; Owner: -
--

ALTER INDEX millrace.tick_owner_req ATTACH PARTITION millrace.tick_3_owner_req_idx;


--
-- Name: tick_3_queue_tick_id_idx; Type: INDEX ATTACH; Schema: millrace; Owner: -
--

ALTER INDEX millrace.tick_queue_tick ATTACH PARTITION millrace.tick_3_queue_tick_id_idx;


--
-- Name: tick_3_tick_id_idx; Type: INDEX ATTACH; Schema: millrace; Owner: -
--

ALTER INDEX millrace.tick_tick ATTACH PARTITION millrace.tick_3_tick_id_idx;


--
-- Name: SCHEMA millrace; Type: ACL; Schema: -; Owner: -
--

GRANT USAGE ON SCHEMA millrace TO millrace_producer;
GRANT USAGE ON SCHEMA millrace TO millrace_worker;
GRANT USAGE ON SCHEMA millrace TO millrace_admin;


--
-- Name: TABLE job; Type: ACL; Schema: millrace; Owner: -
--

GRANT SELECT ON TABLE millrace.job TO millrace_admin;


--
-- Name: FUNCTION batch_jobs(p_tick bigint); Type: ACL; Schema: millrace; Owner: -
--

REVOKE ALL ON FUNCTION millrace.batch_jobs(p_tick bigint) FROM PUBLIC;


--
-- Name: FUNCTION check_job(p_kind text, p_args jsonb, p_queue text, p_priority integer, p_max_attempts integer); Type: ACL; Schema: millrace; Owner: -
--

REVOKE ALL ON FUNCTION millrace.check_job(p_kind text, p_args jsonb, p_queue text, p_priority integer, p_max_attempts integer) FROM PUBLIC;


--
-- Name: FUNCTION claim(p_queue text, p_owner integer, p_req bigint, p_retry boolean, p_max_jobs integer, p_max_bytes bigint); Type: ACL; Schema: millrace; Owner: -
--

REVOKE ALL ON FUNCTION millrace.claim(p_queue text, p_owner integer, p_req bigint, p_retry boolean, p_max_jobs integer, p_max_bytes bigint) FROM PUBLIC;
GRANT ALL ON FUNCTION millrace.claim(p_queue text, p_owner integer, p_req bigint, p_retry boolean, p_max_jobs integer, p_max_bytes bigint) TO millrace_worker;


--
-- Name: FUNCTION claim_space(); Type: ACL; Schema: millrace; Owner: -
--

REVOKE ALL ON FUNCTION millrace.claim_space() FROM PUBLIC;


--
-- Name: FUNCTION current_gen(); Type: ACL; Schema: millrace; Owner: -
--

REVOKE ALL ON FUNCTION millrace.current_gen() FROM PUBLIC;


--
-- Name: FUNCTION current_segment(); Type: ACL; Schema: millrace; Owner: -
--

REVOKE ALL ON FUNCTION millrace.current_segment() FROM PUBLIC;


--
-- Name: FUNCTION enqueue(p_kind text, p_args jsonb, p_queue text, p_priority integer, p_run_at timestamp with time zone, p_max_attempts integer, p_notify boolean); Type: ACL; Schema: millrace; Owner: -
--

REVOKE ALL ON FUNCTION millrace.enqueue(p_kind text, p_args jsonb, p_queue text, p_priority integer, p_run_at timestamp with time zone, p_max_attempts integer, p_notify boolean) FROM PUBLIC;
GRANT ALL ON FUNCTION millrace.enqueue(p_kind text, p_args jsonb, p_queue text, p_priority integer, p_run_at timestamp with time zone, p_max_attempts integer, p_notify boolean) TO millrace_producer;
GRANT ALL ON FUNCTION millrace.enqueue(p_kind text, p_args jsonb, p_queue text, p_priority integer, p_run_at timestamp with time zone, p_max_attempts integer, p_notify boolean) TO millrace_worker;


--
-- Name: FUNCTION enqueue_many(p_kind text[], p_args jsonb[], p_queue text[], p_priority integer[], p_run_at timestamp with time zone[], p_max_attempts integer[], p_notify boolean); Type: ACL; Schema: millrace; Owner: -
--

REVOKE ALL ON FUNCTION millrace.enqueue_many(p_kind text[], p_args jsonb[], p_queue text[], p_priority integer[], p_run_at timestamp with time zone[], p_max_attempts integer[], p_notify boolean) FROM PUBLIC;
GRANT ALL ON FUNCTION millrace.enqueue_many(p_kind text[], p_args jsonb[], p_queue text[], p_priority integer[], p_run_at timestamp with time zone[], p_max_attempts integer[], p_notify boolean) TO millrace_producer;
GRANT ALL ON FUNCTION millrace.enqueue_many(p_kind text[], p_args jsonb[], p_queue text[], p_priority integer[], p_run_at timestamp with time zone[], p_max_attempts integer[], p_notify boolean) TO millrace_worker;


--
-- Name: FUNCTION fence_space(); Type: ACL; Schema: millrace; Owner: -
--

REVOKE ALL ON FUNCTION millrace.fence_space() FROM PUBLIC;


--
-- Name: FUNCTION flush(p_owner integer, p_seq bigint, p_job bigint[], p_tick bigint[], p_token bigint[], p_state smallint[], p_attempt integer[], p_error text[], p_retry_at timestamp with time zone[], p_queue text[], p_kind text[], p_args jsonb[], p_priority smallint[], p_max_attempts integer[], p_created_at timestamp with time zone[], p_done_tick bigint[], p_done_token bigint[], p_done_queue text[], p_replay boolean); Type: ACL; Schema: millrace; Owner: -
--

REVOKE ALL ON FUNCTION millrace.flush(p_owner integer, p_seq bigint, p_job bigint[], p_tick bigint[], p_token bigint[], p_state smallint[], p_attempt integer[], p_error text[], p_retry_at timestamp with time zone[], p_queue text[], p_kind text[], p_args jsonb[], p_priority smallint[], p_max_attempts integer[], p_created_at timestamp with time zone[], p_done_tick bigint[], p_done_token bigint[], p_done_queue text[], p_replay boolean) FROM PUBLIC;
GRANT ALL ON FUNCTION millrace.flush(p_owner integer, p_seq bigint, p_job bigint[], p_tick bigint[], p_token bigint[], p_state smallint[], p_attempt integer[], p_error text[], p_retry_at timestamp with time zone[], p_queue text[], p_kind text[], p_args jsonb[], p_priority smallint[], p_max_attempts integer[], p_created_at timestamp with time zone[], p_done_tick bigint[], p_done_token bigint[], p_done_queue text[], p_replay boolean) TO millrace_worker;


--
-- Name: FUNCTION flush_space(); Type: ACL; Schema: millrace; Owner: -
--

REVOKE ALL ON FUNCTION millrace.flush_space() FROM PUBLIC;


--
-- Name: FUNCTION holder(p_tick bigint, OUT token bigint, OUT owner integer); Type: ACL; Schema: millrace; Owner: -
--

REVOKE ALL ON FUNCTION millrace.holder(p_tick bigint, OUT token bigint, OUT owner integer) FROM PUBLIC;


--
-- Name: FUNCTION live_jobs(); Type: ACL; Schema: millrace; Owner: -
--

REVOKE ALL ON FUNCTION millrace.live_jobs() FROM PUBLIC;
GRANT ALL ON FUNCTION millrace.live_jobs() TO millrace_worker;


--
-- Name: FUNCTION lock_space(); Type: ACL; Schema: millrace; Owner: -
--

REVOKE ALL ON FUNCTION millrace.lock_space() FROM PUBLIC;


--
-- Name: FUNCTION maint_space(); Type: ACL; Schema: millrace; Owner: -
--

REVOKE ALL ON FUNCTION millrace.maint_space() FROM PUBLIC;


--
-- Name: FUNCTION open_batches(); Type: ACL; Schema: millrace; Owner: -
--

REVOKE ALL ON FUNCTION millrace.open_batches() FROM PUBLIC;


--
-- Name: FUNCTION process_alive(p integer); Type: ACL; Schema: millrace; Owner: -
--

REVOKE ALL ON FUNCTION millrace.process_alive(p integer) FROM PUBLIC;


--
-- Name: FUNCTION promote(p_compact_min bigint); Type: ACL; Schema: millrace; Owner: -
--

REVOKE ALL ON FUNCTION millrace.promote(p_compact_min bigint) FROM PUBLIC;
GRANT ALL ON FUNCTION millrace.promote(p_compact_min bigint) TO millrace_worker;


--
-- Name: FUNCTION queue_counts(); Type: ACL; Schema: millrace; Owner: -
--

REVOKE ALL ON FUNCTION millrace.queue_counts() FROM PUBLIC;
GRANT ALL ON FUNCTION millrace.queue_counts() TO millrace_worker;


--
-- Name: FUNCTION range_jobs(p_queue text, p_prev pg_snapshot, p_snap pg_snapshot, p_after_txid xid8, p_after_id bigint, p_upto_txid xid8, p_upto_id bigint, p_max_jobs integer, p_max_bytes bigint); Type: ACL; Schema: millrace; Owner: -
--

REVOKE ALL ON FUNCTION millrace.range_jobs(p_queue text, p_prev pg_snapshot, p_snap pg_snapshot, p_after_txid xid8, p_after_id bigint, p_upto_txid xid8, p_upto_id bigint, p_max_jobs integer, p_max_bytes bigint) FROM PUBLIC;


--
-- Name: FUNCTION reclaim_slot(p_slot smallint, p_into smallint); Type: ACL; Schema: millrace; Owner: -
--

REVOKE ALL ON FUNCTION millrace.reclaim_slot(p_slot smallint, p_into smallint) FROM PUBLIC;


--
-- Name: FUNCTION register(p_name text, p_host text, p_pid integer); Type: ACL; Schema: millrace; Owner: -
--

REVOKE ALL ON FUNCTION millrace.register(p_name text, p_host text, p_pid integer) FROM PUBLIC;
GRANT ALL ON FUNCTION millrace.register(p_name text, p_host text, p_pid integer) TO millrace_worker;


--
-- Name: FUNCTION release(p_owner integer); Type: ACL; Schema: millrace; Owner: -
--

REVOKE ALL ON FUNCTION millrace.release(p_owner integer) FROM PUBLIC;
GRANT ALL ON FUNCTION millrace.release(p_owner integer) TO millrace_worker;


--
-- Name: FUNCTION rescue(p_stuck interval); Type: ACL; Schema: millrace; Owner: -
--

REVOKE ALL ON FUNCTION millrace.rescue(p_stuck interval) FROM PUBLIC;
GRANT ALL ON FUNCTION millrace.rescue(p_stuck interval) TO millrace_worker;


--
-- Name: FUNCTION ring_stats(OUT current_slot smallint, OUT since timestamp with time zone, OUT rotations bigint, OUT reclaims bigint, OUT last_reclaim timestamp with time zone); Type: ACL; Schema: millrace; Owner: -
--

REVOKE ALL ON FUNCTION millrace.ring_stats(OUT current_slot smallint, OUT since timestamp with time zone, OUT rotations bigint, OUT reclaims bigint, OUT last_reclaim timestamp with time zone) FROM PUBLIC;
GRANT ALL ON FUNCTION millrace.ring_stats(OUT current_slot smallint, OUT since timestamp with time zone, OUT rotations bigint, OUT reclaims bigint, OUT last_reclaim timestamp with time zone) TO millrace_worker;


--
-- Name: FUNCTION rotate(p_after interval, p_max_carry bigint); Type: ACL; Schema: millrace; Owner: -
--

REVOKE ALL ON FUNCTION millrace.rotate(p_after interval, p_max_carry bigint) FROM PUBLIC;
GRANT ALL ON FUNCTION millrace.rotate(p_after interval, p_max_carry bigint) TO millrace_worker;


--
-- Name: FUNCTION schema_version(); Type: ACL; Schema: millrace; Owner: -
--

REVOKE ALL ON FUNCTION millrace.schema_version() FROM PUBLIC;
GRANT ALL ON FUNCTION millrace.schema_version() TO millrace_producer;
GRANT ALL ON FUNCTION millrace.schema_version() TO millrace_worker;


--
-- Name: FUNCTION slot_is_clean(p_slot integer); Type: ACL; Schema: millrace; Owner: -
--

REVOKE ALL ON FUNCTION millrace.slot_is_clean(p_slot integer) FROM PUBLIC;


--
-- Name: FUNCTION slot_tables(p_slot integer); Type: ACL; Schema: millrace; Owner: -
--

REVOKE ALL ON FUNCTION millrace.slot_tables(p_slot integer) FROM PUBLIC;


--
-- Name: FUNCTION slots(); Type: ACL; Schema: millrace; Owner: -
--

REVOKE ALL ON FUNCTION millrace.slots() FROM PUBLIC;


--
-- Name: FUNCTION txn_slot(); Type: ACL; Schema: millrace; Owner: -
--

REVOKE ALL ON FUNCTION millrace.txn_slot() FROM PUBLIC;


--
-- Name: FUNCTION unclaimed(p_slot smallint); Type: ACL; Schema: millrace; Owner: -
--

REVOKE ALL ON FUNCTION millrace.unclaimed(p_slot smallint) FROM PUBLIC;


--
-- Name: TABLE ack; Type: ACL; Schema: millrace; Owner: -
--

GRANT SELECT ON TABLE millrace.ack TO millrace_admin;


--
-- Name: TABLE ack_0; Type: ACL; Schema: millrace; Owner: -
--

GRANT SELECT ON TABLE millrace.ack_0 TO millrace_admin;


--
-- Name: TABLE ack_1; Type: ACL; Schema: millrace; Owner: -
--

GRANT SELECT ON TABLE millrace.ack_1 TO millrace_admin;


--
-- Name: TABLE ack_2; Type: ACL; Schema: millrace; Owner: -
--

GRANT SELECT ON TABLE millrace.ack_2 TO millrace_admin;


--
-- Name: TABLE ack_3; Type: ACL; Schema: millrace; Owner: -
--

GRANT SELECT ON TABLE millrace.ack_3 TO millrace_admin;


--
-- Name: TABLE discarded; Type: ACL; Schema: millrace; Owner: -
--

GRANT SELECT,DELETE ON TABLE millrace.discarded TO millrace_admin;


--
-- Name: TABLE done; Type: ACL; Schema: millrace; Owner: -
--

GRANT SELECT ON TABLE millrace.done TO millrace_admin;


--
-- Name: TABLE done_0; Type: ACL; Schema: millrace; Owner: -
--

GRANT SELECT ON TABLE millrace.done_0 TO millrace_admin;


--
-- Name: TABLE done_1; Type: ACL; Schema: millrace; Owner: -
--

GRANT SELECT ON TABLE millrace.done_1 TO millrace_admin;


--
-- Name: TABLE done_2; Type: ACL; Schema: millrace; Owner: -
--

GRANT SELECT ON TABLE millrace.done_2 TO millrace_admin;


--
-- Name: TABLE done_3; Type: ACL; Schema: millrace; Owner: -
--

GRANT SELECT ON TABLE millrace.done_3 TO millrace_admin;


--
-- Name: TABLE flush; Type: ACL; Schema: millrace; Owner: -
--

GRANT SELECT ON TABLE millrace.flush TO millrace_admin;


--
-- Name: TABLE flush_0; Type: ACL; Schema: millrace; Owner: -
--

GRANT SELECT ON TABLE millrace.flush_0 TO millrace_admin;


--
-- Name: TABLE flush_1; Type: ACL; Schema: millrace; Owner: -
--

GRANT SELECT ON TABLE millrace.flush_1 TO millrace_admin;


--
-- Name: TABLE flush_2; Type: ACL; Schema: millrace; Owner: -
--

GRANT SELECT ON TABLE millrace.flush_2 TO millrace_admin;


--
-- Name: TABLE flush_3; Type: ACL; Schema: millrace; Owner: -
--

GRANT SELECT ON TABLE millrace.flush_3 TO millrace_admin;


--
-- Name: TABLE job_0; Type: ACL; Schema: millrace; Owner: -
--

GRANT SELECT ON TABLE millrace.job_0 TO millrace_admin;


--
-- Name: TABLE job_1; Type: ACL; Schema: millrace; Owner: -
--

GRANT SELECT ON TABLE millrace.job_1 TO millrace_admin;


--
-- Name: TABLE job_2; Type: ACL; Schema: millrace; Owner: -
--

GRANT SELECT ON TABLE millrace.job_2 TO millrace_admin;


--
-- Name: TABLE job_3; Type: ACL; Schema: millrace; Owner: -
--

GRANT SELECT ON TABLE millrace.job_3 TO millrace_admin;


--
-- Name: TABLE jobs; Type: ACL; Schema: millrace; Owner: -
--

GRANT SELECT ON TABLE millrace.jobs TO millrace_worker;
GRANT SELECT ON TABLE millrace.jobs TO millrace_admin;


--
-- Name: TABLE lease; Type: ACL; Schema: millrace; Owner: -
--

GRANT SELECT ON TABLE millrace.lease TO millrace_admin;


--
-- Name: TABLE lease_0; Type: ACL; Schema: millrace; Owner: -
--

GRANT SELECT ON TABLE millrace.lease_0 TO millrace_admin;


--
-- Name: TABLE lease_1; Type: ACL; Schema: millrace; Owner: -
--

GRANT SELECT ON TABLE millrace.lease_1 TO millrace_admin;


--
-- Name: TABLE lease_2; Type: ACL; Schema: millrace; Owner: -
--

GRANT SELECT ON TABLE millrace.lease_2 TO millrace_admin;


--
-- Name: TABLE lease_3; Type: ACL; Schema: millrace; Owner: -
--

GRANT SELECT ON TABLE millrace.lease_3 TO millrace_admin;


--
-- Name: TABLE migration; Type: ACL; Schema: millrace; Owner: -
--

GRANT SELECT ON TABLE millrace.migration TO millrace_producer;
GRANT SELECT ON TABLE millrace.migration TO millrace_worker;
GRANT SELECT ON TABLE millrace.migration TO millrace_admin;


--
-- Name: TABLE process; Type: ACL; Schema: millrace; Owner: -
--

GRANT SELECT ON TABLE millrace.process TO millrace_admin;


--
-- Name: TABLE promote; Type: ACL; Schema: millrace; Owner: -
--

GRANT SELECT ON TABLE millrace.promote TO millrace_admin;


--
-- Name: TABLE promote_0; Type: ACL; Schema: millrace; Owner: -
--

GRANT SELECT ON TABLE millrace.promote_0 TO millrace_admin;


--
-- Name: TABLE promote_1; Type: ACL; Schema: millrace; Owner: -
--

GRANT SELECT ON TABLE millrace.promote_1 TO millrace_admin;


--
-- Name: TABLE promote_2; Type: ACL; Schema: millrace; Owner: -
--

GRANT SELECT ON TABLE millrace.promote_2 TO millrace_admin;


--
-- Name: TABLE promote_3; Type: ACL; Schema: millrace; Owner: -
--

GRANT SELECT ON TABLE millrace.promote_3 TO millrace_admin;


--
-- Name: TABLE reclaim; Type: ACL; Schema: millrace; Owner: -
--

GRANT SELECT ON TABLE millrace.reclaim TO millrace_admin;


--
-- Name: TABLE rotation; Type: ACL; Schema: millrace; Owner: -
--

GRANT SELECT ON TABLE millrace.rotation TO millrace_admin;


--
-- Name: TABLE sched; Type: ACL; Schema: millrace; Owner: -
--

GRANT SELECT ON TABLE millrace.sched TO millrace_admin;


--
-- Name: TABLE sched_0; Type: ACL; Schema: millrace; Owner: -
--

GRANT SELECT ON TABLE millrace.sched_0 TO millrace_admin;


--
-- Name: TABLE sched_1; Type: ACL; Schema: millrace; Owner: -
--

GRANT SELECT ON TABLE millrace.sched_1 TO millrace_admin;


--
-- Name: TABLE sched_gen; Type: ACL; Schema: millrace; Owner: -
--

GRANT SELECT ON TABLE millrace.sched_gen TO millrace_admin;


--
-- Name: TABLE tick; Type: ACL; Schema: millrace; Owner: -
--

GRANT SELECT ON TABLE millrace.tick TO millrace_admin;


--
-- Name: TABLE tick_0; Type: ACL; Schema: millrace; Owner: -
--

GRANT SELECT ON TABLE millrace.tick_0 TO millrace_admin;


--
-- Name: TABLE tick_1; Type: ACL; Schema: millrace; Owner: -
--

GRANT SELECT ON TABLE millrace.tick_1 TO millrace_admin;


--
-- Name: TABLE tick_2; Type: ACL; Schema: millrace; Owner: -
--

GRANT SELECT ON TABLE millrace.tick_2 TO millrace_admin;


--
-- Name: TABLE tick_3; Type: ACL; Schema: millrace; Owner: -
--

GRANT SELECT ON TABLE millrace.tick_3 TO millrace_admin;


--
-- PostgreSQL database dump complete
--


