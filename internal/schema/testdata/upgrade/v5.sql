-- millrace schema version 5, populated and dumped by TestUpgradeFromEachVersion -update-dumps.
-- Frozen: version 5's migrations never change, so neither does this file.
-- expect 1 completed
-- expect 2 discarded
-- expect 3 scheduled
-- expect 4 running
-- expect 5 available
-- expect 6 scheduled
-- expect 7 available
-- expect 8 cancelled
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
    txid xid8 DEFAULT pg_current_xact_id() NOT NULL,
    ready_at timestamp with time zone DEFAULT now() NOT NULL,
    timeout_ms integer DEFAULT 0 NOT NULL
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
    CROSS JOIN LATERAL millrace.range_jobs(t.queue, t.priority, t.prev_snap, t.snap, t.after_txid, t.after_id,
                                           t.upto_txid, t.upto_id, 2147483647, 9223372036854775807) r
    WHERE NOT EXISTS (SELECT 1 FROM millrace.ack a WHERE a.tick_id = p_tick AND a.job_id = r.id)
$$;


--
-- Name: cancel(bigint); Type: FUNCTION; Schema: millrace; Owner: -
--

CREATE FUNCTION millrace.cancel(p_id bigint) RETURNS text
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    SET jit TO 'off'
    AS $$
DECLARE
    v_state text := millrace.job_state(p_id);
    v_j record;
BEGIN
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
    SELECT * INTO v_j FROM millrace.live_job(p_id);
    INSERT INTO millrace.finished (bucket, id, attempt, state, queue, kind, args, priority, max_attempts, created_at,
                                  started_at, finished_at, error, owner)
    VALUES (millrace.history_bucket(4::smallint, clock_timestamp()), p_id, v_j.attempt, 4, v_j.queue, v_j.kind, v_j.args,
            v_j.priority, v_j.max_attempts, v_j.created_at, NULL, clock_timestamp(), 'cancelled before it ran', 0);
    RETURN 'cancelled';
END $$;


--
-- Name: cancelled(bigint[]); Type: FUNCTION; Schema: millrace; Owner: -
--

CREATE FUNCTION millrace.cancelled(p_ids bigint[]) RETURNS SETOF bigint
    LANGUAGE sql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    SET jit TO 'off'
    AS $$
    SELECT DISTINCT c.job_id FROM millrace.cancel c WHERE c.job_id = ANY (p_ids)
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
-- Name: claim(text, integer, bigint, boolean, integer, bigint, interval); Type: FUNCTION; Schema: millrace; Owner: -
--

CREATE FUNCTION millrace.claim(p_queue text, p_owner integer, p_req bigint, p_retry boolean DEFAULT false, p_max_jobs integer DEFAULT 1000, p_max_bytes bigint DEFAULT 8388608, p_starve interval DEFAULT '00:00:05'::interval) RETURNS TABLE(tick_id bigint, token bigint, id bigint, kind text, args jsonb, priority smallint, attempt integer, max_attempts integer, created_at timestamp with time zone, ready_at timestamp with time zone, timeout_ms integer, cancelled boolean)
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    SET jit TO 'off'
    AS $$
#variable_conflict use_column
DECLARE
    v_tick  bigint;
    v_token bigint;
    v_h     record;
    v_found boolean := false;
    v_snap  pg_snapshot;
    v_r     millrace.job;
    v_left  int := p_max_jobs;
    v_bytes bigint := p_max_bytes;
    v_lanes smallint[];
    v_lane  smallint;
    v_n     int;
BEGIN
    IF p_max_jobs IS NULL OR p_max_jobs < 1 OR p_max_bytes IS NULL OR p_max_bytes < 1 THEN
        RAISE EXCEPTION 'millrace: claim limits must be positive' USING ERRCODE = '22023';
    END IF;
    PERFORM pg_advisory_xact_lock(millrace.claim_space(), hashtext(p_queue));
    -- The snapshot of new jobs is taken before the pause is checked: a job
    -- committed after a pause is never claimed until the queue resumes.
    v_snap := pg_current_snapshot();

    IF p_retry THEN
        -- The batches an earlier call with this request id took: new ticks,
        -- or an adopted one (a lease with this owner and request id).
        FOR v_tick, v_token IN
            SELECT t.tick_id, t.tick_id FROM millrace.tick t
            WHERE t.owner = p_owner AND t.req = p_req AND t.queue = p_queue AND NOT t.carried
            UNION ALL
            SELECT l.tick_id, l.token FROM millrace.lease l
            WHERE l.owner = p_owner AND l.req = p_req AND l.queue = p_queue AND l.owner <> 0
        LOOP
            SELECT h.token, h.owner INTO v_h FROM millrace.holder(v_tick) h;
            CONTINUE WHEN v_h.token <> v_token OR v_h.owner <> p_owner
                OR EXISTS (SELECT 1 FROM millrace.done d WHERE d.tick_id = v_tick);
            v_found := true;
            RETURN QUERY SELECT v_tick, v_token, b.id, b.kind, b.args, b.priority, b.attempt, b.max_attempts, b.created_at,
                                b.ready_at, b.timeout_ms, EXISTS (SELECT 1 FROM millrace.cancel c WHERE c.job_id = b.id)
                         FROM millrace.batch_jobs(v_tick) b;
        END LOOP;
        IF v_found THEN
            RETURN;
        END IF;
    END IF;

    IF millrace.queue_paused(p_queue) THEN
        RETURN;
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
        RETURN QUERY SELECT v_tick, v_token, b.id, b.kind, b.args, b.priority, b.attempt, b.max_attempts, b.created_at,
                            b.ready_at, b.timeout_ms, EXISTS (SELECT 1 FROM millrace.cancel c WHERE c.job_id = b.id)
                     FROM millrace.batch_jobs(v_tick) b;
        IF FOUND THEN
            RETURN;
        END IF;
        INSERT INTO millrace.done (slot, queue, tick_id) VALUES (millrace.current_segment(), p_queue, v_tick);
    END LOOP;

    -- The queue's lanes: its distinct priorities (a skip scan of job_lane).
    WITH RECURSIVE l AS (
        (SELECT j.priority FROM millrace.job j WHERE j.queue = p_queue ORDER BY j.priority LIMIT 1)
        UNION ALL
        SELECT (SELECT j.priority FROM millrace.job j WHERE j.queue = p_queue AND j.priority > l.priority
                ORDER BY j.priority LIMIT 1)
        FROM l WHERE l.priority IS NOT NULL)
    SELECT coalesce(array_agg(l.priority ORDER BY l.priority), '{}') INTO v_lanes FROM l WHERE l.priority IS NOT NULL;
    IF cardinality(v_lanes) > 1 THEN
        -- A lane is starving when it has a job waiting and has not been
        -- served for p_starve (or its first job has waited that long and
        -- it was never served): starving lanes first, the longest unserved
        -- first; then by priority. A starving lane is served one batch,
        -- which makes it not starving for another p_starve.
        SELECT array_agg(x.p ORDER BY x.starving DESC, CASE WHEN x.starving THEN x.since END, x.p) INTO v_lanes
        FROM (SELECT p, greatest(f.ready_at, l.at) AS since,
                     coalesce(greatest(f.ready_at, l.at) < clock_timestamp() - p_starve, false) AS starving
              FROM unnest(v_lanes) p
              LEFT JOIN LATERAL (SELECT k.ready_at FROM millrace.lane_take(p_queue, p, v_snap, 0, p_owner, p_req, 1,
                                                                           9223372036854775807, true) k LIMIT 1) f ON true
              LEFT JOIN LATERAL (SELECT t.at FROM millrace.tick t WHERE t.queue = p_queue AND t.priority = p
                                 ORDER BY t.tick_id DESC LIMIT 1) l ON true) x;
    END IF;
    FOREACH v_lane IN ARRAY v_lanes LOOP
        EXIT WHEN v_left <= 0 OR v_bytes <= 0;
        v_tick := nextval('millrace.tick_id_seq');
        v_n := 0;
        FOR v_r IN SELECT * FROM millrace.lane_take(p_queue, v_lane, v_snap, v_tick, p_owner, p_req, v_left, v_bytes, false) LOOP
            v_n := v_n + 1;
            v_bytes := v_bytes - pg_column_size(v_r.args);
            tick_id := v_tick; token := v_tick; id := v_r.id; kind := v_r.kind; args := v_r.args;
            priority := v_r.priority; attempt := v_r.attempt; max_attempts := v_r.max_attempts;
            created_at := v_r.created_at; ready_at := v_r.ready_at; timeout_ms := v_r.timeout_ms;
            cancelled := EXISTS (SELECT 1 FROM millrace.cancel c WHERE c.job_id = v_r.id);
            RETURN NEXT;
        END LOOP;
        v_left := v_left - v_n;
    END LOOP;
END $$;


--
-- Name: claim_space(); Type: FUNCTION; Schema: millrace; Owner: -
--

CREATE FUNCTION millrace.claim_space() RETURNS integer
    LANGUAGE sql IMMUTABLE
    AS $$ SELECT 1836412276 $$;


--
-- Name: complete(bigint, bigint, bigint, integer, text, text, jsonb, smallint, integer, timestamp with time zone, timestamp with time zone, integer); Type: FUNCTION; Schema: millrace; Owner: -
--

CREATE FUNCTION millrace.complete(p_job bigint, p_tick bigint, p_token bigint, p_attempt integer, p_queue text, p_kind text, p_args jsonb, p_priority smallint, p_max_attempts integer, p_created_at timestamp with time zone, p_started timestamp with time zone, p_owner integer) RETURNS void
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    SET jit TO 'off'
    AS $$
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
    VALUES (millrace.history_bucket(1::smallint, now()), p_job, p_attempt, 1, p_queue, p_kind, p_args, p_priority,
            p_max_attempts, p_created_at, p_started, clock_timestamp(), p_owner);
END $$;


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
-- Name: enqueue(text, jsonb, text, integer, timestamp with time zone, integer, boolean, text, integer, timestamp with time zone, integer); Type: FUNCTION; Schema: millrace; Owner: -
--

CREATE FUNCTION millrace.enqueue(p_kind text, p_args jsonb DEFAULT '{}'::jsonb, p_queue text DEFAULT 'default'::text, p_priority integer DEFAULT 0, p_run_at timestamp with time zone DEFAULT NULL::timestamp with time zone, p_max_attempts integer DEFAULT 25, p_notify boolean DEFAULT true, p_unique_key text DEFAULT NULL::text, p_unique_states integer DEFAULT 0, p_unique_until timestamp with time zone DEFAULT NULL::timestamp with time zone, p_timeout_ms integer DEFAULT 0) RETURNS bigint
    LANGUAGE sql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    SET jit TO 'off'
    AS $$
    SELECT i.id FROM millrace.insert_many(ARRAY[p_kind], ARRAY[p_args], ARRAY[p_queue], ARRAY[p_priority], ARRAY[p_run_at],
                                          ARRAY[p_max_attempts], ARRAY[p_unique_key], ARRAY[p_unique_states],
                                          ARRAY[p_unique_until], ARRAY[p_timeout_ms], p_notify) i
$$;


--
-- Name: enqueue_many(text[], jsonb[], text[], integer[], timestamp with time zone[], integer[], boolean, text[], integer[], timestamp with time zone[], integer[]); Type: FUNCTION; Schema: millrace; Owner: -
--

CREATE FUNCTION millrace.enqueue_many(p_kind text[], p_args jsonb[], p_queue text[], p_priority integer[], p_run_at timestamp with time zone[], p_max_attempts integer[], p_notify boolean DEFAULT true, p_unique_key text[] DEFAULT NULL::text[], p_unique_states integer[] DEFAULT NULL::integer[], p_unique_until timestamp with time zone[] DEFAULT NULL::timestamp with time zone[], p_timeout_ms integer[] DEFAULT NULL::integer[]) RETURNS SETOF bigint
    LANGUAGE sql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    SET jit TO 'off'
    AS $$
    SELECT i.id FROM millrace.insert_many(p_kind, p_args, p_queue, p_priority, p_run_at, p_max_attempts,
                                          p_unique_key, p_unique_states, p_unique_until, p_timeout_ms, p_notify) i
$$;


--
-- Name: expire_history(interval, interval); Type: FUNCTION; Schema: millrace; Owner: -
--

CREATE FUNCTION millrace.expire_history(p_completed interval, p_other interval) RETURNS integer
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    SET jit TO 'off'
    SET lock_timeout TO '50ms'
    AS $$
DECLARE
    v_max timestamptz;
    v_n int := 0;
BEGIN
    FOR b IN 0 .. 67 LOOP
        EXECUTE format('SELECT max(finished_at) FROM millrace.%I', 'finished_' || b) INTO v_max;
        CONTINUE WHEN v_max IS NULL OR v_max >= now() - CASE WHEN b < 36 THEN p_completed ELSE p_other END;
        BEGIN
            EXECUTE format('LOCK TABLE millrace.%I IN ACCESS EXCLUSIVE MODE NOWAIT', 'finished_' || b);
            EXECUTE format('TRUNCATE millrace.%I', 'finished_' || b);
            v_n := v_n + 1;
        EXCEPTION WHEN lock_not_available THEN
            NULL;
        END;
    END LOOP;
    DELETE FROM millrace.periodic p WHERE p.at < now() - interval '7 days';
    RETURN v_n;
END $$;


--
-- Name: fence_space(); Type: FUNCTION; Schema: millrace; Owner: -
--

CREATE FUNCTION millrace.fence_space() RETURNS integer
    LANGUAGE sql IMMUTABLE
    AS $$ SELECT 1836412275 $$;


--
-- Name: final_state(bigint); Type: FUNCTION; Schema: millrace; Owner: -
--

CREATE FUNCTION millrace.final_state(p_id bigint) RETURNS smallint
    LANGUAGE sql
    SET search_path TO 'pg_catalog', 'pg_temp'
    SET jit TO 'off'
    AS $$
    SELECT h.state FROM millrace.finished h WHERE h.id = p_id AND h.state IN (1, 3, 4) LIMIT 1
$$;


--
-- Name: flush(integer, bigint, bigint[], bigint[], bigint[], smallint[], integer[], text[], timestamp with time zone[], text[], text[], jsonb[], smallint[], integer[], timestamp with time zone[], integer[], timestamp with time zone[], timestamp with time zone[], bigint[], bigint[], text[], boolean); Type: FUNCTION; Schema: millrace; Owner: -
--

CREATE FUNCTION millrace.flush(p_owner integer, p_seq bigint, p_job bigint[], p_tick bigint[], p_token bigint[], p_state smallint[], p_attempt integer[], p_error text[], p_retry_at timestamp with time zone[], p_queue text[], p_kind text[], p_args jsonb[], p_priority smallint[], p_max_attempts integer[], p_created_at timestamp with time zone[], p_timeout_ms integer[], p_started timestamp with time zone[], p_finished timestamp with time zone[], p_done_tick bigint[], p_done_token bigint[], p_done_queue text[], p_replay boolean DEFAULT true) RETURNS SETOF bigint
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    SET jit TO 'off'
    AS $$
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
    SELECT millrace.current_gen(), u.j, u.q, u.kd, u.ar, u.p, CASE WHEN u.s = 5 THEN u.a - 1 ELSE u.a END, u.m, u.c, u.r, u.e,
           coalesce(u.tm, 0)
    FROM unnest(p_job, p_state, p_attempt, p_error, p_retry_at, p_queue, p_kind, p_args, p_priority,
                p_max_attempts, p_created_at, p_timeout_ms) WITH ORDINALITY AS u(j, s, a, e, r, q, kd, ar, p, m, c, tm, i)
    WHERE u.s IN (2, 5) AND v_new[u.i];

    INSERT INTO millrace.finished (bucket, id, attempt, state, queue, kind, args, priority, max_attempts, created_at,
                                  started_at, finished_at, error, owner)
    SELECT millrace.history_bucket(u.s, coalesce(u.f, now())), u.j, u.a, u.s, u.q, u.kd, u.ar, u.p, u.m, u.c,
           u.st, coalesce(u.f, now()), u.e, p_owner
    FROM unnest(p_job, p_state, p_attempt, p_error, p_queue, p_kind, p_args, p_priority,
                p_max_attempts, p_created_at, p_started, p_finished) WITH ORDINALITY AS u(j, s, a, e, q, kd, ar, p, m, c, st, f, i)
    WHERE v_new[u.i]
      -- a job cancelled while waiting is in history already
      AND NOT (u.s = 4 AND u.st IS NULL AND millrace.final_state(u.j) = 4);

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
-- Name: history_bucket(smallint, timestamp with time zone); Type: FUNCTION; Schema: millrace; Owner: -
--

CREATE FUNCTION millrace.history_bucket(p_state smallint, p_at timestamp with time zone) RETURNS smallint
    LANGUAGE sql IMMUTABLE
    AS $$
    SELECT CASE WHEN p_state = 1 THEN (floor(extract(epoch FROM p_at) / 7200)::bigint % 36)::smallint
                ELSE (36 + floor(extract(epoch FROM p_at) / 86400)::bigint % 32)::smallint END
$$;


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
-- Name: insert_many(text[], jsonb[], text[], integer[], timestamp with time zone[], integer[], text[], integer[], timestamp with time zone[], integer[], boolean); Type: FUNCTION; Schema: millrace; Owner: -
--

CREATE FUNCTION millrace.insert_many(p_kind text[], p_args jsonb[], p_queue text[], p_priority integer[], p_run_at timestamp with time zone[], p_max_attempts integer[], p_unique_key text[] DEFAULT NULL::text[], p_unique_states integer[] DEFAULT NULL::integer[], p_unique_until timestamp with time zone[] DEFAULT NULL::timestamp with time zone[], p_timeout_ms integer[] DEFAULT NULL::integer[], p_notify boolean DEFAULT true) RETURNS TABLE(id bigint, duplicate boolean, scheduled boolean, run_at timestamp with time zone)
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    SET jit TO 'off'
    AS $$
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
                IF FOUND AND millrace.uniq_blocks(v_u.job_id, v_u.states, v_u.until) THEN
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


--
-- Name: job_state(bigint); Type: FUNCTION; Schema: millrace; Owner: -
--

CREATE FUNCTION millrace.job_state(p_id bigint) RETURNS text
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    SET jit TO 'off'
    AS $$
DECLARE
    v_s smallint := millrace.final_state(p_id);
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


--
-- Name: lane_take(text, smallint, pg_snapshot, bigint, integer, bigint, integer, bigint, boolean); Type: FUNCTION; Schema: millrace; Owner: -
--

CREATE FUNCTION millrace.lane_take(p_queue text, p_priority smallint, p_snap pg_snapshot, p_tick bigint, p_owner integer, p_req bigint, p_max_jobs integer, p_max_bytes bigint, p_peek boolean) RETURNS SETOF millrace.job
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'pg_temp'
    SET jit TO 'off'
    AS $$
DECLARE
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
    SELECT * INTO v_last FROM millrace.tick t WHERE t.queue = p_queue AND t.priority = p_priority ORDER BY t.tick_id DESC LIMIT 1;
    FOR pass IN 1 .. 2 LOOP
        IF pass = 1 THEN
            CONTINUE WHEN v_last IS NULL OR NOT v_last.more;
            v_prev := v_last.prev_snap;
            v_snap := v_last.snap;
            v_after_txid := v_last.upto_txid;
            v_after_id := v_last.upto_id;
        ELSE
            v_prev := coalesce(v_last.snap, '1:1:'::pg_snapshot);
            v_snap := p_snap;
            v_after_txid := NULL;
            v_after_id := NULL;
        END IF;
        v_n := 0;
        v_bytes := 0;
        FOR v_r IN SELECT * FROM millrace.range_jobs(p_queue, p_priority, v_prev, v_snap, v_after_txid, v_after_id,
                                                     NULL, NULL, p_max_jobs, p_max_bytes) LOOP
            v_n := v_n + 1;
            v_bytes := v_bytes + pg_column_size(v_r.args);
            v_upto_txid := v_r.txid;
            v_upto_id := v_r.id;
            RETURN NEXT v_r;
        END LOOP;
        IF v_n > 0 THEN
            IF NOT p_peek THEN
                INSERT INTO millrace.tick (slot, queue, priority, tick_id, prev_snap, snap, after_txid, after_id, upto_txid, upto_id,
                                           more, owner, req, njobs)
                VALUES (millrace.current_segment(), p_queue, p_priority, p_tick, v_prev, v_snap, v_after_txid, v_after_id,
                        v_upto_txid, v_upto_id, v_n >= p_max_jobs OR v_bytes >= p_max_bytes, p_owner, p_req, v_n);
            END IF;
            RETURN;
        END IF;
    END LOOP;
END $$;


--
-- Name: live_job(bigint); Type: FUNCTION; Schema: millrace; Owner: -
--

CREATE FUNCTION millrace.live_job(p_id bigint) RETURNS TABLE(queue text, kind text, args jsonb, priority smallint, attempt integer, max_attempts integer, created_at timestamp with time zone, run_at timestamp with time zone)
    LANGUAGE sql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    SET jit TO 'off'
    AS $$
    SELECT x.queue, x.kind, x.args, x.priority, x.attempt, x.max_attempts, x.created_at, x.run_at FROM (
        (SELECT s.queue, s.kind, s.args, s.priority, s.attempt, s.max_attempts, s.created_at, s.due_at AS run_at, 1 AS o
         FROM millrace.sched s WHERE s.id = p_id AND millrace.job_state(p_id) = 'scheduled' ORDER BY s.due_at DESC LIMIT 1)
        UNION ALL
        (SELECT j.queue, j.kind, j.args, j.priority, j.attempt, j.max_attempts, j.created_at, NULL, 2
         FROM millrace.job j WHERE j.id = p_id ORDER BY j.ready_at DESC LIMIT 1)) x
    ORDER BY x.o LIMIT 1
$$;


--
-- Name: live_jobs(); Type: FUNCTION; Schema: millrace; Owner: -
--

CREATE FUNCTION millrace.live_jobs() RETURNS TABLE(id bigint, queue text, kind text, args jsonb, priority smallint, attempt integer, max_attempts integer, created_at timestamp with time zone, state text, run_at timestamp with time zone, tick_id bigint, owner integer)
    LANGUAGE sql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    SET jit TO 'off'
    AS $$
    WITH f AS (
        SELECT DISTINCT ON (t.queue, t.priority) t.queue, t.priority, t.prev_snap, t.snap, t.more, t.upto_txid, t.upto_id
        FROM millrace.tick t ORDER BY t.queue, t.priority, t.tick_id DESC),
    o AS (SELECT * FROM millrace.open_batches()),
    running AS (
        SELECT b.id, b.queue, b.kind, b.args, b.priority, b.attempt, b.max_attempts, b.created_at,
               CASE WHEN o.owner = 0 THEN 'available' ELSE 'running' END AS state,  -- owner 0: released
               NULL::timestamptz AS run_at, o.tick_id, o.owner
        FROM o CROSS JOIN LATERAL millrace.batch_jobs(o.tick_id) b),
    lastp AS (SELECT p.upto, p.snap FROM millrace.promote p ORDER BY p.round DESC LIMIT 1)
    SELECT DISTINCT ON (j.id) j.id, j.queue, j.kind, j.args, j.priority, j.attempt, j.max_attempts, j.created_at,
           'available', NULL::timestamptz, NULL::bigint, NULL::int
    FROM millrace.job j LEFT JOIN f ON f.queue = j.queue AND f.priority = j.priority
    WHERE (f.snap IS NULL OR NOT pg_visible_in_snapshot(j.txid, f.snap)
           OR (f.more AND NOT pg_visible_in_snapshot(j.txid, f.prev_snap) AND (j.txid, j.id) > (f.upto_txid, f.upto_id)))
      AND NOT EXISTS (SELECT 1 FROM running r WHERE r.id = j.id)
      AND NOT EXISTS (SELECT 1 FROM millrace.cancel c WHERE c.job_id = j.id)  -- cancelled before it ran
    UNION ALL
    SELECT * FROM running
    UNION ALL
    SELECT s.id, s.queue, s.kind, s.args, s.priority, s.attempt, s.max_attempts, s.created_at,
           'scheduled', s.due_at, NULL, NULL
    FROM millrace.sched s LEFT JOIN lastp ON true
    WHERE NOT (coalesce(pg_visible_in_snapshot(s.txid, lastp.snap), false) AND s.due_at <= lastp.upto)
      AND NOT EXISTS (SELECT 1 FROM millrace.cancel c WHERE c.job_id = s.id)
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
-- Name: next_due(); Type: FUNCTION; Schema: millrace; Owner: -
--

CREATE FUNCTION millrace.next_due() RETURNS timestamp with time zone
    LANGUAGE sql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    SET jit TO 'off'
    AS $$
    SELECT min(s.due_at) FROM millrace.sched s
    WHERE s.due_at > coalesce((SELECT p.upto FROM millrace.promote p ORDER BY p.round DESC LIMIT 1), '-infinity')
$$;


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
-- Name: pause(text); Type: FUNCTION; Schema: millrace; Owner: -
--

CREATE FUNCTION millrace.pause(p_queue text) RETURNS void
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    SET jit TO 'off'
    AS $$
BEGIN
    PERFORM millrace.check_job('pause', '{}', p_queue, 0, 1);
    INSERT INTO millrace.queue_state (queue, paused) VALUES (p_queue, true);
END $$;


--
-- Name: pending(bigint); Type: FUNCTION; Schema: millrace; Owner: -
--

CREATE FUNCTION millrace.pending(p_id bigint) RETURNS boolean
    LANGUAGE sql
    SET search_path TO 'pg_catalog', 'pg_temp'
    SET jit TO 'off'
    AS $$
    SELECT millrace.final_state(p_id) IS NULL
       AND (EXISTS (SELECT 1 FROM millrace.job j WHERE j.id = p_id)
            OR EXISTS (SELECT 1 FROM millrace.sched s WHERE s.id = p_id))
$$;


--
-- Name: periodic_last(text); Type: FUNCTION; Schema: millrace; Owner: -
--

CREATE FUNCTION millrace.periodic_last(p_name text) RETURNS timestamp with time zone
    LANGUAGE sql STABLE SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    SET jit TO 'off'
    AS $$
    SELECT max(p.slot_at) FROM millrace.periodic p WHERE p.name = p_name
$$;


--
-- Name: periodic_run(text, timestamp with time zone, text, jsonb, text, integer, integer, integer); Type: FUNCTION; Schema: millrace; Owner: -
--

CREATE FUNCTION millrace.periodic_run(p_name text, p_slot_at timestamp with time zone, p_kind text, p_args jsonb, p_queue text, p_priority integer, p_max_attempts integer, p_timeout_ms integer DEFAULT 0) RETURNS bigint
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    SET jit TO 'off'
    AS $$
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
END $$;


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
END $_$;


--
-- Name: queue_counts(); Type: FUNCTION; Schema: millrace; Owner: -
--

CREATE FUNCTION millrace.queue_counts() RETURNS TABLE(queue text, available bigint, running bigint, scheduled bigint, discarded bigint, paused boolean, completed bigint)
    LANGUAGE sql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    SET jit TO 'off'
    AS $$
    WITH live AS MATERIALIZED (SELECT x.queue, x.state FROM millrace.live_jobs() x),
    hist AS MATERIALIZED (
        SELECT h.queue, count(*) FILTER (WHERE h.state = 3) AS discarded, count(*) FILTER (WHERE h.state = 1) AS completed
        FROM millrace.finished h WHERE h.state IN (1, 3) GROUP BY h.queue),
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


--
-- Name: queue_paused(text); Type: FUNCTION; Schema: millrace; Owner: -
--

CREATE FUNCTION millrace.queue_paused(p_queue text) RETURNS boolean
    LANGUAGE sql STABLE SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    SET jit TO 'off'
    AS $$
    SELECT coalesce((SELECT s.paused FROM millrace.queue_state s WHERE s.queue = p_queue ORDER BY s.id DESC LIMIT 1), false)
$$;


--
-- Name: range_jobs(text, smallint, pg_snapshot, pg_snapshot, xid8, bigint, xid8, bigint, integer, bigint); Type: FUNCTION; Schema: millrace; Owner: -
--

CREATE FUNCTION millrace.range_jobs(p_queue text, p_priority smallint, p_prev pg_snapshot, p_snap pg_snapshot, p_after_txid xid8, p_after_id bigint, p_upto_txid xid8, p_upto_id bigint, p_max_jobs integer, p_max_bytes bigint) RETURNS SETOF millrace.job
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
                   WHERE j.queue = p_queue AND j.priority = p_priority AND j.txid = v_x
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
               WHERE j.queue = p_queue AND j.priority = p_priority AND j.txid >= v_lo AND j.txid < pg_snapshot_xmax(p_snap)
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
    SELECT p_into, u.key, u.job_id, u.states, u.until, u.at FROM millrace.uniq u
    WHERE u.slot = p_slot AND millrace.uniq_blocks(u.job_id, u.states, u.until);
    GET DIAGNOSTICS v_n = ROW_COUNT;
    v_total := v_total + v_n;

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
-- Name: resume(text); Type: FUNCTION; Schema: millrace; Owner: -
--

CREATE FUNCTION millrace.resume(p_queue text) RETURNS void
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    SET jit TO 'off'
    AS $$
BEGIN
    PERFORM millrace.check_job('resume', '{}', p_queue, 0, 1);
    INSERT INTO millrace.queue_state (queue, paused) VALUES (p_queue, false);
    PERFORM pg_notify('millrace', p_queue);
END $$;


--
-- Name: retry(bigint); Type: FUNCTION; Schema: millrace; Owner: -
--

CREATE FUNCTION millrace.retry(p_id bigint) RETURNS text
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    SET jit TO 'off'
    AS $$
DECLARE
    v_h millrace.finished;
    v_s smallint := millrace.final_state(p_id);
    v_id bigint;
BEGIN
    IF v_s IS NULL THEN
        RETURN CASE WHEN millrace.pending(p_id) THEN 'not finished' ELSE 'unknown' END;
    END IF;
    IF v_s = 1 THEN
        RETURN 'completed';
    END IF;
    SELECT * INTO v_h FROM millrace.finished h WHERE h.id = p_id AND h.state IN (3, 4) LIMIT 1;
    SELECT i.id INTO v_id FROM millrace.insert_many(ARRAY[v_h.kind], ARRAY[v_h.args], ARRAY[v_h.queue], ARRAY[v_h.priority::int],
                                                    ARRAY[NULL::timestamptz], ARRAY[v_h.max_attempts]) i;
    RETURN 'retried as job ' || v_id;
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
                   FROM unnest(ARRAY['job', 'tick', 'lease', 'ack', 'done', 'flush', 'promote', 'cancel', 'uniq']) t) $$;


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
    WITH RECURSIVE ls AS (
        (SELECT j.queue, j.priority FROM millrace.job j WHERE j.slot = p_slot ORDER BY j.queue, j.priority LIMIT 1)
        UNION ALL
        SELECT n.queue, n.priority FROM ls
        CROSS JOIN LATERAL (SELECT j.queue, j.priority FROM millrace.job j
                            WHERE j.slot = p_slot AND (j.queue, j.priority) > (ls.queue, ls.priority)
                            ORDER BY j.queue, j.priority LIMIT 1) n),
    f AS MATERIALIZED (
        SELECT ls.queue, ls.priority, t.prev_snap, t.snap, t.more, t.upto_txid, t.upto_id FROM ls
        LEFT JOIN LATERAL (SELECT * FROM millrace.tick t WHERE t.queue = ls.queue AND t.priority = ls.priority
                           ORDER BY t.tick_id DESC LIMIT 1) t ON true)
    SELECT j.* FROM f JOIN millrace.job j ON j.slot = p_slot AND j.queue = f.queue AND j.priority = f.priority
    WHERE f.snap IS NULL
       OR NOT pg_visible_in_snapshot(j.txid, f.snap)
       OR (f.more AND NOT pg_visible_in_snapshot(j.txid, f.prev_snap) AND (j.txid, j.id) > (f.upto_txid, f.upto_id))
$$;


--
-- Name: uniq_blocks(bigint, integer, timestamp with time zone); Type: FUNCTION; Schema: millrace; Owner: -
--

CREATE FUNCTION millrace.uniq_blocks(p_job bigint, p_states integer, p_until timestamp with time zone) RETURNS boolean
    LANGUAGE sql
    SET search_path TO 'pg_catalog', 'pg_temp'
    SET jit TO 'off'
    AS $$
    SELECT (p_until IS NULL OR p_until > now())
       AND CASE millrace.final_state(p_job)
               WHEN 1 THEN p_states & 2 <> 0
               WHEN 3 THEN p_states & 4 <> 0
               WHEN 4 THEN p_states & 8 <> 0
               ELSE millrace.pending(p_job) END
$$;


--
-- Name: uniq_space(); Type: FUNCTION; Schema: millrace; Owner: -
--

CREATE FUNCTION millrace.uniq_space() RETURNS integer
    LANGUAGE sql IMMUTABLE
    AS $$ SELECT 1836412279 $$;


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
-- Name: cancel; Type: TABLE; Schema: millrace; Owner: -
--

CREATE TABLE millrace.cancel (
    slot smallint NOT NULL,
    job_id bigint NOT NULL,
    at timestamp with time zone DEFAULT now() NOT NULL
)
PARTITION BY LIST (slot);


--
-- Name: cancel_0; Type: TABLE; Schema: millrace; Owner: -
--

CREATE TABLE millrace.cancel_0 (
    slot smallint NOT NULL,
    job_id bigint NOT NULL,
    at timestamp with time zone DEFAULT now() NOT NULL
)
WITH (autovacuum_enabled='false');


--
-- Name: cancel_1; Type: TABLE; Schema: millrace; Owner: -
--

CREATE TABLE millrace.cancel_1 (
    slot smallint NOT NULL,
    job_id bigint NOT NULL,
    at timestamp with time zone DEFAULT now() NOT NULL
)
WITH (autovacuum_enabled='false');


--
-- Name: cancel_2; Type: TABLE; Schema: millrace; Owner: -
--

CREATE TABLE millrace.cancel_2 (
    slot smallint NOT NULL,
    job_id bigint NOT NULL,
    at timestamp with time zone DEFAULT now() NOT NULL
)
WITH (autovacuum_enabled='false');


--
-- Name: cancel_3; Type: TABLE; Schema: millrace; Owner: -
--

CREATE TABLE millrace.cancel_3 (
    slot smallint NOT NULL,
    job_id bigint NOT NULL,
    at timestamp with time zone DEFAULT now() NOT NULL
)
WITH (autovacuum_enabled='false');


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
-- Name: finished; Type: TABLE; Schema: millrace; Owner: -
--

CREATE TABLE millrace.finished (
    bucket smallint NOT NULL,
    id bigint NOT NULL,
    attempt integer NOT NULL,
    state smallint NOT NULL,
    queue text NOT NULL,
    kind text NOT NULL,
    args jsonb NOT NULL,
    priority smallint NOT NULL,
    max_attempts integer NOT NULL,
    created_at timestamp with time zone NOT NULL,
    started_at timestamp with time zone,
    finished_at timestamp with time zone NOT NULL,
    error text,
    owner integer NOT NULL
)
PARTITION BY LIST (bucket);


--
-- Name: finished_0; Type: TABLE; Schema: millrace; Owner: -
--

CREATE TABLE millrace.finished_0 (
    bucket smallint NOT NULL,
    id bigint NOT NULL,
    attempt integer NOT NULL,
    state smallint NOT NULL,
    queue text NOT NULL,
    kind text NOT NULL,
    args jsonb NOT NULL,
    priority smallint NOT NULL,
    max_attempts integer NOT NULL,
    created_at timestamp with time zone NOT NULL,
    started_at timestamp with time zone,
    finished_at timestamp with time zone NOT NULL,
    error text,
    owner integer NOT NULL
)
WITH (autovacuum_enabled='false', toast.autovacuum_enabled='false');


--
-- Name: finished_1; Type: TABLE; Schema: millrace; Owner: -
--

CREATE TABLE millrace.finished_1 (
    bucket smallint NOT NULL,
    id bigint NOT NULL,
    attempt integer NOT NULL,
    state smallint NOT NULL,
    queue text NOT NULL,
    kind text NOT NULL,
    args jsonb NOT NULL,
    priority smallint NOT NULL,
    max_attempts integer NOT NULL,
    created_at timestamp with time zone NOT NULL,
    started_at timestamp with time zone,
    finished_at timestamp with time zone NOT NULL,
    error text,
    owner integer NOT NULL
)
WITH (autovacuum_enabled='false', toast.autovacuum_enabled='false');


--
-- Name: finished_10; Type: TABLE; Schema: millrace; Owner: -
--

CREATE TABLE millrace.finished_10 (
    bucket smallint NOT NULL,
    id bigint NOT NULL,
    attempt integer NOT NULL,
    state smallint NOT NULL,
    queue text NOT NULL,
    kind text NOT NULL,
    args jsonb NOT NULL,
    priority smallint NOT NULL,
    max_attempts integer NOT NULL,
    created_at timestamp with time zone NOT NULL,
    started_at timestamp with time zone,
    finished_at timestamp with time zone NOT NULL,
    error text,
    owner integer NOT NULL
)
WITH (autovacuum_enabled='false', toast.autovacuum_enabled='false');


--
-- Name: finished_11; Type: TABLE; Schema: millrace; Owner: -
--

CREATE TABLE millrace.finished_11 (
    bucket smallint NOT NULL,
    id bigint NOT NULL,
    attempt integer NOT NULL,
    state smallint NOT NULL,
    queue text NOT NULL,
    kind text NOT NULL,
    args jsonb NOT NULL,
    priority smallint NOT NULL,
    max_attempts integer NOT NULL,
    created_at timestamp with time zone NOT NULL,
    started_at timestamp with time zone,
    finished_at timestamp with time zone NOT NULL,
    error text,
    owner integer NOT NULL
)
WITH (autovacuum_enabled='false', toast.autovacuum_enabled='false');


--
-- Name: finished_12; Type: TABLE; Schema: millrace; Owner: -
--

CREATE TABLE millrace.finished_12 (
    bucket smallint NOT NULL,
    id bigint NOT NULL,
    attempt integer NOT NULL,
    state smallint NOT NULL,
    queue text NOT NULL,
    kind text NOT NULL,
    args jsonb NOT NULL,
    priority smallint NOT NULL,
    max_attempts integer NOT NULL,
    created_at timestamp with time zone NOT NULL,
    started_at timestamp with time zone,
    finished_at timestamp with time zone NOT NULL,
    error text,
    owner integer NOT NULL
)
WITH (autovacuum_enabled='false', toast.autovacuum_enabled='false');


--
-- Name: finished_13; Type: TABLE; Schema: millrace; Owner: -
--

CREATE TABLE millrace.finished_13 (
    bucket smallint NOT NULL,
    id bigint NOT NULL,
    attempt integer NOT NULL,
    state smallint NOT NULL,
    queue text NOT NULL,
    kind text NOT NULL,
    args jsonb NOT NULL,
    priority smallint NOT NULL,
    max_attempts integer NOT NULL,
    created_at timestamp with time zone NOT NULL,
    started_at timestamp with time zone,
    finished_at timestamp with time zone NOT NULL,
    error text,
    owner integer NOT NULL
)
WITH (autovacuum_enabled='false', toast.autovacuum_enabled='false');


--
-- Name: finished_14; Type: TABLE; Schema: millrace; Owner: -
--

CREATE TABLE millrace.finished_14 (
    bucket smallint NOT NULL,
    id bigint NOT NULL,
    attempt integer NOT NULL,
    state smallint NOT NULL,
    queue text NOT NULL,
    kind text NOT NULL,
    args jsonb NOT NULL,
    priority smallint NOT NULL,
    max_attempts integer NOT NULL,
    created_at timestamp with time zone NOT NULL,
    started_at timestamp with time zone,
    finished_at timestamp with time zone NOT NULL,
    error text,
    owner integer NOT NULL
)
WITH (autovacuum_enabled='false', toast.autovacuum_enabled='false');


--
-- Name: finished_15; Type: TABLE; Schema: millrace; Owner: -
--

CREATE TABLE millrace.finished_15 (
    bucket smallint NOT NULL,
    id bigint NOT NULL,
    attempt integer NOT NULL,
    state smallint NOT NULL,
    queue text NOT NULL,
    kind text NOT NULL,
    args jsonb NOT NULL,
    priority smallint NOT NULL,
    max_attempts integer NOT NULL,
    created_at timestamp with time zone NOT NULL,
    started_at timestamp with time zone,
    finished_at timestamp with time zone NOT NULL,
    error text,
    owner integer NOT NULL
)
WITH (autovacuum_enabled='false', toast.autovacuum_enabled='false');


--
-- Name: finished_16; Type: TABLE; Schema: millrace; Owner: -
--

CREATE TABLE millrace.finished_16 (
    bucket smallint NOT NULL,
    id bigint NOT NULL,
    attempt integer NOT NULL,
    state smallint NOT NULL,
    queue text NOT NULL,
    kind text NOT NULL,
    args jsonb NOT NULL,
    priority smallint NOT NULL,
    max_attempts integer NOT NULL,
    created_at timestamp with time zone NOT NULL,
    started_at timestamp with time zone,
    finished_at timestamp with time zone NOT NULL,
    error text,
    owner integer NOT NULL
)
WITH (autovacuum_enabled='false', toast.autovacuum_enabled='false');


--
-- Name: finished_17; Type: TABLE; Schema: millrace; Owner: -
--

CREATE TABLE millrace.finished_17 (
    bucket smallint NOT NULL,
    id bigint NOT NULL,
    attempt integer NOT NULL,
    state smallint NOT NULL,
    queue text NOT NULL,
    kind text NOT NULL,
    args jsonb NOT NULL,
    priority smallint NOT NULL,
    max_attempts integer NOT NULL,
    created_at timestamp with time zone NOT NULL,
    started_at timestamp with time zone,
    finished_at timestamp with time zone NOT NULL,
    error text,
    owner integer NOT NULL
)
WITH (autovacuum_enabled='false', toast.autovacuum_enabled='false');


--
-- Name: finished_18; Type: TABLE; Schema: millrace; Owner: -
--

CREATE TABLE millrace.finished_18 (
    bucket smallint NOT NULL,
    id bigint NOT NULL,
    attempt integer NOT NULL,
    state smallint NOT NULL,
    queue text NOT NULL,
    kind text NOT NULL,
    args jsonb NOT NULL,
    priority smallint NOT NULL,
    max_attempts integer NOT NULL,
    created_at timestamp with time zone NOT NULL,
    started_at timestamp with time zone,
    finished_at timestamp with time zone NOT NULL,
    error text,
    owner integer NOT NULL
)
WITH (autovacuum_enabled='false', toast.autovacuum_enabled='false');


--
-- Name: finished_19; Type: TABLE; Schema: millrace; Owner: -
--

CREATE TABLE millrace.finished_19 (
    bucket smallint NOT NULL,
    id bigint NOT NULL,
    attempt integer NOT NULL,
    state smallint NOT NULL,
    queue text NOT NULL,
    kind text NOT NULL,
    args jsonb NOT NULL,
    priority smallint NOT NULL,
    max_attempts integer NOT NULL,
    created_at timestamp with time zone NOT NULL,
    started_at timestamp with time zone,
    finished_at timestamp with time zone NOT NULL,
    error text,
    owner integer NOT NULL
)
WITH (autovacuum_enabled='false', toast.autovacuum_enabled='false');


--
-- Name: finished_2; Type: TABLE; Schema: millrace; Owner: -
--

CREATE TABLE millrace.finished_2 (
    bucket smallint NOT NULL,
    id bigint NOT NULL,
    attempt integer NOT NULL,
    state smallint NOT NULL,
    queue text NOT NULL,
    kind text NOT NULL,
    args jsonb NOT NULL,
    priority smallint NOT NULL,
    max_attempts integer NOT NULL,
    created_at timestamp with time zone NOT NULL,
    started_at timestamp with time zone,
    finished_at timestamp with time zone NOT NULL,
    error text,
    owner integer NOT NULL
)
WITH (autovacuum_enabled='false', toast.autovacuum_enabled='false');


--
-- Name: finished_20; Type: TABLE; Schema: millrace; Owner: -
--

CREATE TABLE millrace.finished_20 (
    bucket smallint NOT NULL,
    id bigint NOT NULL,
    attempt integer NOT NULL,
    state smallint NOT NULL,
    queue text NOT NULL,
    kind text NOT NULL,
    args jsonb NOT NULL,
    priority smallint NOT NULL,
    max_attempts integer NOT NULL,
    created_at timestamp with time zone NOT NULL,
    started_at timestamp with time zone,
    finished_at timestamp with time zone NOT NULL,
    error text,
    owner integer NOT NULL
)
WITH (autovacuum_enabled='false', toast.autovacuum_enabled='false');


--
-- Name: finished_21; Type: TABLE; Schema: millrace; Owner: -
--

CREATE TABLE millrace.finished_21 (
    bucket smallint NOT NULL,
    id bigint NOT NULL,
    attempt integer NOT NULL,
    state smallint NOT NULL,
    queue text NOT NULL,
    kind text NOT NULL,
    args jsonb NOT NULL,
    priority smallint NOT NULL,
    max_attempts integer NOT NULL,
    created_at timestamp with time zone NOT NULL,
    started_at timestamp with time zone,
    finished_at timestamp with time zone NOT NULL,
    error text,
    owner integer NOT NULL
)
WITH (autovacuum_enabled='false', toast.autovacuum_enabled='false');


--
-- Name: finished_22; Type: TABLE; Schema: millrace; Owner: -
--

CREATE TABLE millrace.finished_22 (
    bucket smallint NOT NULL,
    id bigint NOT NULL,
    attempt integer NOT NULL,
    state smallint NOT NULL,
    queue text NOT NULL,
    kind text NOT NULL,
    args jsonb NOT NULL,
    priority smallint NOT NULL,
    max_attempts integer NOT NULL,
    created_at timestamp with time zone NOT NULL,
    started_at timestamp with time zone,
    finished_at timestamp with time zone NOT NULL,
    error text,
    owner integer NOT NULL
)
WITH (autovacuum_enabled='false', toast.autovacuum_enabled='false');


--
-- Name: finished_23; Type: TABLE; Schema: millrace; Owner: -
--

CREATE TABLE millrace.finished_23 (
    bucket smallint NOT NULL,
    id bigint NOT NULL,
    attempt integer NOT NULL,
    state smallint NOT NULL,
    queue text NOT NULL,
    kind text NOT NULL,
    args jsonb NOT NULL,
    priority smallint NOT NULL,
    max_attempts integer NOT NULL,
    created_at timestamp with time zone NOT NULL,
    started_at timestamp with time zone,
    finished_at timestamp with time zone NOT NULL,
    error text,
    owner integer NOT NULL
)
WITH (autovacuum_enabled='false', toast.autovacuum_enabled='false');


--
-- Name: finished_24; Type: TABLE; Schema: millrace; Owner: -
--

CREATE TABLE millrace.finished_24 (
    bucket smallint NOT NULL,
    id bigint NOT NULL,
    attempt integer NOT NULL,
    state smallint NOT NULL,
    queue text NOT NULL,
    kind text NOT NULL,
    args jsonb NOT NULL,
    priority smallint NOT NULL,
    max_attempts integer NOT NULL,
    created_at timestamp with time zone NOT NULL,
    started_at timestamp with time zone,
    finished_at timestamp with time zone NOT NULL,
    error text,
    owner integer NOT NULL
)
WITH (autovacuum_enabled='false', toast.autovacuum_enabled='false');


--
-- Name: finished_25; Type: TABLE; Schema: millrace; Owner: -
--

CREATE TABLE millrace.finished_25 (
    bucket smallint NOT NULL,
    id bigint NOT NULL,
    attempt integer NOT NULL,
    state smallint NOT NULL,
    queue text NOT NULL,
    kind text NOT NULL,
    args jsonb NOT NULL,
    priority smallint NOT NULL,
    max_attempts integer NOT NULL,
    created_at timestamp with time zone NOT NULL,
    started_at timestamp with time zone,
    finished_at timestamp with time zone NOT NULL,
    error text,
    owner integer NOT NULL
)
WITH (autovacuum_enabled='false', toast.autovacuum_enabled='false');


--
-- Name: finished_26; Type: TABLE; Schema: millrace; Owner: -
--

CREATE TABLE millrace.finished_26 (
    bucket smallint NOT NULL,
    id bigint NOT NULL,
    attempt integer NOT NULL,
    state smallint NOT NULL,
    queue text NOT NULL,
    kind text NOT NULL,
    args jsonb NOT NULL,
    priority smallint NOT NULL,
    max_attempts integer NOT NULL,
    created_at timestamp with time zone NOT NULL,
    started_at timestamp with time zone,
    finished_at timestamp with time zone NOT NULL,
    error text,
    owner integer NOT NULL
)
WITH (autovacuum_enabled='false', toast.autovacuum_enabled='false');


--
-- Name: finished_27; Type: TABLE; Schema: millrace; Owner: -
--

CREATE TABLE millrace.finished_27 (
    bucket smallint NOT NULL,
    id bigint NOT NULL,
    attempt integer NOT NULL,
    state smallint NOT NULL,
    queue text NOT NULL,
    kind text NOT NULL,
    args jsonb NOT NULL,
    priority smallint NOT NULL,
    max_attempts integer NOT NULL,
    created_at timestamp with time zone NOT NULL,
    started_at timestamp with time zone,
    finished_at timestamp with time zone NOT NULL,
    error text,
    owner integer NOT NULL
)
WITH (autovacuum_enabled='false', toast.autovacuum_enabled='false');


--
-- Name: finished_28; Type: TABLE; Schema: millrace; Owner: -
--

CREATE TABLE millrace.finished_28 (
    bucket smallint NOT NULL,
    id bigint NOT NULL,
    attempt integer NOT NULL,
    state smallint NOT NULL,
    queue text NOT NULL,
    kind text NOT NULL,
    args jsonb NOT NULL,
    priority smallint NOT NULL,
    max_attempts integer NOT NULL,
    created_at timestamp with time zone NOT NULL,
    started_at timestamp with time zone,
    finished_at timestamp with time zone NOT NULL,
    error text,
    owner integer NOT NULL
)
WITH (autovacuum_enabled='false', toast.autovacuum_enabled='false');


--
-- Name: finished_29; Type: TABLE; Schema: millrace; Owner: -
--

CREATE TABLE millrace.finished_29 (
    bucket smallint NOT NULL,
    id bigint NOT NULL,
    attempt integer NOT NULL,
    state smallint NOT NULL,
    queue text NOT NULL,
    kind text NOT NULL,
    args jsonb NOT NULL,
    priority smallint NOT NULL,
    max_attempts integer NOT NULL,
    created_at timestamp with time zone NOT NULL,
    started_at timestamp with time zone,
    finished_at timestamp with time zone NOT NULL,
    error text,
    owner integer NOT NULL
)
WITH (autovacuum_enabled='false', toast.autovacuum_enabled='false');


--
-- Name: finished_3; Type: TABLE; Schema: millrace; Owner: -
--

CREATE TABLE millrace.finished_3 (
    bucket smallint NOT NULL,
    id bigint NOT NULL,
    attempt integer NOT NULL,
    state smallint NOT NULL,
    queue text NOT NULL,
    kind text NOT NULL,
    args jsonb NOT NULL,
    priority smallint NOT NULL,
    max_attempts integer NOT NULL,
    created_at timestamp with time zone NOT NULL,
    started_at timestamp with time zone,
    finished_at timestamp with time zone NOT NULL,
    error text,
    owner integer NOT NULL
)
WITH (autovacuum_enabled='false', toast.autovacuum_enabled='false');


--
-- Name: finished_30; Type: TABLE; Schema: millrace; Owner: -
--

CREATE TABLE millrace.finished_30 (
    bucket smallint NOT NULL,
    id bigint NOT NULL,
    attempt integer NOT NULL,
    state smallint NOT NULL,
    queue text NOT NULL,
    kind text NOT NULL,
    args jsonb NOT NULL,
    priority smallint NOT NULL,
    max_attempts integer NOT NULL,
    created_at timestamp with time zone NOT NULL,
    started_at timestamp with time zone,
    finished_at timestamp with time zone NOT NULL,
    error text,
    owner integer NOT NULL
)
WITH (autovacuum_enabled='false', toast.autovacuum_enabled='false');


--
-- Name: finished_31; Type: TABLE; Schema: millrace; Owner: -
--

CREATE TABLE millrace.finished_31 (
    bucket smallint NOT NULL,
    id bigint NOT NULL,
    attempt integer NOT NULL,
    state smallint NOT NULL,
    queue text NOT NULL,
    kind text NOT NULL,
    args jsonb NOT NULL,
    priority smallint NOT NULL,
    max_attempts integer NOT NULL,
    created_at timestamp with time zone NOT NULL,
    started_at timestamp with time zone,
    finished_at timestamp with time zone NOT NULL,
    error text,
    owner integer NOT NULL
)
WITH (autovacuum_enabled='false', toast.autovacuum_enabled='false');


--
-- Name: finished_32; Type: TABLE; Schema: millrace; Owner: -
--

CREATE TABLE millrace.finished_32 (
    bucket smallint NOT NULL,
    id bigint NOT NULL,
    attempt integer NOT NULL,
    state smallint NOT NULL,
    queue text NOT NULL,
    kind text NOT NULL,
    args jsonb NOT NULL,
    priority smallint NOT NULL,
    max_attempts integer NOT NULL,
    created_at timestamp with time zone NOT NULL,
    started_at timestamp with time zone,
    finished_at timestamp with time zone NOT NULL,
    error text,
    owner integer NOT NULL
)
WITH (autovacuum_enabled='false', toast.autovacuum_enabled='false');


--
-- Name: finished_33; Type: TABLE; Schema: millrace; Owner: -
--

CREATE TABLE millrace.finished_33 (
    bucket smallint NOT NULL,
    id bigint NOT NULL,
    attempt integer NOT NULL,
    state smallint NOT NULL,
    queue text NOT NULL,
    kind text NOT NULL,
    args jsonb NOT NULL,
    priority smallint NOT NULL,
    max_attempts integer NOT NULL,
    created_at timestamp with time zone NOT NULL,
    started_at timestamp with time zone,
    finished_at timestamp with time zone NOT NULL,
    error text,
    owner integer NOT NULL
)
WITH (autovacuum_enabled='false', toast.autovacuum_enabled='false');


--
-- Name: finished_34; Type: TABLE; Schema: millrace; Owner: -
--

CREATE TABLE millrace.finished_34 (
    bucket smallint NOT NULL,
    id bigint NOT NULL,
    attempt integer NOT NULL,
    state smallint NOT NULL,
    queue text NOT NULL,
    kind text NOT NULL,
    args jsonb NOT NULL,
    priority smallint NOT NULL,
    max_attempts integer NOT NULL,
    created_at timestamp with time zone NOT NULL,
    started_at timestamp with time zone,
    finished_at timestamp with time zone NOT NULL,
    error text,
    owner integer NOT NULL
)
WITH (autovacuum_enabled='false', toast.autovacuum_enabled='false');


--
-- Name: finished_35; Type: TABLE; Schema: millrace; Owner: -
--

CREATE TABLE millrace.finished_35 (
    bucket smallint NOT NULL,
    id bigint NOT NULL,
    attempt integer NOT NULL,
    state smallint NOT NULL,
    queue text NOT NULL,
    kind text NOT NULL,
    args jsonb NOT NULL,
    priority smallint NOT NULL,
    max_attempts integer NOT NULL,
    created_at timestamp with time zone NOT NULL,
    started_at timestamp with time zone,
    finished_at timestamp with time zone NOT NULL,
    error text,
    owner integer NOT NULL
)
WITH (autovacuum_enabled='false', toast.autovacuum_enabled='false');


--
-- Name: finished_36; Type: TABLE; Schema: millrace; Owner: -
--

CREATE TABLE millrace.finished_36 (
    bucket smallint NOT NULL,
    id bigint NOT NULL,
    attempt integer NOT NULL,
    state smallint NOT NULL,
    queue text NOT NULL,
    kind text NOT NULL,
    args jsonb NOT NULL,
    priority smallint NOT NULL,
    max_attempts integer NOT NULL,
    created_at timestamp with time zone NOT NULL,
    started_at timestamp with time zone,
    finished_at timestamp with time zone NOT NULL,
    error text,
    owner integer NOT NULL
)
WITH (autovacuum_enabled='false', toast.autovacuum_enabled='false');


--
-- Name: finished_37; Type: TABLE; Schema: millrace; Owner: -
--

CREATE TABLE millrace.finished_37 (
    bucket smallint NOT NULL,
    id bigint NOT NULL,
    attempt integer NOT NULL,
    state smallint NOT NULL,
    queue text NOT NULL,
    kind text NOT NULL,
    args jsonb NOT NULL,
    priority smallint NOT NULL,
    max_attempts integer NOT NULL,
    created_at timestamp with time zone NOT NULL,
    started_at timestamp with time zone,
    finished_at timestamp with time zone NOT NULL,
    error text,
    owner integer NOT NULL
)
WITH (autovacuum_enabled='false', toast.autovacuum_enabled='false');


--
-- Name: finished_38; Type: TABLE; Schema: millrace; Owner: -
--

CREATE TABLE millrace.finished_38 (
    bucket smallint NOT NULL,
    id bigint NOT NULL,
    attempt integer NOT NULL,
    state smallint NOT NULL,
    queue text NOT NULL,
    kind text NOT NULL,
    args jsonb NOT NULL,
    priority smallint NOT NULL,
    max_attempts integer NOT NULL,
    created_at timestamp with time zone NOT NULL,
    started_at timestamp with time zone,
    finished_at timestamp with time zone NOT NULL,
    error text,
    owner integer NOT NULL
)
WITH (autovacuum_enabled='false', toast.autovacuum_enabled='false');


--
-- Name: finished_39; Type: TABLE; Schema: millrace; Owner: -
--

CREATE TABLE millrace.finished_39 (
    bucket smallint NOT NULL,
    id bigint NOT NULL,
    attempt integer NOT NULL,
    state smallint NOT NULL,
    queue text NOT NULL,
    kind text NOT NULL,
    args jsonb NOT NULL,
    priority smallint NOT NULL,
    max_attempts integer NOT NULL,
    created_at timestamp with time zone NOT NULL,
    started_at timestamp with time zone,
    finished_at timestamp with time zone NOT NULL,
    error text,
    owner integer NOT NULL
)
WITH (autovacuum_enabled='false', toast.autovacuum_enabled='false');


--
-- Name: finished_4; Type: TABLE; Schema: millrace; Owner: -
--

CREATE TABLE millrace.finished_4 (
    bucket smallint NOT NULL,
    id bigint NOT NULL,
    attempt integer NOT NULL,
    state smallint NOT NULL,
    queue text NOT NULL,
    kind text NOT NULL,
    args jsonb NOT NULL,
    priority smallint NOT NULL,
    max_attempts integer NOT NULL,
    created_at timestamp with time zone NOT NULL,
    started_at timestamp with time zone,
    finished_at timestamp with time zone NOT NULL,
    error text,
    owner integer NOT NULL
)
WITH (autovacuum_enabled='false', toast.autovacuum_enabled='false');


--
-- Name: finished_40; Type: TABLE; Schema: millrace; Owner: -
--

CREATE TABLE millrace.finished_40 (
    bucket smallint NOT NULL,
    id bigint NOT NULL,
    attempt integer NOT NULL,
    state smallint NOT NULL,
    queue text NOT NULL,
    kind text NOT NULL,
    args jsonb NOT NULL,
    priority smallint NOT NULL,
    max_attempts integer NOT NULL,
    created_at timestamp with time zone NOT NULL,
    started_at timestamp with time zone,
    finished_at timestamp with time zone NOT NULL,
    error text,
    owner integer NOT NULL
)
WITH (autovacuum_enabled='false', toast.autovacuum_enabled='false');


--
-- Name: finished_41; Type: TABLE; Schema: millrace; Owner: -
--

CREATE TABLE millrace.finished_41 (
    bucket smallint NOT NULL,
    id bigint NOT NULL,
    attempt integer NOT NULL,
    state smallint NOT NULL,
    queue text NOT NULL,
    kind text NOT NULL,
    args jsonb NOT NULL,
    priority smallint NOT NULL,
    max_attempts integer NOT NULL,
    created_at timestamp with time zone NOT NULL,
    started_at timestamp with time zone,
    finished_at timestamp with time zone NOT NULL,
    error text,
    owner integer NOT NULL
)
WITH (autovacuum_enabled='false', toast.autovacuum_enabled='false');


--
-- Name: finished_42; Type: TABLE; Schema: millrace; Owner: -
--

CREATE TABLE millrace.finished_42 (
    bucket smallint NOT NULL,
    id bigint NOT NULL,
    attempt integer NOT NULL,
    state smallint NOT NULL,
    queue text NOT NULL,
    kind text NOT NULL,
    args jsonb NOT NULL,
    priority smallint NOT NULL,
    max_attempts integer NOT NULL,
    created_at timestamp with time zone NOT NULL,
    started_at timestamp with time zone,
    finished_at timestamp with time zone NOT NULL,
    error text,
    owner integer NOT NULL
)
WITH (autovacuum_enabled='false', toast.autovacuum_enabled='false');


--
-- Name: finished_43; Type: TABLE; Schema: millrace; Owner: -
--

CREATE TABLE millrace.finished_43 (
    bucket smallint NOT NULL,
    id bigint NOT NULL,
    attempt integer NOT NULL,
    state smallint NOT NULL,
    queue text NOT NULL,
    kind text NOT NULL,
    args jsonb NOT NULL,
    priority smallint NOT NULL,
    max_attempts integer NOT NULL,
    created_at timestamp with time zone NOT NULL,
    started_at timestamp with time zone,
    finished_at timestamp with time zone NOT NULL,
    error text,
    owner integer NOT NULL
)
WITH (autovacuum_enabled='false', toast.autovacuum_enabled='false');


--
-- Name: finished_44; Type: TABLE; Schema: millrace; Owner: -
--

CREATE TABLE millrace.finished_44 (
    bucket smallint NOT NULL,
    id bigint NOT NULL,
    attempt integer NOT NULL,
    state smallint NOT NULL,
    queue text NOT NULL,
    kind text NOT NULL,
    args jsonb NOT NULL,
    priority smallint NOT NULL,
    max_attempts integer NOT NULL,
    created_at timestamp with time zone NOT NULL,
    started_at timestamp with time zone,
    finished_at timestamp with time zone NOT NULL,
    error text,
    owner integer NOT NULL
)
WITH (autovacuum_enabled='false', toast.autovacuum_enabled='false');


--
-- Name: finished_45; Type: TABLE; Schema: millrace; Owner: -
--

CREATE TABLE millrace.finished_45 (
    bucket smallint NOT NULL,
    id bigint NOT NULL,
    attempt integer NOT NULL,
    state smallint NOT NULL,
    queue text NOT NULL,
    kind text NOT NULL,
    args jsonb NOT NULL,
    priority smallint NOT NULL,
    max_attempts integer NOT NULL,
    created_at timestamp with time zone NOT NULL,
    started_at timestamp with time zone,
    finished_at timestamp with time zone NOT NULL,
    error text,
    owner integer NOT NULL
)
WITH (autovacuum_enabled='false', toast.autovacuum_enabled='false');


--
-- Name: finished_46; Type: TABLE; Schema: millrace; Owner: -
--

CREATE TABLE millrace.finished_46 (
    bucket smallint NOT NULL,
    id bigint NOT NULL,
    attempt integer NOT NULL,
    state smallint NOT NULL,
    queue text NOT NULL,
    kind text NOT NULL,
    args jsonb NOT NULL,
    priority smallint NOT NULL,
    max_attempts integer NOT NULL,
    created_at timestamp with time zone NOT NULL,
    started_at timestamp with time zone,
    finished_at timestamp with time zone NOT NULL,
    error text,
    owner integer NOT NULL
)
WITH (autovacuum_enabled='false', toast.autovacuum_enabled='false');


--
-- Name: finished_47; Type: TABLE; Schema: millrace; Owner: -
--

CREATE TABLE millrace.finished_47 (
    bucket smallint NOT NULL,
    id bigint NOT NULL,
    attempt integer NOT NULL,
    state smallint NOT NULL,
    queue text NOT NULL,
    kind text NOT NULL,
    args jsonb NOT NULL,
    priority smallint NOT NULL,
    max_attempts integer NOT NULL,
    created_at timestamp with time zone NOT NULL,
    started_at timestamp with time zone,
    finished_at timestamp with time zone NOT NULL,
    error text,
    owner integer NOT NULL
)
WITH (autovacuum_enabled='false', toast.autovacuum_enabled='false');


--
-- Name: finished_48; Type: TABLE; Schema: millrace; Owner: -
--

CREATE TABLE millrace.finished_48 (
    bucket smallint NOT NULL,
    id bigint NOT NULL,
    attempt integer NOT NULL,
    state smallint NOT NULL,
    queue text NOT NULL,
    kind text NOT NULL,
    args jsonb NOT NULL,
    priority smallint NOT NULL,
    max_attempts integer NOT NULL,
    created_at timestamp with time zone NOT NULL,
    started_at timestamp with time zone,
    finished_at timestamp with time zone NOT NULL,
    error text,
    owner integer NOT NULL
)
WITH (autovacuum_enabled='false', toast.autovacuum_enabled='false');


--
-- Name: finished_49; Type: TABLE; Schema: millrace; Owner: -
--

CREATE TABLE millrace.finished_49 (
    bucket smallint NOT NULL,
    id bigint NOT NULL,
    attempt integer NOT NULL,
    state smallint NOT NULL,
    queue text NOT NULL,
    kind text NOT NULL,
    args jsonb NOT NULL,
    priority smallint NOT NULL,
    max_attempts integer NOT NULL,
    created_at timestamp with time zone NOT NULL,
    started_at timestamp with time zone,
    finished_at timestamp with time zone NOT NULL,
    error text,
    owner integer NOT NULL
)
WITH (autovacuum_enabled='false', toast.autovacuum_enabled='false');


--
-- Name: finished_5; Type: TABLE; Schema: millrace; Owner: -
--

CREATE TABLE millrace.finished_5 (
    bucket smallint NOT NULL,
    id bigint NOT NULL,
    attempt integer NOT NULL,
    state smallint NOT NULL,
    queue text NOT NULL,
    kind text NOT NULL,
    args jsonb NOT NULL,
    priority smallint NOT NULL,
    max_attempts integer NOT NULL,
    created_at timestamp with time zone NOT NULL,
    started_at timestamp with time zone,
    finished_at timestamp with time zone NOT NULL,
    error text,
    owner integer NOT NULL
)
WITH (autovacuum_enabled='false', toast.autovacuum_enabled='false');


--
-- Name: finished_50; Type: TABLE; Schema: millrace; Owner: -
--

CREATE TABLE millrace.finished_50 (
    bucket smallint NOT NULL,
    id bigint NOT NULL,
    attempt integer NOT NULL,
    state smallint NOT NULL,
    queue text NOT NULL,
    kind text NOT NULL,
    args jsonb NOT NULL,
    priority smallint NOT NULL,
    max_attempts integer NOT NULL,
    created_at timestamp with time zone NOT NULL,
    started_at timestamp with time zone,
    finished_at timestamp with time zone NOT NULL,
    error text,
    owner integer NOT NULL
)
WITH (autovacuum_enabled='false', toast.autovacuum_enabled='false');


--
-- Name: finished_51; Type: TABLE; Schema: millrace; Owner: -
--

CREATE TABLE millrace.finished_51 (
    bucket smallint NOT NULL,
    id bigint NOT NULL,
    attempt integer NOT NULL,
    state smallint NOT NULL,
    queue text NOT NULL,
    kind text NOT NULL,
    args jsonb NOT NULL,
    priority smallint NOT NULL,
    max_attempts integer NOT NULL,
    created_at timestamp with time zone NOT NULL,
    started_at timestamp with time zone,
    finished_at timestamp with time zone NOT NULL,
    error text,
    owner integer NOT NULL
)
WITH (autovacuum_enabled='false', toast.autovacuum_enabled='false');


--
-- Name: finished_52; Type: TABLE; Schema: millrace; Owner: -
--

CREATE TABLE millrace.finished_52 (
    bucket smallint NOT NULL,
    id bigint NOT NULL,
    attempt integer NOT NULL,
    state smallint NOT NULL,
    queue text NOT NULL,
    kind text NOT NULL,
    args jsonb NOT NULL,
    priority smallint NOT NULL,
    max_attempts integer NOT NULL,
    created_at timestamp with time zone NOT NULL,
    started_at timestamp with time zone,
    finished_at timestamp with time zone NOT NULL,
    error text,
    owner integer NOT NULL
)
WITH (autovacuum_enabled='false', toast.autovacuum_enabled='false');


--
-- Name: finished_53; Type: TABLE; Schema: millrace; Owner: -
--

CREATE TABLE millrace.finished_53 (
    bucket smallint NOT NULL,
    id bigint NOT NULL,
    attempt integer NOT NULL,
    state smallint NOT NULL,
    queue text NOT NULL,
    kind text NOT NULL,
    args jsonb NOT NULL,
    priority smallint NOT NULL,
    max_attempts integer NOT NULL,
    created_at timestamp with time zone NOT NULL,
    started_at timestamp with time zone,
    finished_at timestamp with time zone NOT NULL,
    error text,
    owner integer NOT NULL
)
WITH (autovacuum_enabled='false', toast.autovacuum_enabled='false');


--
-- Name: finished_54; Type: TABLE; Schema: millrace; Owner: -
--

CREATE TABLE millrace.finished_54 (
    bucket smallint NOT NULL,
    id bigint NOT NULL,
    attempt integer NOT NULL,
    state smallint NOT NULL,
    queue text NOT NULL,
    kind text NOT NULL,
    args jsonb NOT NULL,
    priority smallint NOT NULL,
    max_attempts integer NOT NULL,
    created_at timestamp with time zone NOT NULL,
    started_at timestamp with time zone,
    finished_at timestamp with time zone NOT NULL,
    error text,
    owner integer NOT NULL
)
WITH (autovacuum_enabled='false', toast.autovacuum_enabled='false');


--
-- Name: finished_55; Type: TABLE; Schema: millrace; Owner: -
--

CREATE TABLE millrace.finished_55 (
    bucket smallint NOT NULL,
    id bigint NOT NULL,
    attempt integer NOT NULL,
    state smallint NOT NULL,
    queue text NOT NULL,
    kind text NOT NULL,
    args jsonb NOT NULL,
    priority smallint NOT NULL,
    max_attempts integer NOT NULL,
    created_at timestamp with time zone NOT NULL,
    started_at timestamp with time zone,
    finished_at timestamp with time zone NOT NULL,
    error text,
    owner integer NOT NULL
)
WITH (autovacuum_enabled='false', toast.autovacuum_enabled='false');


--
-- Name: finished_56; Type: TABLE; Schema: millrace; Owner: -
--

CREATE TABLE millrace.finished_56 (
    bucket smallint NOT NULL,
    id bigint NOT NULL,
    attempt integer NOT NULL,
    state smallint NOT NULL,
    queue text NOT NULL,
    kind text NOT NULL,
    args jsonb NOT NULL,
    priority smallint NOT NULL,
    max_attempts integer NOT NULL,
    created_at timestamp with time zone NOT NULL,
    started_at timestamp with time zone,
    finished_at timestamp with time zone NOT NULL,
    error text,
    owner integer NOT NULL
)
WITH (autovacuum_enabled='false', toast.autovacuum_enabled='false');


--
-- Name: finished_57; Type: TABLE; Schema: millrace; Owner: -
--

CREATE TABLE millrace.finished_57 (
    bucket smallint NOT NULL,
    id bigint NOT NULL,
    attempt integer NOT NULL,
    state smallint NOT NULL,
    queue text NOT NULL,
    kind text NOT NULL,
    args jsonb NOT NULL,
    priority smallint NOT NULL,
    max_attempts integer NOT NULL,
    created_at timestamp with time zone NOT NULL,
    started_at timestamp with time zone,
    finished_at timestamp with time zone NOT NULL,
    error text,
    owner integer NOT NULL
)
WITH (autovacuum_enabled='false', toast.autovacuum_enabled='false');


--
-- Name: finished_58; Type: TABLE; Schema: millrace; Owner: -
--

CREATE TABLE millrace.finished_58 (
    bucket smallint NOT NULL,
    id bigint NOT NULL,
    attempt integer NOT NULL,
    state smallint NOT NULL,
    queue text NOT NULL,
    kind text NOT NULL,
    args jsonb NOT NULL,
    priority smallint NOT NULL,
    max_attempts integer NOT NULL,
    created_at timestamp with time zone NOT NULL,
    started_at timestamp with time zone,
    finished_at timestamp with time zone NOT NULL,
    error text,
    owner integer NOT NULL
)
WITH (autovacuum_enabled='false', toast.autovacuum_enabled='false');


--
-- Name: finished_59; Type: TABLE; Schema: millrace; Owner: -
--

CREATE TABLE millrace.finished_59 (
    bucket smallint NOT NULL,
    id bigint NOT NULL,
    attempt integer NOT NULL,
    state smallint NOT NULL,
    queue text NOT NULL,
    kind text NOT NULL,
    args jsonb NOT NULL,
    priority smallint NOT NULL,
    max_attempts integer NOT NULL,
    created_at timestamp with time zone NOT NULL,
    started_at timestamp with time zone,
    finished_at timestamp with time zone NOT NULL,
    error text,
    owner integer NOT NULL
)
WITH (autovacuum_enabled='false', toast.autovacuum_enabled='false');


--
-- Name: finished_6; Type: TABLE; Schema: millrace; Owner: -
--

CREATE TABLE millrace.finished_6 (
    bucket smallint NOT NULL,
    id bigint NOT NULL,
    attempt integer NOT NULL,
    state smallint NOT NULL,
    queue text NOT NULL,
    kind text NOT NULL,
    args jsonb NOT NULL,
    priority smallint NOT NULL,
    max_attempts integer NOT NULL,
    created_at timestamp with time zone NOT NULL,
    started_at timestamp with time zone,
    finished_at timestamp with time zone NOT NULL,
    error text,
    owner integer NOT NULL
)
WITH (autovacuum_enabled='false', toast.autovacuum_enabled='false');


--
-- Name: finished_60; Type: TABLE; Schema: millrace; Owner: -
--

CREATE TABLE millrace.finished_60 (
    bucket smallint NOT NULL,
    id bigint NOT NULL,
    attempt integer NOT NULL,
    state smallint NOT NULL,
    queue text NOT NULL,
    kind text NOT NULL,
    args jsonb NOT NULL,
    priority smallint NOT NULL,
    max_attempts integer NOT NULL,
    created_at timestamp with time zone NOT NULL,
    started_at timestamp with time zone,
    finished_at timestamp with time zone NOT NULL,
    error text,
    owner integer NOT NULL
)
WITH (autovacuum_enabled='false', toast.autovacuum_enabled='false');


--
-- Name: finished_61; Type: TABLE; Schema: millrace; Owner: -
--

CREATE TABLE millrace.finished_61 (
    bucket smallint NOT NULL,
    id bigint NOT NULL,
    attempt integer NOT NULL,
    state smallint NOT NULL,
    queue text NOT NULL,
    kind text NOT NULL,
    args jsonb NOT NULL,
    priority smallint NOT NULL,
    max_attempts integer NOT NULL,
    created_at timestamp with time zone NOT NULL,
    started_at timestamp with time zone,
    finished_at timestamp with time zone NOT NULL,
    error text,
    owner integer NOT NULL
)
WITH (autovacuum_enabled='false', toast.autovacuum_enabled='false');


--
-- Name: finished_62; Type: TABLE; Schema: millrace; Owner: -
--

CREATE TABLE millrace.finished_62 (
    bucket smallint NOT NULL,
    id bigint NOT NULL,
    attempt integer NOT NULL,
    state smallint NOT NULL,
    queue text NOT NULL,
    kind text NOT NULL,
    args jsonb NOT NULL,
    priority smallint NOT NULL,
    max_attempts integer NOT NULL,
    created_at timestamp with time zone NOT NULL,
    started_at timestamp with time zone,
    finished_at timestamp with time zone NOT NULL,
    error text,
    owner integer NOT NULL
)
WITH (autovacuum_enabled='false', toast.autovacuum_enabled='false');


--
-- Name: finished_63; Type: TABLE; Schema: millrace; Owner: -
--

CREATE TABLE millrace.finished_63 (
    bucket smallint NOT NULL,
    id bigint NOT NULL,
    attempt integer NOT NULL,
    state smallint NOT NULL,
    queue text NOT NULL,
    kind text NOT NULL,
    args jsonb NOT NULL,
    priority smallint NOT NULL,
    max_attempts integer NOT NULL,
    created_at timestamp with time zone NOT NULL,
    started_at timestamp with time zone,
    finished_at timestamp with time zone NOT NULL,
    error text,
    owner integer NOT NULL
)
WITH (autovacuum_enabled='false', toast.autovacuum_enabled='false');


--
-- Name: finished_64; Type: TABLE; Schema: millrace; Owner: -
--

CREATE TABLE millrace.finished_64 (
    bucket smallint NOT NULL,
    id bigint NOT NULL,
    attempt integer NOT NULL,
    state smallint NOT NULL,
    queue text NOT NULL,
    kind text NOT NULL,
    args jsonb NOT NULL,
    priority smallint NOT NULL,
    max_attempts integer NOT NULL,
    created_at timestamp with time zone NOT NULL,
    started_at timestamp with time zone,
    finished_at timestamp with time zone NOT NULL,
    error text,
    owner integer NOT NULL
)
WITH (autovacuum_enabled='false', toast.autovacuum_enabled='false');


--
-- Name: finished_65; Type: TABLE; Schema: millrace; Owner: -
--

CREATE TABLE millrace.finished_65 (
    bucket smallint NOT NULL,
    id bigint NOT NULL,
    attempt integer NOT NULL,
    state smallint NOT NULL,
    queue text NOT NULL,
    kind text NOT NULL,
    args jsonb NOT NULL,
    priority smallint NOT NULL,
    max_attempts integer NOT NULL,
    created_at timestamp with time zone NOT NULL,
    started_at timestamp with time zone,
    finished_at timestamp with time zone NOT NULL,
    error text,
    owner integer NOT NULL
)
WITH (autovacuum_enabled='false', toast.autovacuum_enabled='false');


--
-- Name: finished_66; Type: TABLE; Schema: millrace; Owner: -
--

CREATE TABLE millrace.finished_66 (
    bucket smallint NOT NULL,
    id bigint NOT NULL,
    attempt integer NOT NULL,
    state smallint NOT NULL,
    queue text NOT NULL,
    kind text NOT NULL,
    args jsonb NOT NULL,
    priority smallint NOT NULL,
    max_attempts integer NOT NULL,
    created_at timestamp with time zone NOT NULL,
    started_at timestamp with time zone,
    finished_at timestamp with time zone NOT NULL,
    error text,
    owner integer NOT NULL
)
WITH (autovacuum_enabled='false', toast.autovacuum_enabled='false');


--
-- Name: finished_67; Type: TABLE; Schema: millrace; Owner: -
--

CREATE TABLE millrace.finished_67 (
    bucket smallint NOT NULL,
    id bigint NOT NULL,
    attempt integer NOT NULL,
    state smallint NOT NULL,
    queue text NOT NULL,
    kind text NOT NULL,
    args jsonb NOT NULL,
    priority smallint NOT NULL,
    max_attempts integer NOT NULL,
    created_at timestamp with time zone NOT NULL,
    started_at timestamp with time zone,
    finished_at timestamp with time zone NOT NULL,
    error text,
    owner integer NOT NULL
)
WITH (autovacuum_enabled='false', toast.autovacuum_enabled='false');


--
-- Name: finished_7; Type: TABLE; Schema: millrace; Owner: -
--

CREATE TABLE millrace.finished_7 (
    bucket smallint NOT NULL,
    id bigint NOT NULL,
    attempt integer NOT NULL,
    state smallint NOT NULL,
    queue text NOT NULL,
    kind text NOT NULL,
    args jsonb NOT NULL,
    priority smallint NOT NULL,
    max_attempts integer NOT NULL,
    created_at timestamp with time zone NOT NULL,
    started_at timestamp with time zone,
    finished_at timestamp with time zone NOT NULL,
    error text,
    owner integer NOT NULL
)
WITH (autovacuum_enabled='false', toast.autovacuum_enabled='false');


--
-- Name: finished_8; Type: TABLE; Schema: millrace; Owner: -
--

CREATE TABLE millrace.finished_8 (
    bucket smallint NOT NULL,
    id bigint NOT NULL,
    attempt integer NOT NULL,
    state smallint NOT NULL,
    queue text NOT NULL,
    kind text NOT NULL,
    args jsonb NOT NULL,
    priority smallint NOT NULL,
    max_attempts integer NOT NULL,
    created_at timestamp with time zone NOT NULL,
    started_at timestamp with time zone,
    finished_at timestamp with time zone NOT NULL,
    error text,
    owner integer NOT NULL
)
WITH (autovacuum_enabled='false', toast.autovacuum_enabled='false');


--
-- Name: finished_9; Type: TABLE; Schema: millrace; Owner: -
--

CREATE TABLE millrace.finished_9 (
    bucket smallint NOT NULL,
    id bigint NOT NULL,
    attempt integer NOT NULL,
    state smallint NOT NULL,
    queue text NOT NULL,
    kind text NOT NULL,
    args jsonb NOT NULL,
    priority smallint NOT NULL,
    max_attempts integer NOT NULL,
    created_at timestamp with time zone NOT NULL,
    started_at timestamp with time zone,
    finished_at timestamp with time zone NOT NULL,
    error text,
    owner integer NOT NULL
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
-- Name: history; Type: VIEW; Schema: millrace; Owner: -
--

CREATE VIEW millrace.history AS
 SELECT h.id,
    h.attempt,
    (ARRAY['completed'::text, 'failed'::text, 'discarded'::text, 'cancelled'::text, 'snoozed'::text])[h.state] AS state,
    h.queue,
    h.kind,
    h.args,
    h.priority,
    h.max_attempts,
    h.created_at,
    h.started_at,
    h.finished_at,
    h.error,
    h.owner
   FROM millrace.finished h;


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
    txid xid8 DEFAULT pg_current_xact_id() NOT NULL,
    ready_at timestamp with time zone DEFAULT now() NOT NULL,
    timeout_ms integer DEFAULT 0 NOT NULL
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
    txid xid8 DEFAULT pg_current_xact_id() NOT NULL,
    ready_at timestamp with time zone DEFAULT now() NOT NULL,
    timeout_ms integer DEFAULT 0 NOT NULL
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
    txid xid8 DEFAULT pg_current_xact_id() NOT NULL,
    ready_at timestamp with time zone DEFAULT now() NOT NULL,
    timeout_ms integer DEFAULT 0 NOT NULL
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
    txid xid8 DEFAULT pg_current_xact_id() NOT NULL,
    ready_at timestamp with time zone DEFAULT now() NOT NULL,
    timeout_ms integer DEFAULT 0 NOT NULL
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
-- Name: periodic; Type: TABLE; Schema: millrace; Owner: -
--

CREATE TABLE millrace.periodic (
    name text NOT NULL,
    slot_at timestamp with time zone NOT NULL,
    job_id bigint NOT NULL,
    at timestamp with time zone DEFAULT now() NOT NULL
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
-- Name: queue_state_seq; Type: SEQUENCE; Schema: millrace; Owner: -
--

CREATE SEQUENCE millrace.queue_state_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1;


--
-- Name: queue_state; Type: TABLE; Schema: millrace; Owner: -
--

CREATE TABLE millrace.queue_state (
    id bigint DEFAULT nextval('millrace.queue_state_seq'::regclass) NOT NULL,
    queue text NOT NULL,
    paused boolean NOT NULL,
    at timestamp with time zone DEFAULT now() NOT NULL
);


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
    txid xid8 DEFAULT pg_current_xact_id() NOT NULL,
    timeout_ms integer DEFAULT 0 NOT NULL
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
    txid xid8 DEFAULT pg_current_xact_id() NOT NULL,
    timeout_ms integer DEFAULT 0 NOT NULL
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
    txid xid8 DEFAULT pg_current_xact_id() NOT NULL,
    timeout_ms integer DEFAULT 0 NOT NULL
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
    at timestamp with time zone DEFAULT now() NOT NULL,
    priority smallint DEFAULT 0 NOT NULL
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
    at timestamp with time zone DEFAULT now() NOT NULL,
    priority smallint DEFAULT 0 NOT NULL
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
    at timestamp with time zone DEFAULT now() NOT NULL,
    priority smallint DEFAULT 0 NOT NULL
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
    at timestamp with time zone DEFAULT now() NOT NULL,
    priority smallint DEFAULT 0 NOT NULL
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
    at timestamp with time zone DEFAULT now() NOT NULL,
    priority smallint DEFAULT 0 NOT NULL
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
-- Name: uniq; Type: TABLE; Schema: millrace; Owner: -
--

CREATE TABLE millrace.uniq (
    slot smallint NOT NULL,
    key text NOT NULL,
    job_id bigint NOT NULL,
    states integer NOT NULL,
    until timestamp with time zone,
    at timestamp with time zone DEFAULT now() NOT NULL
)
PARTITION BY LIST (slot);


--
-- Name: uniq_0; Type: TABLE; Schema: millrace; Owner: -
--

CREATE TABLE millrace.uniq_0 (
    slot smallint NOT NULL,
    key text NOT NULL,
    job_id bigint NOT NULL,
    states integer NOT NULL,
    until timestamp with time zone,
    at timestamp with time zone DEFAULT now() NOT NULL
)
WITH (autovacuum_enabled='false', toast.autovacuum_enabled='false');


--
-- Name: uniq_1; Type: TABLE; Schema: millrace; Owner: -
--

CREATE TABLE millrace.uniq_1 (
    slot smallint NOT NULL,
    key text NOT NULL,
    job_id bigint NOT NULL,
    states integer NOT NULL,
    until timestamp with time zone,
    at timestamp with time zone DEFAULT now() NOT NULL
)
WITH (autovacuum_enabled='false', toast.autovacuum_enabled='false');


--
-- Name: uniq_2; Type: TABLE; Schema: millrace; Owner: -
--

CREATE TABLE millrace.uniq_2 (
    slot smallint NOT NULL,
    key text NOT NULL,
    job_id bigint NOT NULL,
    states integer NOT NULL,
    until timestamp with time zone,
    at timestamp with time zone DEFAULT now() NOT NULL
)
WITH (autovacuum_enabled='false', toast.autovacuum_enabled='false');


--
-- Name: uniq_3; Type: TABLE; Schema: millrace; Owner: -
--

CREATE TABLE millrace.uniq_3 (
    slot smallint NOT NULL,
    key text NOT NULL,
    job_id bigint NOT NULL,
    states integer NOT NULL,
    until timestamp with time zone,
    at timestamp with time zone DEFAULT now() NOT NULL
)
WITH (autovacuum_enabled='false', toast.autovacuum_enabled='false');


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
-- Name: cancel_0; Type: TABLE ATTACH; Schema: millrace; Owner: -
--

ALTER TABLE ONLY millrace.cancel ATTACH PARTITION millrace.cancel_0 FOR VALUES IN ('0');


--
-- Name: cancel_1; Type: TABLE ATTACH; Schema: millrace; Owner: -
--

ALTER TABLE ONLY millrace.cancel ATTACH PARTITION millrace.cancel_1 FOR VALUES IN ('1');


--
-- Name: cancel_2; Type: TABLE ATTACH; Schema: millrace; Owner: -
--

ALTER TABLE ONLY millrace.cancel ATTACH PARTITION millrace.cancel_2 FOR VALUES IN ('2');


--
-- Name: cancel_3; Type: TABLE ATTACH; Schema: millrace; Owner: -
--

ALTER TABLE ONLY millrace.cancel ATTACH PARTITION millrace.cancel_3 FOR VALUES IN ('3');


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
-- Name: finished_0; Type: TABLE ATTACH; Schema: millrace; Owner: -
--

ALTER TABLE ONLY millrace.finished ATTACH PARTITION millrace.finished_0 FOR VALUES IN ('0');


--
-- Name: finished_1; Type: TABLE ATTACH; Schema: millrace; Owner: -
--

ALTER TABLE ONLY millrace.finished ATTACH PARTITION millrace.finished_1 FOR VALUES IN ('1');


--
-- Name: finished_10; Type: TABLE ATTACH; Schema: millrace; Owner: -
--

ALTER TABLE ONLY millrace.finished ATTACH PARTITION millrace.finished_10 FOR VALUES IN ('10');


--
-- Name: finished_11; Type: TABLE ATTACH; Schema: millrace; Owner: -
--

ALTER TABLE ONLY millrace.finished ATTACH PARTITION millrace.finished_11 FOR VALUES IN ('11');


--
-- Name: finished_12; Type: TABLE ATTACH; Schema: millrace; Owner: -
--

ALTER TABLE ONLY millrace.finished ATTACH PARTITION millrace.finished_12 FOR VALUES IN ('12');


--
-- Name: finished_13; Type: TABLE ATTACH; Schema: millrace; Owner: -
--

ALTER TABLE ONLY millrace.finished ATTACH PARTITION millrace.finished_13 FOR VALUES IN ('13');


--
-- Name: finished_14; Type: TABLE ATTACH; Schema: millrace; Owner: -
--

ALTER TABLE ONLY millrace.finished ATTACH PARTITION millrace.finished_14 FOR VALUES IN ('14');


--
-- Name: finished_15; Type: TABLE ATTACH; Schema: millrace; Owner: -
--

ALTER TABLE ONLY millrace.finished ATTACH PARTITION millrace.finished_15 FOR VALUES IN ('15');


--
-- Name: finished_16; Type: TABLE ATTACH; Schema: millrace; Owner: -
--

ALTER TABLE ONLY millrace.finished ATTACH PARTITION millrace.finished_16 FOR VALUES IN ('16');


--
-- Name: finished_17; Type: TABLE ATTACH; Schema: millrace; Owner: -
--

ALTER TABLE ONLY millrace.finished ATTACH PARTITION millrace.finished_17 FOR VALUES IN ('17');


--
-- Name: finished_18; Type: TABLE ATTACH; Schema: millrace; Owner: -
--

ALTER TABLE ONLY millrace.finished ATTACH PARTITION millrace.finished_18 FOR VALUES IN ('18');


--
-- Name: finished_19; Type: TABLE ATTACH; Schema: millrace; Owner: -
--

ALTER TABLE ONLY millrace.finished ATTACH PARTITION millrace.finished_19 FOR VALUES IN ('19');


--
-- Name: finished_2; Type: TABLE ATTACH; Schema: millrace; Owner: -
--

ALTER TABLE ONLY millrace.finished ATTACH PARTITION millrace.finished_2 FOR VALUES IN ('2');


--
-- Name: finished_20; Type: TABLE ATTACH; Schema: millrace; Owner: -
--

ALTER TABLE ONLY millrace.finished ATTACH PARTITION millrace.finished_20 FOR VALUES IN ('20');


--
-- Name: finished_21; Type: TABLE ATTACH; Schema: millrace; Owner: -
--

ALTER TABLE ONLY millrace.finished ATTACH PARTITION millrace.finished_21 FOR VALUES IN ('21');


--
-- Name: finished_22; Type: TABLE ATTACH; Schema: millrace; Owner: -
--

ALTER TABLE ONLY millrace.finished ATTACH PARTITION millrace.finished_22 FOR VALUES IN ('22');


--
-- Name: finished_23; Type: TABLE ATTACH; Schema: millrace; Owner: -
--

ALTER TABLE ONLY millrace.finished ATTACH PARTITION millrace.finished_23 FOR VALUES IN ('23');


--
-- Name: finished_24; Type: TABLE ATTACH; Schema: millrace; Owner: -
--

ALTER TABLE ONLY millrace.finished ATTACH PARTITION millrace.finished_24 FOR VALUES IN ('24');


--
-- Name: finished_25; Type: TABLE ATTACH; Schema: millrace; Owner: -
--

ALTER TABLE ONLY millrace.finished ATTACH PARTITION millrace.finished_25 FOR VALUES IN ('25');


--
-- Name: finished_26; Type: TABLE ATTACH; Schema: millrace; Owner: -
--

ALTER TABLE ONLY millrace.finished ATTACH PARTITION millrace.finished_26 FOR VALUES IN ('26');


--
-- Name: finished_27; Type: TABLE ATTACH; Schema: millrace; Owner: -
--

ALTER TABLE ONLY millrace.finished ATTACH PARTITION millrace.finished_27 FOR VALUES IN ('27');


--
-- Name: finished_28; Type: TABLE ATTACH; Schema: millrace; Owner: -
--

ALTER TABLE ONLY millrace.finished ATTACH PARTITION millrace.finished_28 FOR VALUES IN ('28');


--
-- Name: finished_29; Type: TABLE ATTACH; Schema: millrace; Owner: -
--

ALTER TABLE ONLY millrace.finished ATTACH PARTITION millrace.finished_29 FOR VALUES IN ('29');


--
-- Name: finished_3; Type: TABLE ATTACH; Schema: millrace; Owner: -
--

ALTER TABLE ONLY millrace.finished ATTACH PARTITION millrace.finished_3 FOR VALUES IN ('3');


--
-- Name: finished_30; Type: TABLE ATTACH; Schema: millrace; Owner: -
--

ALTER TABLE ONLY millrace.finished ATTACH PARTITION millrace.finished_30 FOR VALUES IN ('30');


--
-- Name: finished_31; Type: TABLE ATTACH; Schema: millrace; Owner: -
--

ALTER TABLE ONLY millrace.finished ATTACH PARTITION millrace.finished_31 FOR VALUES IN ('31');


--
-- Name: finished_32; Type: TABLE ATTACH; Schema: millrace; Owner: -
--

ALTER TABLE ONLY millrace.finished ATTACH PARTITION millrace.finished_32 FOR VALUES IN ('32');


--
-- Name: finished_33; Type: TABLE ATTACH; Schema: millrace; Owner: -
--

ALTER TABLE ONLY millrace.finished ATTACH PARTITION millrace.finished_33 FOR VALUES IN ('33');


--
-- Name: finished_34; Type: TABLE ATTACH; Schema: millrace; Owner: -
--

ALTER TABLE ONLY millrace.finished ATTACH PARTITION millrace.finished_34 FOR VALUES IN ('34');


--
-- Name: finished_35; Type: TABLE ATTACH; Schema: millrace; Owner: -
--

ALTER TABLE ONLY millrace.finished ATTACH PARTITION millrace.finished_35 FOR VALUES IN ('35');


--
-- Name: finished_36; Type: TABLE ATTACH; Schema: millrace; Owner: -
--

ALTER TABLE ONLY millrace.finished ATTACH PARTITION millrace.finished_36 FOR VALUES IN ('36');


--
-- Name: finished_37; Type: TABLE ATTACH; Schema: millrace; Owner: -
--

ALTER TABLE ONLY millrace.finished ATTACH PARTITION millrace.finished_37 FOR VALUES IN ('37');


--
-- Name: finished_38; Type: TABLE ATTACH; Schema: millrace; Owner: -
--

ALTER TABLE ONLY millrace.finished ATTACH PARTITION millrace.finished_38 FOR VALUES IN ('38');


--
-- Name: finished_39; Type: TABLE ATTACH; Schema: millrace; Owner: -
--

ALTER TABLE ONLY millrace.finished ATTACH PARTITION millrace.finished_39 FOR VALUES IN ('39');


--
-- Name: finished_4; Type: TABLE ATTACH; Schema: millrace; Owner: -
--

ALTER TABLE ONLY millrace.finished ATTACH PARTITION millrace.finished_4 FOR VALUES IN ('4');


--
-- Name: finished_40; Type: TABLE ATTACH; Schema: millrace; Owner: -
--

ALTER TABLE ONLY millrace.finished ATTACH PARTITION millrace.finished_40 FOR VALUES IN ('40');


--
-- Name: finished_41; Type: TABLE ATTACH; Schema: millrace; Owner: -
--

ALTER TABLE ONLY millrace.finished ATTACH PARTITION millrace.finished_41 FOR VALUES IN ('41');


--
-- Name: finished_42; Type: TABLE ATTACH; Schema: millrace; Owner: -
--

ALTER TABLE ONLY millrace.finished ATTACH PARTITION millrace.finished_42 FOR VALUES IN ('42');


--
-- Name: finished_43; Type: TABLE ATTACH; Schema: millrace; Owner: -
--

ALTER TABLE ONLY millrace.finished ATTACH PARTITION millrace.finished_43 FOR VALUES IN ('43');


--
-- Name: finished_44; Type: TABLE ATTACH; Schema: millrace; Owner: -
--

ALTER TABLE ONLY millrace.finished ATTACH PARTITION millrace.finished_44 FOR VALUES IN ('44');


--
-- Name: finished_45; Type: TABLE ATTACH; Schema: millrace; Owner: -
--

ALTER TABLE ONLY millrace.finished ATTACH PARTITION millrace.finished_45 FOR VALUES IN ('45');


--
-- Name: finished_46; Type: TABLE ATTACH; Schema: millrace; Owner: -
--

ALTER TABLE ONLY millrace.finished ATTACH PARTITION millrace.finished_46 FOR VALUES IN ('46');


--
-- Name: finished_47; Type: TABLE ATTACH; Schema: millrace; Owner: -
--

ALTER TABLE ONLY millrace.finished ATTACH PARTITION millrace.finished_47 FOR VALUES IN ('47');


--
-- Name: finished_48; Type: TABLE ATTACH; Schema: millrace; Owner: -
--

ALTER TABLE ONLY millrace.finished ATTACH PARTITION millrace.finished_48 FOR VALUES IN ('48');


--
-- Name: finished_49; Type: TABLE ATTACH; Schema: millrace; Owner: -
--

ALTER TABLE ONLY millrace.finished ATTACH PARTITION millrace.finished_49 FOR VALUES IN ('49');


--
-- Name: finished_5; Type: TABLE ATTACH; Schema: millrace; Owner: -
--

ALTER TABLE ONLY millrace.finished ATTACH PARTITION millrace.finished_5 FOR VALUES IN ('5');


--
-- Name: finished_50; Type: TABLE ATTACH; Schema: millrace; Owner: -
--

ALTER TABLE ONLY millrace.finished ATTACH PARTITION millrace.finished_50 FOR VALUES IN ('50');


--
-- Name: finished_51; Type: TABLE ATTACH; Schema: millrace; Owner: -
--

ALTER TABLE ONLY millrace.finished ATTACH PARTITION millrace.finished_51 FOR VALUES IN ('51');


--
-- Name: finished_52; Type: TABLE ATTACH; Schema: millrace; Owner: -
--

ALTER TABLE ONLY millrace.finished ATTACH PARTITION millrace.finished_52 FOR VALUES IN ('52');


--
-- Name: finished_53; Type: TABLE ATTACH; Schema: millrace; Owner: -
--

ALTER TABLE ONLY millrace.finished ATTACH PARTITION millrace.finished_53 FOR VALUES IN ('53');


--
-- Name: finished_54; Type: TABLE ATTACH; Schema: millrace; Owner: -
--

ALTER TABLE ONLY millrace.finished ATTACH PARTITION millrace.finished_54 FOR VALUES IN ('54');


--
-- Name: finished_55; Type: TABLE ATTACH; Schema: millrace; Owner: -
--

ALTER TABLE ONLY millrace.finished ATTACH PARTITION millrace.finished_55 FOR VALUES IN ('55');


--
-- Name: finished_56; Type: TABLE ATTACH; Schema: millrace; Owner: -
--

ALTER TABLE ONLY millrace.finished ATTACH PARTITION millrace.finished_56 FOR VALUES IN ('56');


--
-- Name: finished_57; Type: TABLE ATTACH; Schema: millrace; Owner: -
--

ALTER TABLE ONLY millrace.finished ATTACH PARTITION millrace.finished_57 FOR VALUES IN ('57');


--
-- Name: finished_58; Type: TABLE ATTACH; Schema: millrace; Owner: -
--

ALTER TABLE ONLY millrace.finished ATTACH PARTITION millrace.finished_58 FOR VALUES IN ('58');


--
-- Name: finished_59; Type: TABLE ATTACH; Schema: millrace; Owner: -
--

ALTER TABLE ONLY millrace.finished ATTACH PARTITION millrace.finished_59 FOR VALUES IN ('59');


--
-- Name: finished_6; Type: TABLE ATTACH; Schema: millrace; Owner: -
--

ALTER TABLE ONLY millrace.finished ATTACH PARTITION millrace.finished_6 FOR VALUES IN ('6');


--
-- Name: finished_60; Type: TABLE ATTACH; Schema: millrace; Owner: -
--

ALTER TABLE ONLY millrace.finished ATTACH PARTITION millrace.finished_60 FOR VALUES IN ('60');


--
-- Name: finished_61; Type: TABLE ATTACH; Schema: millrace; Owner: -
--

ALTER TABLE ONLY millrace.finished ATTACH PARTITION millrace.finished_61 FOR VALUES IN ('61');


--
-- Name: finished_62; Type: TABLE ATTACH; Schema: millrace; Owner: -
--

ALTER TABLE ONLY millrace.finished ATTACH PARTITION millrace.finished_62 FOR VALUES IN ('62');


--
-- Name: finished_63; Type: TABLE ATTACH; Schema: millrace; Owner: -
--

ALTER TABLE ONLY millrace.finished ATTACH PARTITION millrace.finished_63 FOR VALUES IN ('63');


--
-- Name: finished_64; Type: TABLE ATTACH; Schema: millrace; Owner: -
--

ALTER TABLE ONLY millrace.finished ATTACH PARTITION millrace.finished_64 FOR VALUES IN ('64');


--
-- Name: finished_65; Type: TABLE ATTACH; Schema: millrace; Owner: -
--

ALTER TABLE ONLY millrace.finished ATTACH PARTITION millrace.finished_65 FOR VALUES IN ('65');


--
-- Name: finished_66; Type: TABLE ATTACH; Schema: millrace; Owner: -
--

ALTER TABLE ONLY millrace.finished ATTACH PARTITION millrace.finished_66 FOR VALUES IN ('66');


--
-- Name: finished_67; Type: TABLE ATTACH; Schema: millrace; Owner: -
--

ALTER TABLE ONLY millrace.finished ATTACH PARTITION millrace.finished_67 FOR VALUES IN ('67');


--
-- Name: finished_7; Type: TABLE ATTACH; Schema: millrace; Owner: -
--

ALTER TABLE ONLY millrace.finished ATTACH PARTITION millrace.finished_7 FOR VALUES IN ('7');


--
-- Name: finished_8; Type: TABLE ATTACH; Schema: millrace; Owner: -
--

ALTER TABLE ONLY millrace.finished ATTACH PARTITION millrace.finished_8 FOR VALUES IN ('8');


--
-- Name: finished_9; Type: TABLE ATTACH; Schema: millrace; Owner: -
--

ALTER TABLE ONLY millrace.finished ATTACH PARTITION millrace.finished_9 FOR VALUES IN ('9');


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
-- Name: uniq_0; Type: TABLE ATTACH; Schema: millrace; Owner: -
--

ALTER TABLE ONLY millrace.uniq ATTACH PARTITION millrace.uniq_0 FOR VALUES IN ('0');


--
-- Name: uniq_1; Type: TABLE ATTACH; Schema: millrace; Owner: -
--

ALTER TABLE ONLY millrace.uniq ATTACH PARTITION millrace.uniq_1 FOR VALUES IN ('1');


--
-- Name: uniq_2; Type: TABLE ATTACH; Schema: millrace; Owner: -
--

ALTER TABLE ONLY millrace.uniq ATTACH PARTITION millrace.uniq_2 FOR VALUES IN ('2');


--
-- Name: uniq_3; Type: TABLE ATTACH; Schema: millrace; Owner: -
--

ALTER TABLE ONLY millrace.uniq ATTACH PARTITION millrace.uniq_3 FOR VALUES IN ('3');


--
-- Data for Name: ack_0; Type: TABLE DATA; Schema: millrace; Owner: -
--

INSERT INTO millrace.ack_0 VALUES (0, 1, 1, 1, 1, 1, '2026-11-25 18:36:15.133368+00', NULL);
INSERT INTO millrace.ack_0 VALUES (0, 2, 1, 1, 3, 1, '2026-11-25 18:36:15.133368+00', 'boom');
INSERT INTO millrace.ack_0 VALUES (0, 3, 1, 1, 2, 1, '2026-11-25 18:36:15.133368+00', 'again');


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
-- Data for Name: cancel_0; Type: TABLE DATA; Schema: millrace; Owner: -
--

INSERT INTO millrace.cancel_0 VALUES (0, 8, '2026-11-25 18:36:15.177331+00');


--
-- Data for Name: cancel_1; Type: TABLE DATA; Schema: millrace; Owner: -
--



--
-- Data for Name: cancel_2; Type: TABLE DATA; Schema: millrace; Owner: -
--



--
-- Data for Name: cancel_3; Type: TABLE DATA; Schema: millrace; Owner: -
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
-- Data for Name: finished_0; Type: TABLE DATA; Schema: millrace; Owner: -
--



--
-- Data for Name: finished_1; Type: TABLE DATA; Schema: millrace; Owner: -
--



--
-- Data for Name: finished_10; Type: TABLE DATA; Schema: millrace; Owner: -
--



--
-- Data for Name: finished_11; Type: TABLE DATA; Schema: millrace; Owner: -
--



--
-- Data for Name: finished_12; Type: TABLE DATA; Schema: millrace; Owner: -
--



--
-- Data for Name: finished_13; Type: TABLE DATA; Schema: millrace; Owner: -
--



--
-- Data for Name: finished_14; Type: TABLE DATA; Schema: millrace; Owner: -
--



--
-- Data for Name: finished_15; Type: TABLE DATA; Schema: millrace; Owner: -
--



--
-- Data for Name: finished_16; Type: TABLE DATA; Schema: millrace; Owner: -
--



--
-- Data for Name: finished_17; Type: TABLE DATA; Schema: millrace; Owner: -
--



--
-- Data for Name: finished_18; Type: TABLE DATA; Schema: millrace; Owner: -
--



--
-- Data for Name: finished_19; Type: TABLE DATA; Schema: millrace; Owner: -
--



--
-- Data for Name: finished_2; Type: TABLE DATA; Schema: millrace; Owner: -
--



--
-- Data for Name: finished_20; Type: TABLE DATA; Schema: millrace; Owner: -
--



--
-- Data for Name: finished_21; Type: TABLE DATA; Schema: millrace; Owner: -
--

INSERT INTO millrace.finished_21 VALUES (21, 1, 1, 1, 'w', 'k', '{"n": 1}', 0, 25, '2026-11-25 18:36:15.031932+00', '2026-11-25 18:36:15.12665+00', '2026-11-25 18:36:15.12665+00', NULL, 1);


--
-- Data for Name: finished_22; Type: TABLE DATA; Schema: millrace; Owner: -
--



--
-- Data for Name: finished_23; Type: TABLE DATA; Schema: millrace; Owner: -
--



--
-- Data for Name: finished_24; Type: TABLE DATA; Schema: millrace; Owner: -
--



--
-- Data for Name: finished_25; Type: TABLE DATA; Schema: millrace; Owner: -
--



--
-- Data for Name: finished_26; Type: TABLE DATA; Schema: millrace; Owner: -
--



--
-- Data for Name: finished_27; Type: TABLE DATA; Schema: millrace; Owner: -
--



--
-- Data for Name: finished_28; Type: TABLE DATA; Schema: millrace; Owner: -
--



--
-- Data for Name: finished_29; Type: TABLE DATA; Schema: millrace; Owner: -
--



--
-- Data for Name: finished_3; Type: TABLE DATA; Schema: millrace; Owner: -
--



--
-- Data for Name: finished_30; Type: TABLE DATA; Schema: millrace; Owner: -
--



--
-- Data for Name: finished_31; Type: TABLE DATA; Schema: millrace; Owner: -
--



--
-- Data for Name: finished_32; Type: TABLE DATA; Schema: millrace; Owner: -
--



--
-- Data for Name: finished_33; Type: TABLE DATA; Schema: millrace; Owner: -
--



--
-- Data for Name: finished_34; Type: TABLE DATA; Schema: millrace; Owner: -
--



--
-- Data for Name: finished_35; Type: TABLE DATA; Schema: millrace; Owner: -
--



--
-- Data for Name: finished_36; Type: TABLE DATA; Schema: millrace; Owner: -
--



--
-- Data for Name: finished_37; Type: TABLE DATA; Schema: millrace; Owner: -
--



--
-- Data for Name: finished_38; Type: TABLE DATA; Schema: millrace; Owner: -
--



--
-- Data for Name: finished_39; Type: TABLE DATA; Schema: millrace; Owner: -
--



--
-- Data for Name: finished_4; Type: TABLE DATA; Schema: millrace; Owner: -
--



--
-- Data for Name: finished_40; Type: TABLE DATA; Schema: millrace; Owner: -
--



--
-- Data for Name: finished_41; Type: TABLE DATA; Schema: millrace; Owner: -
--



--
-- Data for Name: finished_42; Type: TABLE DATA; Schema: millrace; Owner: -
--



--
-- Data for Name: finished_43; Type: TABLE DATA; Schema: millrace; Owner: -
--



--
-- Data for Name: finished_44; Type: TABLE DATA; Schema: millrace; Owner: -
--



--
-- Data for Name: finished_45; Type: TABLE DATA; Schema: millrace; Owner: -
--



--
-- Data for Name: finished_46; Type: TABLE DATA; Schema: millrace; Owner: -
--



--
-- Data for Name: finished_47; Type: TABLE DATA; Schema: millrace; Owner: -
--



--
-- Data for Name: finished_48; Type: TABLE DATA; Schema: millrace; Owner: -
--



--
-- Data for Name: finished_49; Type: TABLE DATA; Schema: millrace; Owner: -
--



--
-- Data for Name: finished_5; Type: TABLE DATA; Schema: millrace; Owner: -
--



--
-- Data for Name: finished_50; Type: TABLE DATA; Schema: millrace; Owner: -
--

INSERT INTO millrace.finished_50 VALUES (50, 2, 1, 3, 'w', 'k', '{"n": 2}', 0, 1, '2026-11-25 18:36:15.031932+00', '2026-11-25 18:36:15.12665+00', '2026-11-25 18:36:15.12665+00', 'boom', 1);
INSERT INTO millrace.finished_50 VALUES (50, 3, 1, 2, 'w', 'k', '{"n": 3}', 0, 5, '2026-11-25 18:36:15.031932+00', '2026-11-25 18:36:15.12665+00', '2026-11-25 18:36:15.12665+00', 'again', 1);
INSERT INTO millrace.finished_50 VALUES (50, 8, 0, 4, 'q', 'k', '{"n": 8}', 0, 25, '2026-11-25 18:36:15.031932+00', NULL, '2026-11-25 18:36:15.282808+00', 'cancelled before it ran', 0);


--
-- Data for Name: finished_51; Type: TABLE DATA; Schema: millrace; Owner: -
--



--
-- Data for Name: finished_52; Type: TABLE DATA; Schema: millrace; Owner: -
--



--
-- Data for Name: finished_53; Type: TABLE DATA; Schema: millrace; Owner: -
--



--
-- Data for Name: finished_54; Type: TABLE DATA; Schema: millrace; Owner: -
--



--
-- Data for Name: finished_55; Type: TABLE DATA; Schema: millrace; Owner: -
--



--
-- Data for Name: finished_56; Type: TABLE DATA; Schema: millrace; Owner: -
--



--
-- Data for Name: finished_57; Type: TABLE DATA; Schema: millrace; Owner: -
--



--
-- Data for Name: finished_58; Type: TABLE DATA; Schema: millrace; Owner: -
--



--
-- Data for Name: finished_59; Type: TABLE DATA; Schema: millrace; Owner: -
--



--
-- Data for Name: finished_6; Type: TABLE DATA; Schema: millrace; Owner: -
--



--
-- Data for Name: finished_60; Type: TABLE DATA; Schema: millrace; Owner: -
--



--
-- Data for Name: finished_61; Type: TABLE DATA; Schema: millrace; Owner: -
--



--
-- Data for Name: finished_62; Type: TABLE DATA; Schema: millrace; Owner: -
--



--
-- Data for Name: finished_63; Type: TABLE DATA; Schema: millrace; Owner: -
--



--
-- Data for Name: finished_64; Type: TABLE DATA; Schema: millrace; Owner: -
--



--
-- Data for Name: finished_65; Type: TABLE DATA; Schema: millrace; Owner: -
--



--
-- Data for Name: finished_66; Type: TABLE DATA; Schema: millrace; Owner: -
--



--
-- Data for Name: finished_67; Type: TABLE DATA; Schema: millrace; Owner: -
--



--
-- Data for Name: finished_7; Type: TABLE DATA; Schema: millrace; Owner: -
--



--
-- Data for Name: finished_8; Type: TABLE DATA; Schema: millrace; Owner: -
--



--
-- Data for Name: finished_9; Type: TABLE DATA; Schema: millrace; Owner: -
--



--
-- Data for Name: flush_0; Type: TABLE DATA; Schema: millrace; Owner: -
--

INSERT INTO millrace.flush_0 VALUES (0, 1, 1, '2026-11-25 18:36:15.133368+00');


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

INSERT INTO millrace.job_0 VALUES (0, 1, 'w', 'k', '{"n": 1}', 0, 0, 25, '2026-11-25 18:36:15.031932+00', '918', '2026-11-25 18:36:15.031932+00', 0);
INSERT INTO millrace.job_0 VALUES (0, 2, 'w', 'k', '{"n": 2}', 0, 0, 1, '2026-11-25 18:36:15.031932+00', '918', '2026-11-25 18:36:15.031932+00', 0);
INSERT INTO millrace.job_0 VALUES (0, 3, 'w', 'k', '{"n": 3}', 0, 0, 5, '2026-11-25 18:36:15.031932+00', '918', '2026-11-25 18:36:15.031932+00', 0);
INSERT INTO millrace.job_0 VALUES (0, 4, 'w', 'k', '{"n": 4}', 0, 0, 25, '2026-11-25 18:36:15.031932+00', '918', '2026-11-25 18:36:15.031932+00', 0);
INSERT INTO millrace.job_0 VALUES (0, 5, 'q', 'k', '{"n": 5}', 0, 0, 25, '2026-11-25 18:36:15.031932+00', '918', '2026-11-25 18:36:15.031932+00', 0);
INSERT INTO millrace.job_0 VALUES (0, 7, 'q', 'k', '{"n": 7}', 0, 0, 25, '2026-11-25 18:36:15.031932+00', '918', '2026-11-25 18:36:15.031932+00', 0);
INSERT INTO millrace.job_0 VALUES (0, 8, 'q', 'k', '{"n": 8}', 0, 0, 25, '2026-11-25 18:36:15.031932+00', '918', '2026-11-25 18:36:15.031932+00', 0);


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

INSERT INTO millrace.migration VALUES (1, 'init', '2026-11-25 18:36:09.529049+00');
INSERT INTO millrace.migration VALUES (2, 'claim_snapshot_first', '2026-11-25 18:36:09.529049+00');
INSERT INTO millrace.migration VALUES (3, 'protocol_v3', '2026-11-25 18:36:09.529049+00');
INSERT INTO millrace.migration VALUES (4, 'roles', '2026-11-25 18:36:09.529049+00');
INSERT INTO millrace.migration VALUES (5, 'semantics', '2026-11-25 18:36:09.529049+00');


--
-- Data for Name: periodic; Type: TABLE DATA; Schema: millrace; Owner: -
--



--
-- Data for Name: process; Type: TABLE DATA; Schema: millrace; Owner: -
--

INSERT INTO millrace.process VALUES (1, 'dump', 'host', 1, '2026-11-25 18:36:15.068878+00');


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
-- Data for Name: queue_state; Type: TABLE DATA; Schema: millrace; Owner: -
--



--
-- Data for Name: reclaim; Type: TABLE DATA; Schema: millrace; Owner: -
--

INSERT INTO millrace.reclaim VALUES (3, 1, 0, 0, '2026-11-25 18:36:09.529049+00');
INSERT INTO millrace.reclaim VALUES (4, 2, 0, 0, '2026-11-25 18:36:09.529049+00');
INSERT INTO millrace.reclaim VALUES (5, 3, 0, 0, '2026-11-25 18:36:09.529049+00');


--
-- Data for Name: rotation; Type: TABLE DATA; Schema: millrace; Owner: -
--

INSERT INTO millrace.rotation VALUES (1, 0, '2026-11-25 18:36:09.529049+00', 0);
INSERT INTO millrace.rotation VALUES (2, 0, '2026-11-25 18:36:09.529049+00', 0);


--
-- Data for Name: sched_0; Type: TABLE DATA; Schema: millrace; Owner: -
--

INSERT INTO millrace.sched_0 VALUES (0, 6, 'q', 'k', '{"n": 6}', 0, 0, 25, '2026-11-25 18:36:15.031932+00', '2036-11-25 18:36:15.02339+00', NULL, '918', 0);
INSERT INTO millrace.sched_0 VALUES (0, 3, 'w', 'k', '{"n": 3}', 0, 1, 5, '2026-11-25 18:36:15.031932+00', '2036-11-25 18:36:15.02339+00', 'again', '921', 0);


--
-- Data for Name: sched_1; Type: TABLE DATA; Schema: millrace; Owner: -
--



--
-- Data for Name: sched_gen; Type: TABLE DATA; Schema: millrace; Owner: -
--

INSERT INTO millrace.sched_gen VALUES (6, 0, 0, 0, '2026-11-25 18:36:09.529049+00');


--
-- Data for Name: tick_0; Type: TABLE DATA; Schema: millrace; Owner: -
--

INSERT INTO millrace.tick_0 VALUES (0, 'w', 1, '1:1:', '920:920:', NULL, NULL, '918', 4, false, 1, 1, 4, false, '2026-11-25 18:36:15.08362+00', 0);


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
-- Data for Name: uniq_0; Type: TABLE DATA; Schema: millrace; Owner: -
--

INSERT INTO millrace.uniq_0 VALUES (0, 'u1', 7, 14, NULL, '2026-11-25 18:36:15.031932+00');


--
-- Data for Name: uniq_1; Type: TABLE DATA; Schema: millrace; Owner: -
--



--
-- Data for Name: uniq_2; Type: TABLE DATA; Schema: millrace; Owner: -
--



--
-- Data for Name: uniq_3; Type: TABLE DATA; Schema: millrace; Owner: -
--



--
-- Name: job_id_seq; Type: SEQUENCE SET; Schema: millrace; Owner: -
--

SELECT pg_catalog.setval('millrace.job_id_seq', 8, true);


--
-- Name: process_id_seq; Type: SEQUENCE SET; Schema: millrace; Owner: -
--

SELECT pg_catalog.setval('millrace.process_id_seq', 1, true);


--
-- Name: queue_state_seq; Type: SEQUENCE SET; Schema: millrace; Owner: -
--

SELECT pg_catalog.setval('millrace.queue_state_seq', 1, false);


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

SELECT pg_catalog.setval('millrace.tick_id_seq', 1, true);


--
-- Name: migration migration_pkey; Type: CONSTRAINT; Schema: millrace; Owner: -
--

ALTER TABLE ONLY millrace.migration
    ADD CONSTRAINT migration_pkey PRIMARY KEY (version);


--
-- Name: periodic periodic_pkey; Type: CONSTRAINT; Schema: millrace; Owner: -
--

ALTER TABLE ONLY millrace.periodic
    ADD CONSTRAINT periodic_pkey PRIMARY KEY (name, slot_at);


--
-- Name: process process_pkey; Type: CONSTRAINT; Schema: millrace; Owner: -
--

ALTER TABLE ONLY millrace.process
    ADD CONSTRAINT process_pkey PRIMARY KEY (id);


--
-- Name: queue_state queue_state_pkey; Type: CONSTRAINT; Schema: millrace; Owner: -
--

ALTER TABLE ONLY millrace.queue_state
    ADD CONSTRAINT queue_state_pkey PRIMARY KEY (id);


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
-- Name: cancel_job; Type: INDEX; Schema: millrace; Owner: -
--

CREATE INDEX cancel_job ON ONLY millrace.cancel USING btree (job_id);


--
-- Name: cancel_0_job_id_idx; Type: INDEX; Schema: millrace; Owner: -
--

CREATE INDEX cancel_0_job_id_idx ON millrace.cancel_0 USING btree (job_id);


--
-- Name: cancel_1_job_id_idx; Type: INDEX; Schema: millrace; Owner: -
--

CREATE INDEX cancel_1_job_id_idx ON millrace.cancel_1 USING btree (job_id);


--
-- Name: cancel_2_job_id_idx; Type: INDEX; Schema: millrace; Owner: -
--

CREATE INDEX cancel_2_job_id_idx ON millrace.cancel_2 USING btree (job_id);


--
-- Name: cancel_3_job_id_idx; Type: INDEX; Schema: millrace; Owner: -
--

CREATE INDEX cancel_3_job_id_idx ON millrace.cancel_3 USING btree (job_id);


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
-- Name: finished_finished; Type: INDEX; Schema: millrace; Owner: -
--

CREATE INDEX finished_finished ON ONLY millrace.finished USING btree (finished_at);


--
-- Name: finished_0_finished_at_idx; Type: INDEX; Schema: millrace; Owner: -
--

CREATE INDEX finished_0_finished_at_idx ON millrace.finished_0 USING btree (finished_at);


--
-- Name: finished_id; Type: INDEX; Schema: millrace; Owner: -
--

CREATE INDEX finished_id ON ONLY millrace.finished USING btree (id);


--
-- Name: finished_0_id_idx; Type: INDEX; Schema: millrace; Owner: -
--

CREATE INDEX finished_0_id_idx ON millrace.finished_0 USING btree (id);


--
-- Name: finished_kind; Type: INDEX; Schema: millrace; Owner: -
--

CREATE INDEX finished_kind ON ONLY millrace.finished USING btree (kind, finished_at);


--
-- Name: finished_0_kind_finished_at_idx; Type: INDEX; Schema: millrace; Owner: -
--

CREATE INDEX finished_0_kind_finished_at_idx ON millrace.finished_0 USING btree (kind, finished_at);


--
-- Name: finished_10_finished_at_idx; Type: INDEX; Schema: millrace; Owner: -
--

CREATE INDEX finished_10_finished_at_idx ON millrace.finished_10 USING btree (finished_at);


--
-- Name: finished_10_id_idx; Type: INDEX; Schema: millrace; Owner: -
--

CREATE INDEX finished_10_id_idx ON millrace.finished_10 USING btree (id);


--
-- Name: finished_10_kind_finished_at_idx; Type: INDEX; Schema: millrace; Owner: -
--

CREATE INDEX finished_10_kind_finished_at_idx ON millrace.finished_10 USING btree (kind, finished_at);


--
-- Name: finished_11_finished_at_idx; Type: INDEX; Schema: millrace; Owner: -
--

CREATE INDEX finished_11_finished_at_idx ON millrace.finished_11 USING btree (finished_at);


--
-- Name: finished_11_id_idx; Type: INDEX; Schema: millrace; Owner: -
--

CREATE INDEX finished_11_id_idx ON millrace.finished_11 USING btree (id);


--
-- Name: finished_11_kind_finished_at_idx; Type: INDEX; Schema: millrace; Owner: -
--

CREATE INDEX finished_11_kind_finished_at_idx ON millrace.finished_11 USING btree (kind, finished_at);


--
-- Name: finished_12_finished_at_idx; Type: INDEX; Schema: millrace; Owner: -
--

CREATE INDEX finished_12_finished_at_idx ON millrace.finished_12 USING btree (finished_at);


--
-- Name: finished_12_id_idx; Type: INDEX; Schema: millrace; Owner: -
--

CREATE INDEX finished_12_id_idx ON millrace.finished_12 USING btree (id);


--
-- Name: finished_12_kind_finished_at_idx; Type: INDEX; Schema: millrace; Owner: -
--

CREATE INDEX finished_12_kind_finished_at_idx ON millrace.finished_12 USING btree (kind, finished_at);


--
-- Name: finished_13_finished_at_idx; Type: INDEX; Schema: millrace; Owner: -
--

CREATE INDEX finished_13_finished_at_idx ON millrace.finished_13 USING btree (finished_at);


--
-- Name: finished_13_id_idx; Type: INDEX; Schema: millrace; Owner: -
--

CREATE INDEX finished_13_id_idx ON millrace.finished_13 USING btree (id);


--
-- Name: finished_13_kind_finished_at_idx; Type: INDEX; Schema: millrace; Owner: -
--

CREATE INDEX finished_13_kind_finished_at_idx ON millrace.finished_13 USING btree (kind, finished_at);


--
-- Name: finished_14_finished_at_idx; Type: INDEX; Schema: millrace; Owner: -
--

CREATE INDEX finished_14_finished_at_idx ON millrace.finished_14 USING btree (finished_at);


--
-- Name: finished_14_id_idx; Type: INDEX; Schema: millrace; Owner: -
--

CREATE INDEX finished_14_id_idx ON millrace.finished_14 USING btree (id);


--
-- Name: finished_14_kind_finished_at_idx; Type: INDEX; Schema: millrace; Owner: -
--

CREATE INDEX finished_14_kind_finished_at_idx ON millrace.finished_14 USING btree (kind, finished_at);


--
-- Name: finished_15_finished_at_idx; Type: INDEX; Schema: millrace; Owner: -
--

CREATE INDEX finished_15_finished_at_idx ON millrace.finished_15 USING btree (finished_at);


--
-- Name: finished_15_id_idx; Type: INDEX; Schema: millrace; Owner: -
--

CREATE INDEX finished_15_id_idx ON millrace.finished_15 USING btree (id);


--
-- Name: finished_15_kind_finished_at_idx; Type: INDEX; Schema: millrace; Owner: -
--

CREATE INDEX finished_15_kind_finished_at_idx ON millrace.finished_15 USING btree (kind, finished_at);


--
-- Name: finished_16_finished_at_idx; Type: INDEX; Schema: millrace; Owner: -
--

CREATE INDEX finished_16_finished_at_idx ON millrace.finished_16 USING btree (finished_at);


--
-- Name: finished_16_id_idx; Type: INDEX; Schema: millrace; Owner: -
--

CREATE INDEX finished_16_id_idx ON millrace.finished_16 USING btree (id);


--
-- Name: finished_16_kind_finished_at_idx; Type: INDEX; Schema: millrace; Owner: -
--

CREATE INDEX finished_16_kind_finished_at_idx ON millrace.finished_16 USING btree (kind, finished_at);


--
-- Name: finished_17_finished_at_idx; Type: INDEX; Schema: millrace; Owner: -
--

CREATE INDEX finished_17_finished_at_idx ON millrace.finished_17 USING btree (finished_at);


--
-- Name: finished_17_id_idx; Type: INDEX; Schema: millrace; Owner: -
--

CREATE INDEX finished_17_id_idx ON millrace.finished_17 USING btree (id);


--
-- Name: finished_17_kind_finished_at_idx; Type: INDEX; Schema: millrace; Owner: -
--

CREATE INDEX finished_17_kind_finished_at_idx ON millrace.finished_17 USING btree (kind, finished_at);


--
-- Name: finished_18_finished_at_idx; Type: INDEX; Schema: millrace; Owner: -
--

CREATE INDEX finished_18_finished_at_idx ON millrace.finished_18 USING btree (finished_at);


--
-- Name: finished_18_id_idx; Type: INDEX; Schema: millrace; Owner: -
--

CREATE INDEX finished_18_id_idx ON millrace.finished_18 USING btree (id);


--
-- Name: finished_18_kind_finished_at_idx; Type: INDEX; Schema: millrace; Owner: -
--

CREATE INDEX finished_18_kind_finished_at_idx ON millrace.finished_18 USING btree (kind, finished_at);


--
-- Name: finished_19_finished_at_idx; Type: INDEX; Schema: millrace; Owner: -
--

CREATE INDEX finished_19_finished_at_idx ON millrace.finished_19 USING btree (finished_at);


--
-- Name: finished_19_id_idx; Type: INDEX; Schema: millrace; Owner: -
--

CREATE INDEX finished_19_id_idx ON millrace.finished_19 USING btree (id);


--
-- Name: finished_19_kind_finished_at_idx; Type: INDEX; Schema: millrace; Owner: -
--

CREATE INDEX finished_19_kind_finished_at_idx ON millrace.finished_19 USING btree (kind, finished_at);


--
-- Name: finished_1_finished_at_idx; Type: INDEX; Schema: millrace; Owner: -
--

CREATE INDEX finished_1_finished_at_idx ON millrace.finished_1 USING btree (finished_at);


--
-- Name: finished_1_id_idx; Type: INDEX; Schema: millrace; Owner: -
--

CREATE INDEX finished_1_id_idx ON millrace.finished_1 USING btree (id);


--
-- Name: finished_1_kind_finished_at_idx; Type: INDEX; Schema: millrace; Owner: -
--

CREATE INDEX finished_1_kind_finished_at_idx ON millrace.finished_1 USING btree (kind, finished_at);


--
-- Name: finished_20_finished_at_idx; Type: INDEX; Schema: millrace; Owner: -
--

CREATE INDEX finished_20_finished_at_idx ON millrace.finished_20 USING btree (finished_at);


--
-- Name: finished_20_id_idx; Type: INDEX; Schema: millrace; Owner: -
--

CREATE INDEX finished_20_id_idx ON millrace.finished_20 USING btree (id);


--
-- Name: finished_20_kind_finished_at_idx; Type: INDEX; Schema: millrace; Owner: -
--

CREATE INDEX finished_20_kind_finished_at_idx ON millrace.finished_20 USING btree (kind, finished_at);


--
-- Name: finished_21_finished_at_idx; Type: INDEX; Schema: millrace; Owner: -
--

CREATE INDEX finished_21_finished_at_idx ON millrace.finished_21 USING btree (finished_at);


--
-- Name: finished_21_id_idx; Type: INDEX; Schema: millrace; Owner: -
--

CREATE INDEX finished_21_id_idx ON millrace.finished_21 USING btree (id);


--
-- Name: finished_21_kind_finished_at_idx; Type: INDEX; Schema: millrace; Owner: -
--

CREATE INDEX finished_21_kind_finished_at_idx ON millrace.finished_21 USING btree (kind, finished_at);


--
-- Name: finished_22_finished_at_idx; Type: INDEX; Schema: millrace; Owner: -
--

CREATE INDEX finished_22_finished_at_idx ON millrace.finished_22 USING btree (finished_at);


--
-- Name: finished_22_id_idx; Type: INDEX; Schema: millrace; Owner: -
--

CREATE INDEX finished_22_id_idx ON millrace.finished_22 USING btree (id);


--
-- Name: finished_22_kind_finished_at_idx; Type: INDEX; Schema: millrace; Owner: -
--

CREATE INDEX finished_22_kind_finished_at_idx ON millrace.finished_22 USING btree (kind, finished_at);


--
-- Name: finished_23_finished_at_idx; Type: INDEX; Schema: millrace; Owner: -
--

CREATE INDEX finished_23_finished_at_idx ON millrace.finished_23 USING btree (finished_at);


--
-- Name: finished_23_id_idx; Type: INDEX; Schema: millrace; Owner: -
--

CREATE INDEX finished_23_id_idx ON millrace.finished_23 USING btree (id);


--
-- Name: finished_23_kind_finished_at_idx; Type: INDEX; Schema: millrace; Owner: -
--

CREATE INDEX finished_23_kind_finished_at_idx ON millrace.finished_23 USING btree (kind, finished_at);


--
-- Name: finished_24_finished_at_idx; Type: INDEX; Schema: millrace; Owner: -
--

CREATE INDEX finished_24_finished_at_idx ON millrace.finished_24 USING btree (finished_at);


--
-- Name: finished_24_id_idx; Type: INDEX; Schema: millrace; Owner: -
--

CREATE INDEX finished_24_id_idx ON millrace.finished_24 USING btree (id);


--
-- Name: finished_24_kind_finished_at_idx; Type: INDEX; Schema: millrace; Owner: -
--

CREATE INDEX finished_24_kind_finished_at_idx ON millrace.finished_24 USING btree (kind, finished_at);


--
-- Name: finished_25_finished_at_idx; Type: INDEX; Schema: millrace; Owner: -
--

CREATE INDEX finished_25_finished_at_idx ON millrace.finished_25 USING btree (finished_at);


--
-- Name: finished_25_id_idx; Type: INDEX; Schema: millrace; Owner: -
--

CREATE INDEX finished_25_id_idx ON millrace.finished_25 USING btree (id);


--
-- Name: finished_25_kind_finished_at_idx; Type: INDEX; Schema: millrace; Owner: -
--

CREATE INDEX finished_25_kind_finished_at_idx ON millrace.finished_25 USING btree (kind, finished_at);


--
-- Name: finished_26_finished_at_idx; Type: INDEX; Schema: millrace; Owner: -
--

CREATE INDEX finished_26_finished_at_idx ON millrace.finished_26 USING btree (finished_at);


--
-- Name: finished_26_id_idx; Type: INDEX; Schema: millrace; Owner: -
--

CREATE INDEX finished_26_id_idx ON millrace.finished_26 USING btree (id);


--
-- Name: finished_26_kind_finished_at_idx; Type: INDEX; Schema: millrace; Owner: -
--

CREATE INDEX finished_26_kind_finished_at_idx ON millrace.finished_26 USING btree (kind, finished_at);


--
-- Name: finished_27_finished_at_idx; Type: INDEX; Schema: millrace; Owner: -
--

CREATE INDEX finished_27_finished_at_idx ON millrace.finished_27 USING btree (finished_at);


--
-- Name: finished_27_id_idx; Type: INDEX; Schema: millrace; Owner: -
--

CREATE INDEX finished_27_id_idx ON millrace.finished_27 USING btree (id);


--
-- Name: finished_27_kind_finished_at_idx; Type: INDEX; Schema: millrace; Owner: -
--

CREATE INDEX finished_27_kind_finished_at_idx ON millrace.finished_27 USING btree (kind, finished_at);


--
-- Name: finished_28_finished_at_idx; Type: INDEX; Schema: millrace; Owner: -
--

CREATE INDEX finished_28_finished_at_idx ON millrace.finished_28 USING btree (finished_at);


--
-- Name: finished_28_id_idx; Type: INDEX; Schema: millrace; Owner: -
--

CREATE INDEX finished_28_id_idx ON millrace.finished_28 USING btree (id);


--
-- Name: finished_28_kind_finished_at_idx; Type: INDEX; Schema: millrace; Owner: -
--

CREATE INDEX finished_28_kind_finished_at_idx ON millrace.finished_28 USING btree (kind, finished_at);


--
-- Name: finished_29_finished_at_idx; Type: INDEX; Schema: millrace; Owner: -
--

CREATE INDEX finished_29_finished_at_idx ON millrace.finished_29 USING btree (finished_at);


--
-- Name: finished_29_id_idx; Type: INDEX; Schema: millrace; Owner: -
--

CREATE INDEX finished_29_id_idx ON millrace.finished_29 USING btree (id);


--
-- Name: finished_29_kind_finished_at_idx; Type: INDEX; Schema: millrace; Owner: -
--

CREATE INDEX finished_29_kind_finished_at_idx ON millrace.finished_29 USING btree (kind, finished_at);


--
-- Name: finished_2_finished_at_idx; Type: INDEX; Schema: millrace; Owner: -
--

CREATE INDEX finished_2_finished_at_idx ON millrace.finished_2 USING btree (finished_at);


--
-- Name: finished_2_id_idx; Type: INDEX; Schema: millrace; Owner: -
--

CREATE INDEX finished_2_id_idx ON millrace.finished_2 USING btree (id);


--
-- Name: finished_2_kind_finished_at_idx; Type: INDEX; Schema: millrace; Owner: -
--

CREATE INDEX finished_2_kind_finished_at_idx ON millrace.finished_2 USING btree (kind, finished_at);


--
-- Name: finished_30_finished_at_idx; Type: INDEX; Schema: millrace; Owner: -
--

CREATE INDEX finished_30_finished_at_idx ON millrace.finished_30 USING btree (finished_at);


--
-- Name: finished_30_id_idx; Type: INDEX; Schema: millrace; Owner: -
--

CREATE INDEX finished_30_id_idx ON millrace.finished_30 USING btree (id);


--
-- Name: finished_30_kind_finished_at_idx; Type: INDEX; Schema: millrace; Owner: -
--

CREATE INDEX finished_30_kind_finished_at_idx ON millrace.finished_30 USING btree (kind, finished_at);


--
-- Name: finished_31_finished_at_idx; Type: INDEX; Schema: millrace; Owner: -
--

CREATE INDEX finished_31_finished_at_idx ON millrace.finished_31 USING btree (finished_at);


--
-- Name: finished_31_id_idx; Type: INDEX; Schema: millrace; Owner: -
--

CREATE INDEX finished_31_id_idx ON millrace.finished_31 USING btree (id);


--
-- Name: finished_31_kind_finished_at_idx; Type: INDEX; Schema: millrace; Owner: -
--

CREATE INDEX finished_31_kind_finished_at_idx ON millrace.finished_31 USING btree (kind, finished_at);


--
-- Name: finished_32_finished_at_idx; Type: INDEX; Schema: millrace; Owner: -
--

CREATE INDEX finished_32_finished_at_idx ON millrace.finished_32 USING btree (finished_at);


--
-- Name: finished_32_id_idx; Type: INDEX; Schema: millrace; Owner: -
--

CREATE INDEX finished_32_id_idx ON millrace.finished_32 USING btree (id);


--
-- Name: finished_32_kind_finished_at_idx; Type: INDEX; Schema: millrace; Owner: -
--

CREATE INDEX finished_32_kind_finished_at_idx ON millrace.finished_32 USING btree (kind, finished_at);


--
-- Name: finished_33_finished_at_idx; Type: INDEX; Schema: millrace; Owner: -
--

CREATE INDEX finished_33_finished_at_idx ON millrace.finished_33 USING btree (finished_at);


--
-- Name: finished_33_id_idx; Type: INDEX; Schema: millrace; Owner: -
--

CREATE INDEX finished_33_id_idx ON millrace.finished_33 USING btree (id);


--
-- Name: finished_33_kind_finished_at_idx; Type: INDEX; Schema: millrace; Owner: -
--

CREATE INDEX finished_33_kind_finished_at_idx ON millrace.finished_33 USING btree (kind, finished_at);


--
-- Name: finished_34_finished_at_idx; Type: INDEX; Schema: millrace; Owner: -
--

CREATE INDEX finished_34_finished_at_idx ON millrace.finished_34 USING btree (finished_at);


--
-- Name: finished_34_id_idx; Type: INDEX; Schema: millrace; Owner: -
--

CREATE INDEX finished_34_id_idx ON millrace.finished_34 USING btree (id);


--
-- Name: finished_34_kind_finished_at_idx; Type: INDEX; Schema: millrace; Owner: -
--

CREATE INDEX finished_34_kind_finished_at_idx ON millrace.finished_34 USING btree (kind, finished_at);


--
-- Name: finished_35_finished_at_idx; Type: INDEX; Schema: millrace; Owner: -
--

CREATE INDEX finished_35_finished_at_idx ON millrace.finished_35 USING btree (finished_at);


--
-- Name: finished_35_id_idx; Type: INDEX; Schema: millrace; Owner: -
--

CREATE INDEX finished_35_id_idx ON millrace.finished_35 USING btree (id);


--
-- Name: finished_35_kind_finished_at_idx; Type: INDEX; Schema: millrace; Owner: -
--

CREATE INDEX finished_35_kind_finished_at_idx ON millrace.finished_35 USING btree (kind, finished_at);


--
-- Name: finished_36_finished_at_idx; Type: INDEX; Schema: millrace; Owner: -
--

CREATE INDEX finished_36_finished_at_idx ON millrace.finished_36 USING btree (finished_at);


--
-- Name: finished_36_id_idx; Type: INDEX; Schema: millrace; Owner: -
--

CREATE INDEX finished_36_id_idx ON millrace.finished_36 USING btree (id);


--
-- Name: finished_36_kind_finished_at_idx; Type: INDEX; Schema: millrace; Owner: -
--

CREATE INDEX finished_36_kind_finished_at_idx ON millrace.finished_36 USING btree (kind, finished_at);


--
-- Name: finished_37_finished_at_idx; Type: INDEX; Schema: millrace; Owner: -
--

CREATE INDEX finished_37_finished_at_idx ON millrace.finished_37 USING btree (finished_at);


--
-- Name: finished_37_id_idx; Type: INDEX; Schema: millrace; Owner: -
--

CREATE INDEX finished_37_id_idx ON millrace.finished_37 USING btree (id);


--
-- Name: finished_37_kind_finished_at_idx; Type: INDEX; Schema: millrace; Owner: -
--

CREATE INDEX finished_37_kind_finished_at_idx ON millrace.finished_37 USING btree (kind, finished_at);


--
-- Name: finished_38_finished_at_idx; Type: INDEX; Schema: millrace; Owner: -
--

CREATE INDEX finished_38_finished_at_idx ON millrace.finished_38 USING btree (finished_at);


--
-- Name: finished_38_id_idx; Type: INDEX; Schema: millrace; Owner: -
--

CREATE INDEX finished_38_id_idx ON millrace.finished_38 USING btree (id);


--
-- Name: finished_38_kind_finished_at_idx; Type: INDEX; Schema: millrace; Owner: -
--

CREATE INDEX finished_38_kind_finished_at_idx ON millrace.finished_38 USING btree (kind, finished_at);


--
-- Name: finished_39_finished_at_idx; Type: INDEX; Schema: millrace; Owner: -
--

CREATE INDEX finished_39_finished_at_idx ON millrace.finished_39 USING btree (finished_at);


--
-- Name: finished_39_id_idx; Type: INDEX; Schema: millrace; Owner: -
--

CREATE INDEX finished_39_id_idx ON millrace.finished_39 USING btree (id);


--
-- Name: finished_39_kind_finished_at_idx; Type: INDEX; Schema: millrace; Owner: -
--

CREATE INDEX finished_39_kind_finished_at_idx ON millrace.finished_39 USING btree (kind, finished_at);


--
-- Name: finished_3_finished_at_idx; Type: INDEX; Schema: millrace; Owner: -
--

CREATE INDEX finished_3_finished_at_idx ON millrace.finished_3 USING btree (finished_at);


--
-- Name: finished_3_id_idx; Type: INDEX; Schema: millrace; Owner: -
--

CREATE INDEX finished_3_id_idx ON millrace.finished_3 USING btree (id);


--
-- Name: finished_3_kind_finished_at_idx; Type: INDEX; Schema: millrace; Owner: -
--

CREATE INDEX finished_3_kind_finished_at_idx ON millrace.finished_3 USING btree (kind, finished_at);


--
-- Name: finished_40_finished_at_idx; Type: INDEX; Schema: millrace; Owner: -
--

CREATE INDEX finished_40_finished_at_idx ON millrace.finished_40 USING btree (finished_at);


--
-- Name: finished_40_id_idx; Type: INDEX; Schema: millrace; Owner: -
--

CREATE INDEX finished_40_id_idx ON millrace.finished_40 USING btree (id);


--
-- Name: finished_40_kind_finished_at_idx; Type: INDEX; Schema: millrace; Owner: -
--

CREATE INDEX finished_40_kind_finished_at_idx ON millrace.finished_40 USING btree (kind, finished_at);


--
-- Name: finished_41_finished_at_idx; Type: INDEX; Schema: millrace; Owner: -
--

CREATE INDEX finished_41_finished_at_idx ON millrace.finished_41 USING btree (finished_at);


--
-- Name: finished_41_id_idx; Type: INDEX; Schema: millrace; Owner: -
--

CREATE INDEX finished_41_id_idx ON millrace.finished_41 USING btree (id);


--
-- Name: finished_41_kind_finished_at_idx; Type: INDEX; Schema: millrace; Owner: -
--

CREATE INDEX finished_41_kind_finished_at_idx ON millrace.finished_41 USING btree (kind, finished_at);


--
-- Name: finished_42_finished_at_idx; Type: INDEX; Schema: millrace; Owner: -
--

CREATE INDEX finished_42_finished_at_idx ON millrace.finished_42 USING btree (finished_at);


--
-- Name: finished_42_id_idx; Type: INDEX; Schema: millrace; Owner: -
--

CREATE INDEX finished_42_id_idx ON millrace.finished_42 USING btree (id);


--
-- Name: finished_42_kind_finished_at_idx; Type: INDEX; Schema: millrace; Owner: -
--

CREATE INDEX finished_42_kind_finished_at_idx ON millrace.finished_42 USING btree (kind, finished_at);


--
-- Name: finished_43_finished_at_idx; Type: INDEX; Schema: millrace; Owner: -
--

CREATE INDEX finished_43_finished_at_idx ON millrace.finished_43 USING btree (finished_at);


--
-- Name: finished_43_id_idx; Type: INDEX; Schema: millrace; Owner: -
--

CREATE INDEX finished_43_id_idx ON millrace.finished_43 USING btree (id);


--
-- Name: finished_43_kind_finished_at_idx; Type: INDEX; Schema: millrace; Owner: -
--

CREATE INDEX finished_43_kind_finished_at_idx ON millrace.finished_43 USING btree (kind, finished_at);


--
-- Name: finished_44_finished_at_idx; Type: INDEX; Schema: millrace; Owner: -
--

CREATE INDEX finished_44_finished_at_idx ON millrace.finished_44 USING btree (finished_at);


--
-- Name: finished_44_id_idx; Type: INDEX; Schema: millrace; Owner: -
--

CREATE INDEX finished_44_id_idx ON millrace.finished_44 USING btree (id);


--
-- Name: finished_44_kind_finished_at_idx; Type: INDEX; Schema: millrace; Owner: -
--

CREATE INDEX finished_44_kind_finished_at_idx ON millrace.finished_44 USING btree (kind, finished_at);


--
-- Name: finished_45_finished_at_idx; Type: INDEX; Schema: millrace; Owner: -
--

CREATE INDEX finished_45_finished_at_idx ON millrace.finished_45 USING btree (finished_at);


--
-- Name: finished_45_id_idx; Type: INDEX; Schema: millrace; Owner: -
--

CREATE INDEX finished_45_id_idx ON millrace.finished_45 USING btree (id);


--
-- Name: finished_45_kind_finished_at_idx; Type: INDEX; Schema: millrace; Owner: -
--

CREATE INDEX finished_45_kind_finished_at_idx ON millrace.finished_45 USING btree (kind, finished_at);


--
-- Name: finished_46_finished_at_idx; Type: INDEX; Schema: millrace; Owner: -
--

CREATE INDEX finished_46_finished_at_idx ON millrace.finished_46 USING btree (finished_at);


--
-- Name: finished_46_id_idx; Type: INDEX; Schema: millrace; Owner: -
--

CREATE INDEX finished_46_id_idx ON millrace.finished_46 USING btree (id);


--
-- Name: finished_46_kind_finished_at_idx; Type: INDEX; Schema: millrace; Owner: -
--

CREATE INDEX finished_46_kind_finished_at_idx ON millrace.finished_46 USING btree (kind, finished_at);


--
-- Name: finished_47_finished_at_idx; Type: INDEX; Schema: millrace; Owner: -
--

CREATE INDEX finished_47_finished_at_idx ON millrace.finished_47 USING btree (finished_at);


--
-- Name: finished_47_id_idx; Type: INDEX; Schema: millrace; Owner: -
--

CREATE INDEX finished_47_id_idx ON millrace.finished_47 USING btree (id);


--
-- Name: finished_47_kind_finished_at_idx; Type: INDEX; Schema: millrace; Owner: -
--

CREATE INDEX finished_47_kind_finished_at_idx ON millrace.finished_47 USING btree (kind, finished_at);


--
-- Name: finished_48_finished_at_idx; Type: INDEX; Schema: millrace; Owner: -
--

CREATE INDEX finished_48_finished_at_idx ON millrace.finished_48 USING btree (finished_at);


--
-- Name: finished_48_id_idx; Type: INDEX; Schema: millrace; Owner: -
--

CREATE INDEX finished_48_id_idx ON millrace.finished_48 USING btree (id);


--
-- Name: finished_48_kind_finished_at_idx; Type: INDEX; Schema: millrace; Owner: -
--

CREATE INDEX finished_48_kind_finished_at_idx ON millrace.finished_48 USING btree (kind, finished_at);


--
-- Name: finished_49_finished_at_idx; Type: INDEX; Schema: millrace; Owner: -
--

CREATE INDEX finished_49_finished_at_idx ON millrace.finished_49 USING btree (finished_at);


--
-- Name: finished_49_id_idx; Type: INDEX; Schema: millrace; Owner: -
--

CREATE INDEX finished_49_id_idx ON millrace.finished_49 USING btree (id);


--
-- Name: finished_49_kind_finished_at_idx; Type: INDEX; Schema: millrace; Owner: -
--

CREATE INDEX finished_49_kind_finished_at_idx ON millrace.finished_49 USING btree (kind, finished_at);


--
-- Name: finished_4_finished_at_idx; Type: INDEX; Schema: millrace; Owner: -
--

CREATE INDEX finished_4_finished_at_idx ON millrace.finished_4 USING btree (finished_at);


--
-- Name: finished_4_id_idx; Type: INDEX; Schema: millrace; Owner: -
--

CREATE INDEX finished_4_id_idx ON millrace.finished_4 USING btree (id);


--
-- Name: finished_4_kind_finished_at_idx; Type: INDEX; Schema: millrace; Owner: -
--

CREATE INDEX finished_4_kind_finished_at_idx ON millrace.finished_4 USING btree (kind, finished_at);


--
-- Name: finished_50_finished_at_idx; Type: INDEX; Schema: millrace; Owner: -
--

CREATE INDEX finished_50_finished_at_idx ON millrace.finished_50 USING btree (finished_at);


--
-- Name: finished_50_id_idx; Type: INDEX; Schema: millrace; Owner: -
--

CREATE INDEX finished_50_id_idx ON millrace.finished_50 USING btree (id);


--
-- Name: finished_50_kind_finished_at_idx; Type: INDEX; Schema: millrace; Owner: -
--

CREATE INDEX finished_50_kind_finished_at_idx ON millrace.finished_50 USING btree (kind, finished_at);


--
-- Name: finished_51_finished_at_idx; Type: INDEX; Schema: millrace; Owner: -
--

CREATE INDEX finished_51_finished_at_idx ON millrace.finished_51 USING btree (finished_at);


--
-- Name: finished_51_id_idx; Type: INDEX; Schema: millrace; Owner: -
--

CREATE INDEX finished_51_id_idx ON millrace.finished_51 USING btree (id);


--
-- Name: finished_51_kind_finished_at_idx; Type: INDEX; Schema: millrace; Owner: -
--

CREATE INDEX finished_51_kind_finished_at_idx ON millrace.finished_51 USING btree (kind, finished_at);


--
-- Name: finished_52_finished_at_idx; Type: INDEX; Schema: millrace; Owner: -
--

CREATE INDEX finished_52_finished_at_idx ON millrace.finished_52 USING btree (finished_at);


--
-- Name: finished_52_id_idx; Type: INDEX; Schema: millrace; Owner: -
--

CREATE INDEX finished_52_id_idx ON millrace.finished_52 USING btree (id);


--
-- Name: finished_52_kind_finished_at_idx; Type: INDEX; Schema: millrace; Owner: -
--

CREATE INDEX finished_52_kind_finished_at_idx ON millrace.finished_52 USING btree (kind, finished_at);


--
-- Name: finished_53_finished_at_idx; Type: INDEX; Schema: millrace; Owner: -
--

CREATE INDEX finished_53_finished_at_idx ON millrace.finished_53 USING btree (finished_at);


--
-- Name: finished_53_id_idx; Type: INDEX; Schema: millrace; Owner: -
--

CREATE INDEX finished_53_id_idx ON millrace.finished_53 USING btree (id);


--
-- Name: finished_53_kind_finished_at_idx; Type: INDEX; Schema: millrace; Owner: -
--

CREATE INDEX finished_53_kind_finished_at_idx ON millrace.finished_53 USING btree (kind, finished_at);


--
-- Name: finished_54_finished_at_idx; Type: INDEX; Schema: millrace; Owner: -
--

CREATE INDEX finished_54_finished_at_idx ON millrace.finished_54 USING btree (finished_at);


--
-- Name: finished_54_id_idx; Type: INDEX; Schema: millrace; Owner: -
--

CREATE INDEX finished_54_id_idx ON millrace.finished_54 USING btree (id);


--
-- Name: finished_54_kind_finished_at_idx; Type: INDEX; Schema: millrace; Owner: -
--

CREATE INDEX finished_54_kind_finished_at_idx ON millrace.finished_54 USING btree (kind, finished_at);


--
-- Name: finished_55_finished_at_idx; Type: INDEX; Schema: millrace; Owner: -
--

CREATE INDEX finished_55_finished_at_idx ON millrace.finished_55 USING btree (finished_at);


--
-- Name: finished_55_id_idx; Type: INDEX; Schema: millrace; Owner: -
--

CREATE INDEX finished_55_id_idx ON millrace.finished_55 USING btree (id);


--
-- Name: finished_55_kind_finished_at_idx; Type: INDEX; Schema: millrace; Owner: -
--

CREATE INDEX finished_55_kind_finished_at_idx ON millrace.finished_55 USING btree (kind, finished_at);


--
-- Name: finished_56_finished_at_idx; Type: INDEX; Schema: millrace; Owner: -
--

CREATE INDEX finished_56_finished_at_idx ON millrace.finished_56 USING btree (finished_at);


--
-- Name: finished_56_id_idx; Type: INDEX; Schema: millrace; Owner: -
--

CREATE INDEX finished_56_id_idx ON millrace.finished_56 USING btree (id);


--
-- Name: finished_56_kind_finished_at_idx; Type: INDEX; Schema: millrace; Owner: -
--

CREATE INDEX finished_56_kind_finished_at_idx ON millrace.finished_56 USING btree (kind, finished_at);


--
-- Name: finished_57_finished_at_idx; Type: INDEX; Schema: millrace; Owner: -
--

CREATE INDEX finished_57_finished_at_idx ON millrace.finished_57 USING btree (finished_at);


--
-- Name: finished_57_id_idx; Type: INDEX; Schema: millrace; Owner: -
--

CREATE INDEX finished_57_id_idx ON millrace.finished_57 USING btree (id);


--
-- Name: finished_57_kind_finished_at_idx; Type: INDEX; Schema: millrace; Owner: -
--

CREATE INDEX finished_57_kind_finished_at_idx ON millrace.finished_57 USING btree (kind, finished_at);


--
-- Name: finished_58_finished_at_idx; Type: INDEX; Schema: millrace; Owner: -
--

CREATE INDEX finished_58_finished_at_idx ON millrace.finished_58 USING btree (finished_at);


--
-- Name: finished_58_id_idx; Type: INDEX; Schema: millrace; Owner: -
--

CREATE INDEX finished_58_id_idx ON millrace.finished_58 USING btree (id);


--
-- Name: finished_58_kind_finished_at_idx; Type: INDEX; Schema: millrace; Owner: -
--

CREATE INDEX finished_58_kind_finished_at_idx ON millrace.finished_58 USING btree (kind, finished_at);


--
-- Name: finished_59_finished_at_idx; Type: INDEX; Schema: millrace; Owner: -
--

CREATE INDEX finished_59_finished_at_idx ON millrace.finished_59 USING btree (finished_at);


--
-- Name: finished_59_id_idx; Type: INDEX; Schema: millrace; Owner: -
--

CREATE INDEX finished_59_id_idx ON millrace.finished_59 USING btree (id);


--
-- Name: finished_59_kind_finished_at_idx; Type: INDEX; Schema: millrace; Owner: -
--

CREATE INDEX finished_59_kind_finished_at_idx ON millrace.finished_59 USING btree (kind, finished_at);


--
-- Name: finished_5_finished_at_idx; Type: INDEX; Schema: millrace; Owner: -
--

CREATE INDEX finished_5_finished_at_idx ON millrace.finished_5 USING btree (finished_at);


--
-- Name: finished_5_id_idx; Type: INDEX; Schema: millrace; Owner: -
--

CREATE INDEX finished_5_id_idx ON millrace.finished_5 USING btree (id);


--
-- Name: finished_5_kind_finished_at_idx; Type: INDEX; Schema: millrace; Owner: -
--

CREATE INDEX finished_5_kind_finished_at_idx ON millrace.finished_5 USING btree (kind, finished_at);


--
-- Name: finished_60_finished_at_idx; Type: INDEX; Schema: millrace; Owner: -
--

CREATE INDEX finished_60_finished_at_idx ON millrace.finished_60 USING btree (finished_at);


--
-- Name: finished_60_id_idx; Type: INDEX; Schema: millrace; Owner: -
--

CREATE INDEX finished_60_id_idx ON millrace.finished_60 USING btree (id);


--
-- Name: finished_60_kind_finished_at_idx; Type: INDEX; Schema: millrace; Owner: -
--

CREATE INDEX finished_60_kind_finished_at_idx ON millrace.finished_60 USING btree (kind, finished_at);


--
-- Name: finished_61_finished_at_idx; Type: INDEX; Schema: millrace; Owner: -
--

CREATE INDEX finished_61_finished_at_idx ON millrace.finished_61 USING btree (finished_at);


--
-- Name: finished_61_id_idx; Type: INDEX; Schema: millrace; Owner: -
--

CREATE INDEX finished_61_id_idx ON millrace.finished_61 USING btree (id);


--
-- Name: finished_61_kind_finished_at_idx; Type: INDEX; Schema: millrace; Owner: -
--

CREATE INDEX finished_61_kind_finished_at_idx ON millrace.finished_61 USING btree (kind, finished_at);


--
-- Name: finished_62_finished_at_idx; Type: INDEX; Schema: millrace; Owner: -
--

CREATE INDEX finished_62_finished_at_idx ON millrace.finished_62 USING btree (finished_at);


--
-- Name: finished_62_id_idx; Type: INDEX; Schema: millrace; Owner: -
--

CREATE INDEX finished_62_id_idx ON millrace.finished_62 USING btree (id);


--
-- Name: finished_62_kind_finished_at_idx; Type: INDEX; Schema: millrace; Owner: -
--

CREATE INDEX finished_62_kind_finished_at_idx ON millrace.finished_62 USING btree (kind, finished_at);


--
-- Name: finished_63_finished_at_idx; Type: INDEX; Schema: millrace; Owner: -
--

CREATE INDEX finished_63_finished_at_idx ON millrace.finished_63 USING btree (finished_at);


--
-- Name: finished_63_id_idx; Type: INDEX; Schema: millrace; Owner: -
--

CREATE INDEX finished_63_id_idx ON millrace.finished_63 USING btree (id);


--
-- Name: finished_63_kind_finished_at_idx; Type: INDEX; Schema: millrace; Owner: -
--

CREATE INDEX finished_63_kind_finished_at_idx ON millrace.finished_63 USING btree (kind, finished_at);


--
-- Name: finished_64_finished_at_idx; Type: INDEX; Schema: millrace; Owner: -
--

CREATE INDEX finished_64_finished_at_idx ON millrace.finished_64 USING btree (finished_at);


--
-- Name: finished_64_id_idx; Type: INDEX; Schema: millrace; Owner: -
--

CREATE INDEX finished_64_id_idx ON millrace.finished_64 USING btree (id);


--
-- Name: finished_64_kind_finished_at_idx; Type: INDEX; Schema: millrace; Owner: -
--

CREATE INDEX finished_64_kind_finished_at_idx ON millrace.finished_64 USING btree (kind, finished_at);


--
-- Name: finished_65_finished_at_idx; Type: INDEX; Schema: millrace; Owner: -
--

CREATE INDEX finished_65_finished_at_idx ON millrace.finished_65 USING btree (finished_at);


--
-- Name: finished_65_id_idx; Type: INDEX; Schema: millrace; Owner: -
--

CREATE INDEX finished_65_id_idx ON millrace.finished_65 USING btree (id);


--
-- Name: finished_65_kind_finished_at_idx; Type: INDEX; Schema: millrace; Owner: -
--

CREATE INDEX finished_65_kind_finished_at_idx ON millrace.finished_65 USING btree (kind, finished_at);


--
-- Name: finished_66_finished_at_idx; Type: INDEX; Schema: millrace; Owner: -
--

CREATE INDEX finished_66_finished_at_idx ON millrace.finished_66 USING btree (finished_at);


--
-- Name: finished_66_id_idx; Type: INDEX; Schema: millrace; Owner: -
--

CREATE INDEX finished_66_id_idx ON millrace.finished_66 USING btree (id);


--
-- Name: finished_66_kind_finished_at_idx; Type: INDEX; Schema: millrace; Owner: -
--

CREATE INDEX finished_66_kind_finished_at_idx ON millrace.finished_66 USING btree (kind, finished_at);


--
-- Name: finished_67_finished_at_idx; Type: INDEX; Schema: millrace; Owner: -
--

CREATE INDEX finished_67_finished_at_idx ON millrace.finished_67 USING btree (finished_at);


--
-- Name: finished_67_id_idx; Type: INDEX; Schema: millrace; Owner: -
--

CREATE INDEX finished_67_id_idx ON millrace.finished_67 USING btree (id);


--
-- Name: finished_67_kind_finished_at_idx; Type: INDEX; Schema: millrace; Owner: -
--

CREATE INDEX finished_67_kind_finished_at_idx ON millrace.finished_67 USING btree (kind, finished_at);


--
-- Name: finished_6_finished_at_idx; Type: INDEX; Schema: millrace; Owner: -
--

CREATE INDEX finished_6_finished_at_idx ON millrace.finished_6 USING btree (finished_at);


--
-- Name: finished_6_id_idx; Type: INDEX; Schema: millrace; Owner: -
--

CREATE INDEX finished_6_id_idx ON millrace.finished_6 USING btree (id);


--
-- Name: finished_6_kind_finished_at_idx; Type: INDEX; Schema: millrace; Owner: -
--

CREATE INDEX finished_6_kind_finished_at_idx ON millrace.finished_6 USING btree (kind, finished_at);


--
-- Name: finished_7_finished_at_idx; Type: INDEX; Schema: millrace; Owner: -
--

CREATE INDEX finished_7_finished_at_idx ON millrace.finished_7 USING btree (finished_at);


--
-- Name: finished_7_id_idx; Type: INDEX; Schema: millrace; Owner: -
--

CREATE INDEX finished_7_id_idx ON millrace.finished_7 USING btree (id);


--
-- Name: finished_7_kind_finished_at_idx; Type: INDEX; Schema: millrace; Owner: -
--

CREATE INDEX finished_7_kind_finished_at_idx ON millrace.finished_7 USING btree (kind, finished_at);


--
-- Name: finished_8_finished_at_idx; Type: INDEX; Schema: millrace; Owner: -
--

CREATE INDEX finished_8_finished_at_idx ON millrace.finished_8 USING btree (finished_at);


--
-- Name: finished_8_id_idx; Type: INDEX; Schema: millrace; Owner: -
--

CREATE INDEX finished_8_id_idx ON millrace.finished_8 USING btree (id);


--
-- Name: finished_8_kind_finished_at_idx; Type: INDEX; Schema: millrace; Owner: -
--

CREATE INDEX finished_8_kind_finished_at_idx ON millrace.finished_8 USING btree (kind, finished_at);


--
-- Name: finished_9_finished_at_idx; Type: INDEX; Schema: millrace; Owner: -
--

CREATE INDEX finished_9_finished_at_idx ON millrace.finished_9 USING btree (finished_at);


--
-- Name: finished_9_id_idx; Type: INDEX; Schema: millrace; Owner: -
--

CREATE INDEX finished_9_id_idx ON millrace.finished_9 USING btree (id);


--
-- Name: finished_9_kind_finished_at_idx; Type: INDEX; Schema: millrace; Owner: -
--

CREATE INDEX finished_9_kind_finished_at_idx ON millrace.finished_9 USING btree (kind, finished_at);


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
-- Name: job_id; Type: INDEX; Schema: millrace; Owner: -
--

CREATE INDEX job_id ON ONLY millrace.job USING btree (id);


--
-- Name: job_0_id_idx; Type: INDEX; Schema: millrace; Owner: -
--

CREATE INDEX job_0_id_idx ON millrace.job_0 USING btree (id);


--
-- Name: job_lane; Type: INDEX; Schema: millrace; Owner: -
--

CREATE INDEX job_lane ON ONLY millrace.job USING btree (queue, priority, txid, id);


--
-- Name: job_0_queue_priority_txid_id_idx; Type: INDEX; Schema: millrace; Owner: -
--

CREATE INDEX job_0_queue_priority_txid_id_idx ON millrace.job_0 USING btree (queue, priority, txid, id);


--
-- Name: job_1_id_idx; Type: INDEX; Schema: millrace; Owner: -
--

CREATE INDEX job_1_id_idx ON millrace.job_1 USING btree (id);


--
-- Name: job_1_queue_priority_txid_id_idx; Type: INDEX; Schema: millrace; Owner: -
--

CREATE INDEX job_1_queue_priority_txid_id_idx ON millrace.job_1 USING btree (queue, priority, txid, id);


--
-- Name: job_2_id_idx; Type: INDEX; Schema: millrace; Owner: -
--

CREATE INDEX job_2_id_idx ON millrace.job_2 USING btree (id);


--
-- Name: job_2_queue_priority_txid_id_idx; Type: INDEX; Schema: millrace; Owner: -
--

CREATE INDEX job_2_queue_priority_txid_id_idx ON millrace.job_2 USING btree (queue, priority, txid, id);


--
-- Name: job_3_id_idx; Type: INDEX; Schema: millrace; Owner: -
--

CREATE INDEX job_3_id_idx ON millrace.job_3 USING btree (id);


--
-- Name: job_3_queue_priority_txid_id_idx; Type: INDEX; Schema: millrace; Owner: -
--

CREATE INDEX job_3_queue_priority_txid_id_idx ON millrace.job_3 USING btree (queue, priority, txid, id);


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
-- Name: queue_state_queue; Type: INDEX; Schema: millrace; Owner: -
--

CREATE INDEX queue_state_queue ON millrace.queue_state USING btree (queue, id);


--
-- Name: sched_due; Type: INDEX; Schema: millrace; Owner: -
--

CREATE INDEX sched_due ON ONLY millrace.sched USING btree (due_at);


--
-- Name: sched_0_due_at_idx; Type: INDEX; Schema: millrace; Owner: -
--

CREATE INDEX sched_0_due_at_idx ON millrace.sched_0 USING btree (due_at);


--
-- Name: sched_id; Type: INDEX; Schema: millrace; Owner: -
--

CREATE INDEX sched_id ON ONLY millrace.sched USING btree (id);


--
-- Name: sched_0_id_idx; Type: INDEX; Schema: millrace; Owner: -
--

CREATE INDEX sched_0_id_idx ON millrace.sched_0 USING btree (id);


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
-- Name: sched_1_id_idx; Type: INDEX; Schema: millrace; Owner: -
--

CREATE INDEX sched_1_id_idx ON millrace.sched_1 USING btree (id);


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
-- Name: tick_lane; Type: INDEX; Schema: millrace; Owner: -
--

CREATE INDEX tick_lane ON ONLY millrace.tick USING btree (queue, priority, tick_id);


--
-- Name: tick_0_queue_priority_tick_id_idx; Type: INDEX; Schema: millrace; Owner: -
--

CREATE INDEX tick_0_queue_priority_tick_id_idx ON millrace.tick_0 USING btree (queue, priority, tick_id);


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
-- Name: tick_1_queue_priority_tick_id_idx; Type: INDEX; Schema: millrace; Owner: -
--

CREATE INDEX tick_1_queue_priority_tick_id_idx ON millrace.tick_1 USING btree (queue, priority, tick_id);


--
-- Name: tick_1_tick_id_idx; Type: INDEX; Schema: millrace; Owner: -
--

CREATE INDEX tick_1_tick_id_idx ON millrace.tick_1 USING btree (tick_id);


--
-- Name: tick_2_owner_req_idx; Type: INDEX; Schema: millrace; Owner: -
--

CREATE INDEX tick_2_owner_req_idx ON millrace.tick_2 USING btree (owner, req);


--
-- Name: tick_2_queue_priority_tick_id_idx; Type: INDEX; Schema: millrace; Owner: -
--

CREATE INDEX tick_2_queue_priority_tick_id_idx ON millrace.tick_2 USING btree (queue, priority, tick_id);


--
-- Name: tick_2_tick_id_idx; Type: INDEX; Schema: millrace; Owner: -
--

CREATE INDEX tick_2_tick_id_idx ON millrace.tick_2 USING btree (tick_id);


--
-- Name: tick_3_owner_req_idx; Type: INDEX; Schema: millrace; Owner: -
--

CREATE INDEX tick_3_owner_req_idx ON millrace.tick_3 USING btree (owner, req);


--
-- Name: tick_3_queue_priority_tick_id_idx; Type: INDEX; Schema: millrace; Owner: -
--

CREATE INDEX tick_3_queue_priority_tick_id_idx ON millrace.tick_3 USING btree (queue, priority, tick_id);


--
-- Name: tick_3_tick_id_idx; Type: INDEX; Schema: millrace; Owner: -
--

CREATE INDEX tick_3_tick_id_idx ON millrace.tick_3 USING btree (tick_id);


--
-- Name: uniq_key; Type: INDEX; Schema: millrace; Owner: -
--

CREATE INDEX uniq_key ON ONLY millrace.uniq USING btree (key, job_id);


--
-- Name: uniq_0_key_job_id_idx; Type: INDEX; Schema: millrace; Owner: -
--

CREATE INDEX uniq_0_key_job_id_idx ON millrace.uniq_0 USING btree (key, job_id);


--
-- Name: uniq_1_key_job_id_idx; Type: INDEX; Schema: millrace; Owner: -
--

CREATE INDEX uniq_1_key_job_id_idx ON millrace.uniq_1 USING btree (key, job_id);


--
-- Name: uniq_2_key_job_id_idx; Type: INDEX; Schema: millrace; Owner: -
--

CREATE INDEX uniq_2_key_job_id_idx ON millrace.uniq_2 USING btree (key, job_id);


--
-- Name: uniq_3_key_job_id_idx; Type: INDEX; Schema: millrace; Owner: -
--

CREATE INDEX uniq_3_key_job_id_idx ON millrace.uniq_3 USING btree (key, job_id);


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
-- Name: cancel_0_job_id_idx; Type: INDEX ATTACH; Schema: millrace; Owner: -
--

ALTER INDEX millrace.cancel_job ATTACH PARTITION millrace.cancel_0_job_id_idx;


--
-- Name: cancel_1_job_id_idx; Type: INDEX ATTACH; Schema: millrace; Owner: -
--

ALTER INDEX millrace.cancel_job ATTACH PARTITION millrace.cancel_1_job_id_idx;


--
-- Name: cancel_2_job_id_idx; Type: INDEX ATTACH; Schema: millrace; Owner: -
--

ALTER INDEX millrace.cancel_job ATTACH PARTITION millrace.cancel_2_job_id_idx;


--
-- Name: cancel_3_job_id_idx; Type: INDEX ATTACH; Schema: millrace; Owner: -
--

ALTER INDEX millrace.cancel_job ATTACH PARTITION millrace.cancel_3_job_id_idx;


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
-- Name: finished_0_finished_at_idx; Type: INDEX ATTACH; Schema: millrace; Owner: -
--

ALTER INDEX millrace.finished_finished ATTACH PARTITION millrace.finished_0_finished_at_idx;


--
-- Name: finished_0_id_idx; Type: INDEX ATTACH; Schema: millrace; Owner: -
--

ALTER INDEX millrace.finished_id ATTACH PARTITION millrace.finished_0_id_idx;


--
-- Name: finished_0_kind_finished_at_idx; Type: INDEX ATTACH; Schema: millrace; Owner: -
--

ALTER INDEX millrace.finished_kind ATTACH PARTITION millrace.finished_0_kind_finished_at_idx;


--
-- Name: finished_10_finished_at_idx; Type: INDEX ATTACH; Schema: millrace; Owner: -
--

ALTER INDEX millrace.finished_finished ATTACH PARTITION millrace.finished_10_finished_at_idx;


--
-- Name: finished_10_id_idx; Type: INDEX ATTACH; Schema: millrace; Owner: -
--

ALTER INDEX millrace.finished_id ATTACH PARTITION millrace.finished_10_id_idx;


--
-- Name: finished_10_kind_finished_at_idx; Type: INDEX ATTACH; Schema: millrace; Owner: -
--

ALTER INDEX millrace.finished_kind ATTACH PARTITION millrace.finished_10_kind_finished_at_idx;


--
-- Name: finished_11_finished_at_idx; Type: INDEX ATTACH; Schema: millrace; Owner: -
--

ALTER INDEX millrace.finished_finished ATTACH PARTITION millrace.finished_11_finished_at_idx;


--
-- Name: finished_11_id_idx; Type: INDEX ATTACH; Schema: millrace; Owner: -
--

ALTER INDEX millrace.finished_id ATTACH PARTITION millrace.finished_11_id_idx;


--
-- Name: finished_11_kind_finished_at_idx; Type: INDEX ATTACH; Schema: millrace; Owner: -
--

ALTER INDEX millrace.finished_kind ATTACH PARTITION millrace.finished_11_kind_finished_at_idx;


--
-- Name: finished_12_finished_at_idx; Type: INDEX ATTACH; Schema: millrace; Owner: -
--

ALTER INDEX millrace.finished_finished ATTACH PARTITION millrace.finished_12_finished_at_idx;


--
-- Name: finished_12_id_idx; Type: INDEX ATTACH; Schema: millrace; Owner: -
--

ALTER INDEX millrace.finished_id ATTACH PARTITION millrace.finished_12_id_idx;


--
-- Name: finished_12_kind_finished_at_idx; Type: INDEX ATTACH; Schema: millrace; Owner: -
--

ALTER INDEX millrace.finished_kind ATTACH PARTITION millrace.finished_12_kind_finished_at_idx;


--
-- Name: finished_13_finished_at_idx; Type: INDEX ATTACH; Schema: millrace; Owner: -
--

ALTER INDEX millrace.finished_finished ATTACH PARTITION millrace.finished_13_finished_at_idx;


--
-- Name: finished_13_id_idx; Type: INDEX ATTACH; Schema: millrace; Owner: -
--

ALTER INDEX millrace.finished_id ATTACH PARTITION millrace.finished_13_id_idx;


--
-- Name: finished_13_kind_finished_at_idx; Type: INDEX ATTACH; Schema: millrace; Owner: -
--

ALTER INDEX millrace.finished_kind ATTACH PARTITION millrace.finished_13_kind_finished_at_idx;


--
-- Name: finished_14_finished_at_idx; Type: INDEX ATTACH; Schema: millrace; Owner: -
--

ALTER INDEX millrace.finished_finished ATTACH PARTITION millrace.finished_14_finished_at_idx;


--
-- Name: finished_14_id_idx; Type: INDEX ATTACH; Schema: millrace; Owner: -
--

ALTER INDEX millrace.finished_id ATTACH PARTITION millrace.finished_14_id_idx;


--
-- Name: finished_14_kind_finished_at_idx; Type: INDEX ATTACH; Schema: millrace; Owner: -
--

ALTER INDEX millrace.finished_kind ATTACH PARTITION millrace.finished_14_kind_finished_at_idx;


--
-- Name: finished_15_finished_at_idx; Type: INDEX ATTACH; Schema: millrace; Owner: -
--

ALTER INDEX millrace.finished_finished ATTACH PARTITION millrace.finished_15_finished_at_idx;


--
-- Name: finished_15_id_idx; Type: INDEX ATTACH; Schema: millrace; Owner: -
--

ALTER INDEX millrace.finished_id ATTACH PARTITION millrace.finished_15_id_idx;


--
-- Name: finished_15_kind_finished_at_idx; Type: INDEX ATTACH; Schema: millrace; Owner: -
--

ALTER INDEX millrace.finished_kind ATTACH PARTITION millrace.finished_15_kind_finished_at_idx;


--
-- Name: finished_16_finished_at_idx; Type: INDEX ATTACH; Schema: millrace; Owner: -
--

ALTER INDEX millrace.finished_finished ATTACH PARTITION millrace.finished_16_finished_at_idx;


--
-- Name: finished_16_id_idx; Type: INDEX ATTACH; Schema: millrace; Owner: -
--

ALTER INDEX millrace.finished_id ATTACH PARTITION millrace.finished_16_id_idx;


--
-- Name: finished_16_kind_finished_at_idx; Type: INDEX ATTACH; Schema: millrace; Owner: -
--

ALTER INDEX millrace.finished_kind ATTACH PARTITION millrace.finished_16_kind_finished_at_idx;


--
-- Name: finished_17_finished_at_idx; Type: INDEX ATTACH; Schema: millrace; Owner: -
--

ALTER INDEX millrace.finished_finished ATTACH PARTITION millrace.finished_17_finished_at_idx;


--
-- Name: finished_17_id_idx; Type: INDEX ATTACH; Schema: millrace; Owner: -
--

ALTER INDEX millrace.finished_id ATTACH PARTITION millrace.finished_17_id_idx;


--
-- Name: finished_17_kind_finished_at_idx; Type: INDEX ATTACH; Schema: millrace; Owner: -
--

ALTER INDEX millrace.finished_kind ATTACH PARTITION millrace.finished_17_kind_finished_at_idx;


--
-- Name: finished_18_finished_at_idx; Type: INDEX ATTACH; Schema: millrace; Owner: -
--

ALTER INDEX millrace.finished_finished ATTACH PARTITION millrace.finished_18_finished_at_idx;


--
-- Name: finished_18_id_idx; Type: INDEX ATTACH; Schema: millrace; Owner: -
--

ALTER INDEX millrace.finished_id ATTACH PARTITION millrace.finished_18_id_idx;


--
-- Name: finished_18_kind_finished_at_idx; Type: INDEX ATTACH; Schema: millrace; Owner: -
--

ALTER INDEX millrace.finished_kind ATTACH PARTITION millrace.finished_18_kind_finished_at_idx;


--
-- Name: finished_19_finished_at_idx; Type: INDEX ATTACH; Schema: millrace; Owner: -
--

ALTER INDEX millrace.finished_finished ATTACH PARTITION millrace.finished_19_finished_at_idx;


--
-- Name: finished_19_id_idx; Type: INDEX ATTACH; Schema: millrace; Owner: -
--

ALTER INDEX millrace.finished_id ATTACH PARTITION millrace.finished_19_id_idx;


--
-- Name: finished_19_kind_finished_at_idx; Type: INDEX ATTACH; Schema: millrace; Owner: -
--

ALTER INDEX millrace.finished_kind ATTACH PARTITION millrace.finished_19_kind_finished_at_idx;


--
-- Name: finished_1_finished_at_idx; Type: INDEX ATTACH; Schema: millrace; Owner: -
--

ALTER INDEX millrace.finished_finished ATTACH PARTITION millrace.finished_1_finished_at_idx;


--
-- Name: finished_1_id_idx; Type: INDEX ATTACH; Schema: millrace; Owner: -
--

ALTER INDEX millrace.finished_id ATTACH PARTITION millrace.finished_1_id_idx;


--
-- Name: finished_1_kind_finished_at_idx; Type: INDEX ATTACH; Schema: millrace; Owner: -
--

ALTER INDEX millrace.finished_kind ATTACH PARTITION millrace.finished_1_kind_finished_at_idx;


--
-- Name: finished_20_finished_at_idx; Type: INDEX ATTACH; Schema: millrace; Owner: -
--

ALTER INDEX millrace.finished_finished ATTACH PARTITION millrace.finished_20_finished_at_idx;


--
-- Name: finished_20_id_idx; Type: INDEX ATTACH; Schema: millrace; Owner: -
--

ALTER INDEX millrace.finished_id ATTACH PARTITION millrace.finished_20_id_idx;


--
-- Name: finished_20_kind_finished_at_idx; Type: INDEX ATTACH; Schema: millrace; Owner: -
--

ALTER INDEX millrace.finished_kind ATTACH PARTITION millrace.finished_20_kind_finished_at_idx;


--
-- Name: finished_21_finished_at_idx; Type: INDEX ATTACH; Schema: millrace; Owner: -
--

ALTER INDEX millrace.finished_finished ATTACH PARTITION millrace.finished_21_finished_at_idx;


--
-- Name: finished_21_id_idx; Type: INDEX ATTACH; Schema: millrace; Owner: -
--

ALTER INDEX millrace.finished_id ATTACH PARTITION millrace.finished_21_id_idx;


--
-- Name: finished_21_kind_finished_at_idx; Type: INDEX ATTACH; Schema: millrace; Owner: -
--

ALTER INDEX millrace.finished_kind ATTACH PARTITION millrace.finished_21_kind_finished_at_idx;


--
-- Name: finished_22_finished_at_idx; Type: INDEX ATTACH; Schema: millrace; Owner: -
--

ALTER INDEX millrace.finished_finished ATTACH PARTITION millrace.finished_22_finished_at_idx;


--
-- Name: finished_22_id_idx; Type: INDEX ATTACH; Schema: millrace; Owner: -
--

ALTER INDEX millrace.finished_id ATTACH PARTITION millrace.finished_22_id_idx;


--
-- Name: finished_22_kind_finished_at_idx; Type: INDEX ATTACH; Schema: millrace; Owner: -
--

ALTER INDEX millrace.finished_kind ATTACH PARTITION millrace.finished_22_kind_finished_at_idx;


--
-- Name: finished_23_finished_at_idx; Type: INDEX ATTACH; Schema: millrace; Owner: -
--

ALTER INDEX millrace.finished_finished ATTACH PARTITION millrace.finished_23_finished_at_idx;


--
-- Name: finished_23_id_idx; Type: INDEX ATTACH; Schema: millrace; Owner: -
--

ALTER INDEX millrace.finished_id ATTACH PARTITION millrace.finished_23_id_idx;


--
-- Name: finished_23_kind_finished_at_idx; Type: INDEX ATTACH; Schema: millrace; Owner: -
--

ALTER INDEX millrace.finished_kind ATTACH PARTITION millrace.finished_23_kind_finished_at_idx;


--
-- Name: finished_24_finished_at_idx; Type: INDEX ATTACH; Schema: millrace; Owner: -
--

ALTER INDEX millrace.finished_finished ATTACH PARTITION millrace.finished_24_finished_at_idx;


--
-- Name: finished_24_id_idx; Type: INDEX ATTACH; Schema: millrace; Owner: -
--

ALTER INDEX millrace.finished_id ATTACH PARTITION millrace.finished_24_id_idx;


--
-- Name: finished_24_kind_finished_at_idx; Type: INDEX ATTACH; Schema: millrace; Owner: -
--

ALTER INDEX millrace.finished_kind ATTACH PARTITION millrace.finished_24_kind_finished_at_idx;


--
-- Name: finished_25_finished_at_idx; Type: INDEX ATTACH; Schema: millrace; Owner: -
--

ALTER INDEX millrace.finished_finished ATTACH PARTITION millrace.finished_25_finished_at_idx;


--
-- Name: finished_25_id_idx; Type: INDEX ATTACH; Schema: millrace; Owner: -
--

ALTER INDEX millrace.finished_id ATTACH PARTITION millrace.finished_25_id_idx;


--
-- Name: finished_25_kind_finished_at_idx; Type: INDEX ATTACH; Schema: millrace; Owner: -
--

ALTER INDEX millrace.finished_kind ATTACH PARTITION millrace.finished_25_kind_finished_at_idx;


--
-- Name: finished_26_finished_at_idx; Type: INDEX ATTACH; Schema: millrace; Owner: -
--

ALTER INDEX millrace.finished_finished ATTACH PARTITION millrace.finished_26_finished_at_idx;


--
-- Name: finished_26_id_idx; Type: INDEX ATTACH; Schema: millrace; Owner: -
--

ALTER INDEX millrace.finished_id ATTACH PARTITION millrace.finished_26_id_idx;


--
-- Name: finished_26_kind_finished_at_idx; Type: INDEX ATTACH; Schema: millrace; Owner: -
--

ALTER INDEX millrace.finished_kind ATTACH PARTITION millrace.finished_26_kind_finished_at_idx;


--
-- Name: finished_27_finished_at_idx; Type: INDEX ATTACH; Schema: millrace; Owner: -
--

ALTER INDEX millrace.finished_finished ATTACH PARTITION millrace.finished_27_finished_at_idx;


--
-- Name: finished_27_id_idx; Type: INDEX ATTACH; Schema: millrace; Owner: -
--

ALTER INDEX millrace.finished_id ATTACH PARTITION millrace.finished_27_id_idx;


--
-- Name: finished_27_kind_finished_at_idx; Type: INDEX ATTACH; Schema: millrace; Owner: -
--

ALTER INDEX millrace.finished_kind ATTACH PARTITION millrace.finished_27_kind_finished_at_idx;


--
-- Name: finished_28_finished_at_idx; Type: INDEX ATTACH; Schema: millrace; Owner: -
--

ALTER INDEX millrace.finished_finished ATTACH PARTITION millrace.finished_28_finished_at_idx;


--
-- Name: finished_28_id_idx; Type: INDEX ATTACH; Schema: millrace; Owner: -
--

ALTER INDEX millrace.finished_id ATTACH PARTITION millrace.finished_28_id_idx;


--
-- Name: finished_28_kind_finished_at_idx; Type: INDEX ATTACH; Schema: millrace; Owner: -
--

ALTER INDEX millrace.finished_kind ATTACH PARTITION millrace.finished_28_kind_finished_at_idx;


--
-- Name: finished_29_finished_at_idx; Type: INDEX ATTACH; Schema: millrace; Owner: -
--

ALTER INDEX millrace.finished_finished ATTACH PARTITION millrace.finished_29_finished_at_idx;


--
-- Name: finished_29_id_idx; Type: INDEX ATTACH; Schema: millrace; Owner: -
--

ALTER INDEX millrace.finished_id ATTACH PARTITION millrace.finished_29_id_idx;


--
-- Name: finished_29_kind_finished_at_idx; Type: INDEX ATTACH; Schema: millrace; Owner: -
--

ALTER INDEX millrace.finished_kind ATTACH PARTITION millrace.finished_29_kind_finished_at_idx;


--
-- Name: finished_2_finished_at_idx; Type: INDEX ATTACH; Schema: millrace; Owner: -
--

ALTER INDEX millrace.finished_finished ATTACH PARTITION millrace.finished_2_finished_at_idx;


--
-- Name: finished_2_id_idx; Type: INDEX ATTACH; Schema: millrace; Owner: -
--

ALTER INDEX millrace.finished_id ATTACH PARTITION millrace.finished_2_id_idx;


--
-- Name: finished_2_kind_finished_at_idx; Type: INDEX ATTACH; Schema: millrace; Owner: -
--

ALTER INDEX millrace.finished_kind ATTACH PARTITION millrace.finished_2_kind_finished_at_idx;


--
-- Name: finished_30_finished_at_idx; Type: INDEX ATTACH; Schema: millrace; Owner: -
--

ALTER INDEX millrace.finished_finished ATTACH PARTITION millrace.finished_30_finished_at_idx;


--
-- Name: finished_30_id_idx; Type: INDEX ATTACH; Schema: millrace; Owner: -
--

ALTER INDEX millrace.finished_id ATTACH PARTITION millrace.finished_30_id_idx;


--
-- Name: finished_30_kind_finished_at_idx; Type: INDEX ATTACH; Schema: millrace; Owner: -
--

ALTER INDEX millrace.finished_kind ATTACH PARTITION millrace.finished_30_kind_finished_at_idx;


--
-- Name: finished_31_finished_at_idx; Type: INDEX ATTACH; Schema: millrace; Owner: -
--

ALTER INDEX millrace.finished_finished ATTACH PARTITION millrace.finished_31_finished_at_idx;


--
-- Name: finished_31_id_idx; Type: INDEX ATTACH; Schema: millrace; Owner: -
--

ALTER INDEX millrace.finished_id ATTACH PARTITION millrace.finished_31_id_idx;


--
-- Name: finished_31_kind_finished_at_idx; Type: INDEX ATTACH; Schema: millrace; Owner: -
--

ALTER INDEX millrace.finished_kind ATTACH PARTITION millrace.finished_31_kind_finished_at_idx;


--
-- Name: finished_32_finished_at_idx; Type: INDEX ATTACH; Schema: millrace; Owner: -
--

ALTER INDEX millrace.finished_finished ATTACH PARTITION millrace.finished_32_finished_at_idx;


--
-- Name: finished_32_id_idx; Type: INDEX ATTACH; Schema: millrace; Owner: -
--

ALTER INDEX millrace.finished_id ATTACH PARTITION millrace.finished_32_id_idx;


--
-- Name: finished_32_kind_finished_at_idx; Type: INDEX ATTACH; Schema: millrace; Owner: -
--

ALTER INDEX millrace.finished_kind ATTACH PARTITION millrace.finished_32_kind_finished_at_idx;


--
-- Name: finished_33_finished_at_idx; Type: INDEX ATTACH; Schema: millrace; Owner: -
--

ALTER INDEX millrace.finished_finished ATTACH PARTITION millrace.finished_33_finished_at_idx;


--
-- Name: finished_33_id_idx; Type: INDEX ATTACH; Schema: millrace; Owner: -
--

ALTER INDEX millrace.finished_id ATTACH PARTITION millrace.finished_33_id_idx;


--
-- Name: finished_33_kind_finished_at_idx; Type: INDEX ATTACH; Schema: millrace; Owner: -
--

ALTER INDEX millrace.finished_kind ATTACH PARTITION millrace.finished_33_kind_finished_at_idx;


--
-- Name: finished_34_finished_at_idx; Type: INDEX ATTACH; Schema: millrace; Owner: -
--

ALTER INDEX millrace.finished_finished ATTACH PARTITION millrace.finished_34_finished_at_idx;


--
-- Name: finished_34_id_idx; Type: INDEX ATTACH; Schema: millrace; Owner: -
--

ALTER INDEX millrace.finished_id ATTACH PARTITION millrace.finished_34_id_idx;


--
-- Name: finished_34_kind_finished_at_idx; Type: INDEX ATTACH; Schema: millrace; Owner: -
--

ALTER INDEX millrace.finished_kind ATTACH PARTITION millrace.finished_34_kind_finished_at_idx;


--
-- Name: finished_35_finished_at_idx; Type: INDEX ATTACH; Schema: millrace; Owner: -
--

ALTER INDEX millrace.finished_finished ATTACH PARTITION millrace.finished_35_finished_at_idx;


--
-- Name: finished_35_id_idx; Type: INDEX ATTACH; Schema: millrace; Owner: -
--

ALTER INDEX millrace.finished_id ATTACH PARTITION millrace.finished_35_id_idx;


--
-- Name: finished_35_kind_finished_at_idx; Type: INDEX ATTACH; Schema: millrace; Owner: -
--

ALTER INDEX millrace.finished_kind ATTACH PARTITION millrace.finished_35_kind_finished_at_idx;


--
-- Name: finished_36_finished_at_idx; Type: INDEX ATTACH; Schema: millrace; Owner: -
--

ALTER INDEX millrace.finished_finished ATTACH PARTITION millrace.finished_36_finished_at_idx;


--
-- Name: finished_36_id_idx; Type: INDEX ATTACH; Schema: millrace; Owner: -
--

ALTER INDEX millrace.finished_id ATTACH PARTITION millrace.finished_36_id_idx;


--
-- Name: finished_36_kind_finished_at_idx; Type: INDEX ATTACH; Schema: millrace; Owner: -
--

ALTER INDEX millrace.finished_kind ATTACH PARTITION millrace.finished_36_kind_finished_at_idx;


--
-- Name: finished_37_finished_at_idx; Type: INDEX ATTACH; Schema: millrace; Owner: -
--

ALTER INDEX millrace.finished_finished ATTACH PARTITION millrace.finished_37_finished_at_idx;


--
-- Name: finished_37_id_idx; Type: INDEX ATTACH; Schema: millrace; Owner: -
--

ALTER INDEX millrace.finished_id ATTACH PARTITION millrace.finished_37_id_idx;


--
-- Name: finished_37_kind_finished_at_idx; Type: INDEX ATTACH; Schema: millrace; Owner: -
--

ALTER INDEX millrace.finished_kind ATTACH PARTITION millrace.finished_37_kind_finished_at_idx;


--
-- Name: finished_38_finished_at_idx; Type: INDEX ATTACH; Schema: millrace; Owner: -
--

ALTER INDEX millrace.finished_finished ATTACH PARTITION millrace.finished_38_finished_at_idx;


--
-- Name: finished_38_id_idx; Type: INDEX ATTACH; Schema: millrace; Owner: -
--

ALTER INDEX millrace.finished_id ATTACH PARTITION millrace.finished_38_id_idx;


--
-- Name: finished_38_kind_finished_at_idx; Type: INDEX ATTACH; Schema: millrace; Owner: -
--

ALTER INDEX millrace.finished_kind ATTACH PARTITION millrace.finished_38_kind_finished_at_idx;


--
-- Name: finished_39_finished_at_idx; Type: INDEX ATTACH; Schema: millrace; Owner: -
--

ALTER INDEX millrace.finished_finished ATTACH PARTITION millrace.finished_39_finished_at_idx;


--
-- Name: finished_39_id_idx; Type: INDEX ATTACH; Schema: millrace; Owner: -
--

ALTER INDEX millrace.finished_id ATTACH PARTITION millrace.finished_39_id_idx;


--
-- Name: finished_39_kind_finished_at_idx; Type: INDEX ATTACH; Schema: millrace; Owner: -
--

ALTER INDEX millrace.finished_kind ATTACH PARTITION millrace.finished_39_kind_finished_at_idx;


--
-- Name: finished_3_finished_at_idx; Type: INDEX ATTACH; Schema: millrace; Owner: -
--

ALTER INDEX millrace.finished_finished ATTACH PARTITION millrace.finished_3_finished_at_idx;


--
-- Name: finished_3_id_idx; Type: INDEX ATTACH; Schema: millrace; Owner: -
--

ALTER INDEX millrace.finished_id ATTACH PARTITION millrace.finished_3_id_idx;


--
-- Name: finished_3_kind_finished_at_idx; Type: INDEX ATTACH; Schema: millrace; Owner: -
--

ALTER INDEX millrace.finished_kind ATTACH PARTITION millrace.finished_3_kind_finished_at_idx;


--
-- Name: finished_40_finished_at_idx; Type: INDEX ATTACH; Schema: millrace; Owner: -
--

ALTER INDEX millrace.finished_finished ATTACH PARTITION millrace.finished_40_finished_at_idx;


--
-- Name: finished_40_id_idx; Type: INDEX ATTACH; Schema: millrace; Owner: -
--

ALTER INDEX millrace.finished_id ATTACH PARTITION millrace.finished_40_id_idx;


--
-- Name: finished_40_kind_finished_at_idx; Type: INDEX ATTACH; Schema: millrace; Owner: -
--

ALTER INDEX millrace.finished_kind ATTACH PARTITION millrace.finished_40_kind_finished_at_idx;


--
-- Name: finished_41_finished_at_idx; Type: INDEX ATTACH; Schema: millrace; Owner: -
--

ALTER INDEX millrace.finished_finished ATTACH PARTITION millrace.finished_41_finished_at_idx;


--
-- Name: finished_41_id_idx; Type: INDEX ATTACH; Schema: millrace; Owner: -
--

ALTER INDEX millrace.finished_id ATTACH PARTITION millrace.finished_41_id_idx;


--
-- Name: finished_41_kind_finished_at_idx; Type: INDEX ATTACH; Schema: millrace; Owner: -
--

ALTER INDEX millrace.finished_kind ATTACH PARTITION millrace.finished_41_kind_finished_at_idx;


--
-- Name: finished_42_finished_at_idx; Type: INDEX ATTACH; Schema: millrace; Owner: -
--

ALTER INDEX millrace.finished_finished ATTACH PARTITION millrace.finished_42_finished_at_idx;


--
-- Name: finished_42_id_idx; Type: INDEX ATTACH; Schema: millrace; Owner: -
--

ALTER INDEX millrace.finished_id ATTACH PARTITION millrace.finished_42_id_idx;


--
-- Name: finished_42_kind_finished_at_idx; Type: INDEX ATTACH; Schema: millrace; Owner: -
--

ALTER INDEX millrace.finished_kind ATTACH PARTITION millrace.finished_42_kind_finished_at_idx;


--
-- Name: finished_43_finished_at_idx; Type: INDEX ATTACH; Schema: millrace; Owner: -
--

ALTER INDEX millrace.finished_finished ATTACH PARTITION millrace.finished_43_finished_at_idx;


--
-- Name: finished_43_id_idx; Type: INDEX ATTACH; Schema: millrace; Owner: -
--

ALTER INDEX millrace.finished_id ATTACH PARTITION millrace.finished_43_id_idx;


--
-- Name: finished_43_kind_finished_at_idx; Type: INDEX ATTACH; Schema: millrace; Owner: -
--

ALTER INDEX millrace.finished_kind ATTACH PARTITION millrace.finished_43_kind_finished_at_idx;


--
-- Name: finished_44_finished_at_idx; Type: INDEX ATTACH; Schema: millrace; Owner: -
--

ALTER INDEX millrace.finished_finished ATTACH PARTITION millrace.finished_44_finished_at_idx;


--
-- Name: finished_44_id_idx; Type: INDEX ATTACH; Schema: millrace; Owner: -
--

ALTER INDEX millrace.finished_id ATTACH PARTITION millrace.finished_44_id_idx;


--
-- Name: finished_44_kind_finished_at_idx; Type: INDEX ATTACH; Schema: millrace; Owner: -
--

ALTER INDEX millrace.finished_kind ATTACH PARTITION millrace.finished_44_kind_finished_at_idx;


--
-- Name: finished_45_finished_at_idx; Type: INDEX ATTACH; Schema: millrace; Owner: -
--

ALTER INDEX millrace.finished_finished ATTACH PARTITION millrace.finished_45_finished_at_idx;


--
-- Name: finished_45_id_idx; Type: INDEX ATTACH; Schema: millrace; Owner: -
--

ALTER INDEX millrace.finished_id ATTACH PARTITION millrace.finished_45_id_idx;


--
-- Name: finished_45_kind_finished_at_idx; Type: INDEX ATTACH; Schema: millrace; Owner: -
--

ALTER INDEX millrace.finished_kind ATTACH PARTITION millrace.finished_45_kind_finished_at_idx;


--
-- Name: finished_46_finished_at_idx; Type: INDEX ATTACH; Schema: millrace; Owner: -
--

ALTER INDEX millrace.finished_finished ATTACH PARTITION millrace.finished_46_finished_at_idx;


--
-- Name: finished_46_id_idx; Type: INDEX ATTACH; Schema: millrace; Owner: -
--

ALTER INDEX millrace.finished_id ATTACH PARTITION millrace.finished_46_id_idx;


--
-- Name: finished_46_kind_finished_at_idx; Type: INDEX ATTACH; Schema: millrace; Owner: -
--

ALTER INDEX millrace.finished_kind ATTACH PARTITION millrace.finished_46_kind_finished_at_idx;


--
-- Name: finished_47_finished_at_idx; Type: INDEX ATTACH; Schema: millrace; Owner: -
--

ALTER INDEX millrace.finished_finished ATTACH PARTITION millrace.finished_47_finished_at_idx;


--
-- Name: finished_47_id_idx; Type: INDEX ATTACH; Schema: millrace; Owner: -
--

ALTER INDEX millrace.finished_id ATTACH PARTITION millrace.finished_47_id_idx;


--
-- Name: finished_47_kind_finished_at_idx; Type: INDEX ATTACH; Schema: millrace; Owner: -
--

ALTER INDEX millrace.finished_kind ATTACH PARTITION millrace.finished_47_kind_finished_at_idx;


--
-- Name: finished_48_finished_at_idx; Type: INDEX ATTACH; Schema: millrace; Owner: -
--

ALTER INDEX millrace.finished_finished ATTACH PARTITION millrace.finished_48_finished_at_idx;


--
-- Name: finished_48_id_idx; Type: INDEX ATTACH; Schema: millrace; Owner: -
--

ALTER INDEX millrace.finished_id ATTACH PARTITION millrace.finished_48_id_idx;


--
-- Name: finished_48_kind_finished_at_idx; Type: INDEX ATTACH; Schema: millrace; Owner: -
--

ALTER INDEX millrace.finished_kind ATTACH PARTITION millrace.finished_48_kind_finished_at_idx;


--
-- Name: finished_49_finished_at_idx; Type: INDEX ATTACH; Schema: millrace; Owner: -
--

ALTER INDEX millrace.finished_finished ATTACH PARTITION millrace.finished_49_finished_at_idx;


--
-- Name: finished_49_id_idx; Type: INDEX ATTACH; Schema: millrace; Owner: -
--

ALTER INDEX millrace.finished_id ATTACH PARTITION millrace.finished_49_id_idx;


--
-- Name: finished_49_kind_finished_at_idx; Type: INDEX ATTACH; Schema: millrace; Owner: -
--

ALTER INDEX millrace.finished_kind ATTACH PARTITION millrace.finished_49_kind_finished_at_idx;


--
-- Name: finished_4_finished_at_idx; Type: INDEX ATTACH; Schema: millrace; Owner: -
--

ALTER INDEX millrace.finished_finished ATTACH PARTITION millrace.finished_4_finished_at_idx;


--
-- Name: finished_4_id_idx; Type: INDEX ATTACH; Schema: millrace; Owner: -
--

ALTER INDEX millrace.finished_id ATTACH PARTITION millrace.finished_4_id_idx;


--
-- Name: finished_4_kind_finished_at_idx; Type: INDEX ATTACH; Schema: millrace; Owner: -
--

ALTER INDEX millrace.finished_kind ATTACH PARTITION millrace.finished_4_kind_finished_at_idx;


--
-- Name: finished_50_finished_at_idx; Type: INDEX ATTACH; Schema: millrace; Owner: -
--

ALTER INDEX millrace.finished_finished ATTACH PARTITION millrace.finished_50_finished_at_idx;


--
-- Name: finished_50_id_idx; Type: INDEX ATTACH; Schema: millrace; Owner: -
--

ALTER INDEX millrace.finished_id ATTACH PARTITION millrace.finished_50_id_idx;


--
-- Name: finished_50_kind_finished_at_idx; Type: INDEX ATTACH; Schema: millrace; Owner: -
--

ALTER INDEX millrace.finished_kind ATTACH PARTITION millrace.finished_50_kind_finished_at_idx;


--
-- Name: finished_51_finished_at_idx; Type: INDEX ATTACH; Schema: millrace; Owner: -
--

ALTER INDEX millrace.finished_finished ATTACH PARTITION millrace.finished_51_finished_at_idx;


--
-- Name: finished_51_id_idx; Type: INDEX ATTACH; Schema: millrace; Owner: -
--

ALTER INDEX millrace.finished_id ATTACH PARTITION millrace.finished_51_id_idx;


--
-- Name: finished_51_kind_finished_at_idx; Type: INDEX ATTACH; Schema: millrace; Owner: -
--

ALTER INDEX millrace.finished_kind ATTACH PARTITION millrace.finished_51_kind_finished_at_idx;


--
-- Name: finished_52_finished_at_idx; Type: INDEX ATTACH; Schema: millrace; Owner: -
--

ALTER INDEX millrace.finished_finished ATTACH PARTITION millrace.finished_52_finished_at_idx;


--
-- Name: finished_52_id_idx; Type: INDEX ATTACH; Schema: millrace; Owner: -
--

ALTER INDEX millrace.finished_id ATTACH PARTITION millrace.finished_52_id_idx;


--
-- Name: finished_52_kind_finished_at_idx; Type: INDEX ATTACH; Schema: millrace; Owner: -
--

ALTER INDEX millrace.finished_kind ATTACH PARTITION millrace.finished_52_kind_finished_at_idx;


--
-- Name: finished_53_finished_at_idx; Type: INDEX ATTACH; Schema: millrace; Owner: -
--

ALTER INDEX millrace.finished_finished ATTACH PARTITION millrace.finished_53_finished_at_idx;


--
-- Name: finished_53_id_idx; Type: INDEX ATTACH; Schema: millrace; Owner: -
--

ALTER INDEX millrace.finished_id ATTACH PARTITION millrace.finished_53_id_idx;


--
-- Name: finished_53_kind_finished_at_idx; Type: INDEX ATTACH; Schema: millrace; Owner: -
--

ALTER INDEX millrace.finished_kind ATTACH PARTITION millrace.finished_53_kind_finished_at_idx;


--
-- Name: finished_54_finished_at_idx; Type: INDEX ATTACH; Schema: millrace; Owner: -
--

ALTER INDEX millrace.finished_finished ATTACH PARTITION millrace.finished_54_finished_at_idx;


--
-- Name: finished_54_id_idx; Type: INDEX ATTACH; Schema: millrace; Owner: -
--

ALTER INDEX millrace.finished_id ATTACH PARTITION millrace.finished_54_id_idx;


--
-- Name: finished_54_kind_finished_at_idx; Type: INDEX ATTACH; Schema: millrace; Owner: -
--

ALTER INDEX millrace.finished_kind ATTACH PARTITION millrace.finished_54_kind_finished_at_idx;


--
-- Name: finished_55_finished_at_idx; Type: INDEX ATTACH; Schema: millrace; Owner: -
--

ALTER INDEX millrace.finished_finished ATTACH PARTITION millrace.finished_55_finished_at_idx;


--
-- Name: finished_55_id_idx; Type: INDEX ATTACH; Schema: millrace; Owner: -
--

ALTER INDEX millrace.finished_id ATTACH PARTITION millrace.finished_55_id_idx;


--
-- Name: finished_55_kind_finished_at_idx; Type: INDEX ATTACH; Schema: millrace; Owner: -
--

ALTER INDEX millrace.finished_kind ATTACH PARTITION millrace.finished_55_kind_finished_at_idx;


--
-- Name: finished_56_finished_at_idx; Type: INDEX ATTACH; Schema: millrace; Owner: -
--

ALTER INDEX millrace.finished_finished ATTACH PARTITION millrace.finished_56_finished_at_idx;


--
-- Name: finished_56_id_idx; Type: INDEX ATTACH; Schema: millrace; Owner: -
--

ALTER INDEX millrace.finished_id ATTACH PARTITION millrace.finished_56_id_idx;


--
-- Name: finished_56_kind_finished_at_idx; Type: INDEX ATTACH; Schema: millrace; Owner: -
--

ALTER INDEX millrace.finished_kind ATTACH PARTITION millrace.finished_56_kind_finished_at_idx;


--
-- Name: finished_57_finished_at_idx; Type: INDEX ATTACH; Schema: millrace; Owner: -
--

ALTER INDEX millrace.finished_finished ATTACH PARTITION millrace.finished_57_finished_at_idx;


--
-- Name: finished_57_id_idx; Type: INDEX ATTACH; Schema: millrace; Owner: -
--

ALTER INDEX millrace.finished_id ATTACH PARTITION millrace.finished_57_id_idx;


--
-- Name: finished_57_kind_finished_at_idx; Type: INDEX ATTACH; Schema: millrace; Owner: -
--

ALTER INDEX millrace.finished_kind ATTACH PARTITION millrace.finished_57_kind_finished_at_idx;


--
-- Name: finished_58_finished_at_idx; Type: INDEX ATTACH; Schema: millrace; Owner: -
--

ALTER INDEX millrace.finished_finished ATTACH PARTITION millrace.finished_58_finished_at_idx;


--
-- Name: finished_58_id_idx; Type: INDEX ATTACH; Schema: millrace; Owner: -
--

ALTER INDEX millrace.finished_id ATTACH PARTITION millrace.finished_58_id_idx;


--
-- Name: finished_58_kind_finished_at_idx; Type: INDEX ATTACH; Schema: millrace; Owner: -
--

ALTER INDEX millrace.finished_kind ATTACH PARTITION millrace.finished_58_kind_finished_at_idx;


--
-- Name: finished_59_finished_at_idx; Type: INDEX ATTACH; Schema: millrace; Owner: -
--

ALTER INDEX millrace.finished_finished ATTACH PARTITION millrace.finished_59_finished_at_idx;


--
-- Name: finished_59_id_idx; Type: INDEX ATTACH; Schema: millrace; Owner: -
--

ALTER INDEX millrace.finished_id ATTACH PARTITION millrace.finished_59_id_idx;


--
-- Name: finished_59_kind_finished_at_idx; Type: INDEX ATTACH; Schema: millrace; Owner: -
--

ALTER INDEX millrace.finished_kind ATTACH PARTITION millrace.finished_59_kind_finished_at_idx;


--
-- Name: finished_5_finished_at_idx; Type: INDEX ATTACH; Schema: millrace; Owner: -
--

ALTER INDEX millrace.finished_finished ATTACH PARTITION millrace.finished_5_finished_at_idx;


--
-- Name: finished_5_id_idx; Type: INDEX ATTACH; Schema: millrace; Owner: -
--

ALTER INDEX millrace.finished_id ATTACH PARTITION millrace.finished_5_id_idx;


--
-- Name: finished_5_kind_finished_at_idx; Type: INDEX ATTACH; Schema: millrace; Owner: -
--

ALTER INDEX millrace.finished_kind ATTACH PARTITION millrace.finished_5_kind_finished_at_idx;


--
-- Name: finished_60_finished_at_idx; Type: INDEX ATTACH; Schema: millrace; Owner: -
--

ALTER INDEX millrace.finished_finished ATTACH PARTITION millrace.finished_60_finished_at_idx;


--
-- Name: finished_60_id_idx; Type: INDEX ATTACH; Schema: millrace; Owner: -
--

ALTER INDEX millrace.finished_id ATTACH PARTITION millrace.finished_60_id_idx;


--
-- Name: finished_60_kind_finished_at_idx; Type: INDEX ATTACH; Schema: millrace; Owner: -
--

ALTER INDEX millrace.finished_kind ATTACH PARTITION millrace.finished_60_kind_finished_at_idx;


--
-- Name: finished_61_finished_at_idx; Type: INDEX ATTACH; Schema: millrace; Owner: -
--

ALTER INDEX millrace.finished_finished ATTACH PARTITION millrace.finished_61_finished_at_idx;


--
-- Name: finished_61_id_idx; Type: INDEX ATTACH; Schema: millrace; Owner: -
--

ALTER INDEX millrace.finished_id ATTACH PARTITION millrace.finished_61_id_idx;


--
-- Name: finished_61_kind_finished_at_idx; Type: INDEX ATTACH; Schema: millrace; Owner: -
--

ALTER INDEX millrace.finished_kind ATTACH PARTITION millrace.finished_61_kind_finished_at_idx;


--
-- Name: finished_62_finished_at_idx; Type: INDEX ATTACH; Schema: millrace; Owner: -
--

ALTER INDEX millrace.finished_finished ATTACH PARTITION millrace.finished_62_finished_at_idx;


--
-- Name: finished_62_id_idx; Type: INDEX ATTACH; Schema: millrace; Owner: -
--

ALTER INDEX millrace.finished_id ATTACH PARTITION millrace.finished_62_id_idx;


--
-- Name: finished_62_kind_finished_at_idx; Type: INDEX ATTACH; Schema: millrace; Owner: -
--

ALTER INDEX millrace.finished_kind ATTACH PARTITION millrace.finished_62_kind_finished_at_idx;


--
-- Name: finished_63_finished_at_idx; Type: INDEX ATTACH; Schema: millrace; Owner: -
--

ALTER INDEX millrace.finished_finished ATTACH PARTITION millrace.finished_63_finished_at_idx;


--
-- Name: finished_63_id_idx; Type: INDEX ATTACH; Schema: millrace; Owner: -
--

ALTER INDEX millrace.finished_id ATTACH PARTITION millrace.finished_63_id_idx;


--
-- Name: finished_63_kind_finished_at_idx; Type: INDEX ATTACH; Schema: millrace; Owner: -
--

ALTER INDEX millrace.finished_kind ATTACH PARTITION millrace.finished_63_kind_finished_at_idx;


--
-- Name: finished_64_finished_at_idx; Type: INDEX ATTACH; Schema: millrace; Owner: -
--

ALTER INDEX millrace.finished_finished ATTACH PARTITION millrace.finished_64_finished_at_idx;


--
-- Name: finished_64_id_idx; Type: INDEX ATTACH; Schema: millrace; Owner: -
--

ALTER INDEX millrace.finished_id ATTACH PARTITION millrace.finished_64_id_idx;


--
-- Name: finished_64_kind_finished_at_idx; Type: INDEX ATTACH; Schema: millrace; Owner: -
--

ALTER INDEX millrace.finished_kind ATTACH PARTITION millrace.finished_64_kind_finished_at_idx;


--
-- Name: finished_65_finished_at_idx; Type: INDEX ATTACH; Schema: millrace; Owner: -
--

ALTER INDEX millrace.finished_finished ATTACH PARTITION millrace.finished_65_finished_at_idx;


--
-- Name: finished_65_id_idx; Type: INDEX ATTACH; Schema: millrace; Owner: -
--

ALTER INDEX millrace.finished_id ATTACH PARTITION millrace.finished_65_id_idx;


--
-- Name: finished_65_kind_finished_at_idx; Type: INDEX ATTACH; Schema: millrace; Owner: -
--

ALTER INDEX millrace.finished_kind ATTACH PARTITION millrace.finished_65_kind_finished_at_idx;


--
-- Name: finished_66_finished_at_idx; Type: INDEX ATTACH; Schema: millrace; Owner: -
--

ALTER INDEX millrace.finished_finished ATTACH PARTITION millrace.finished_66_finished_at_idx;


--
-- Name: finished_66_id_idx; Type: INDEX ATTACH; Schema: millrace; Owner: -
--

ALTER INDEX millrace.finished_id ATTACH PARTITION millrace.finished_66_id_idx;


--
-- Name: finished_66_kind_finished_at_idx; Type: INDEX ATTACH; Schema: millrace; Owner: -
--

ALTER INDEX millrace.finished_kind ATTACH PARTITION millrace.finished_66_kind_finished_at_idx;


--
-- Name: finished_67_finished_at_idx; Type: INDEX ATTACH; Schema: millrace; Owner: -
--

ALTER INDEX millrace.finished_finished ATTACH PARTITION millrace.finished_67_finished_at_idx;


--
-- Name: finished_67_id_idx; Type: INDEX ATTACH; Schema: millrace; Owner: -
--

ALTER INDEX millrace.finished_id ATTACH PARTITION millrace.finished_67_id_idx;


--
-- Name: finished_67_kind_finished_at_idx; Type: INDEX ATTACH; Schema: millrace; Owner: -
--

ALTER INDEX millrace.finished_kind ATTACH PARTITION millrace.finished_67_kind_finished_at_idx;


--
-- Name: finished_6_finished_at_idx; Type: INDEX ATTACH; Schema: millrace; Owner: -
--

ALTER INDEX millrace.finished_finished ATTACH PARTITION millrace.finished_6_finished_at_idx;


--
-- Name: finished_6_id_idx; Type: INDEX ATTACH; Schema: millrace; Owner: -
--

ALTER INDEX millrace.finished_id ATTACH PARTITION millrace.finished_6_id_idx;


--
-- Name: finished_6_kind_finished_at_idx; Type: INDEX ATTACH; Schema: millrace; Owner: -
--

ALTER INDEX millrace.finished_kind ATTACH PARTITION millrace.finished_6_kind_finished_at_idx;


--
-- Name: finished_7_finished_at_idx; Type: INDEX ATTACH; Schema: millrace; Owner: -
--

ALTER INDEX millrace.finished_finished ATTACH PARTITION millrace.finished_7_finished_at_idx;


--
-- Name: finished_7_id_idx; Type: INDEX ATTACH; Schema: millrace; Owner: -
--

ALTER INDEX millrace.finished_id ATTACH PARTITION millrace.finished_7_id_idx;


--
-- Name: finished_7_kind_finished_at_idx; Type: INDEX ATTACH; Schema: millrace; Owner: -
--

ALTER INDEX millrace.finished_kind ATTACH PARTITION millrace.finished_7_kind_finished_at_idx;


--
-- Name: finished_8_finished_at_idx; Type: INDEX ATTACH; Schema: millrace; Owner: -
--

ALTER INDEX millrace.finished_finished ATTACH PARTITION millrace.finished_8_finished_at_idx;


--
-- Name: finished_8_id_idx; Type: INDEX ATTACH; Schema: millrace; Owner: -
--

ALTER INDEX millrace.finished_id ATTACH PARTITION millrace.finished_8_id_idx;


--
-- Name: finished_8_kind_finished_at_idx; Type: INDEX ATTACH; Schema: millrace; Owner: -
--

ALTER INDEX millrace.finished_kind ATTACH PARTITION millrace.finished_8_kind_finished_at_idx;


--
-- Name: finished_9_finished_at_idx; Type: INDEX ATTACH; Schema: millrace; Owner: -
--

ALTER INDEX millrace.finished_finished ATTACH PARTITION millrace.finished_9_finished_at_idx;


--
-- Name: finished_9_id_idx; Type: INDEX ATTACH; Schema: millrace; Owner: -
--

ALTER INDEX millrace.finished_id ATTACH PARTITION millrace.finished_9_id_idx;


--
-- Name: finished_9_kind_finished_at_idx; Type: INDEX ATTACH; Schema: millrace; Owner: -
--

ALTER INDEX millrace.finished_kind ATTACH PARTITION millrace.finished_9_kind_finished_at_idx;


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
-- Name: job_0_id_idx; Type: INDEX ATTACH; Schema: millrace; Owner: -
--

ALTER INDEX millrace.job_id ATTACH PARTITION millrace.job_0_id_idx;


--
-- Name: job_0_queue_priority_txid_id_idx; Type: INDEX ATTACH; Schema: millrace; Owner: -
--

ALTER INDEX millrace.job_lane ATTACH PARTITION millrace.job_0_queue_priority_txid_id_idx;


--
-- Name: job_1_id_idx; Type: INDEX ATTACH; Schema: millrace; Owner: -
--

ALTER INDEX millrace.job_id ATTACH PARTITION millrace.job_1_id_idx;


--
-- Name: job_1_queue_priority_txid_id_idx; Type: INDEX ATTACH; Schema: millrace; Owner: -
--

ALTER INDEX millrace.job_lane ATTACH PARTITION millrace.job_1_queue_priority_txid_id_idx;


--
-- Name: job_2_id_idx; Type: INDEX ATTACH; Schema: millrace; Owner: -
--

ALTER INDEX millrace.job_id ATTACH PARTITION millrace.job_2_id_idx;


--
-- Name: job_2_queue_priority_txid_id_idx; Type: INDEX ATTACH; Schema: millrace; Owner: -
--

ALTER INDEX millrace.job_lane ATTACH PARTITION millrace.job_2_queue_priority_txid_id_idx;


--
-- Name: job_3_id_idx; Type: INDEX ATTACH; Schema: millrace; Owner: -
--

ALTER INDEX millrace.job_id ATTACH PARTITION millrace.job_3_id_idx;


--
-- Name: job_3_queue_priority_txid_id_idx; Type: INDEX ATTACH; Schema: millrace; Owner: -
--

ALTER INDEX millrace.job_lane ATTACH PARTITION millrace.job_3_queue_priority_txid_id_idx;


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
-- Name: sched_0_id_idx; Type: INDEX ATTACH; Schema: millrace; Owner: -
--

ALTER INDEX millrace.sched_id ATTACH PARTITION millrace.sched_0_id_idx;


--
-- Name: sched_0_txid_idx; Type: INDEX ATTACH; Schema: millrace; Owner: -
--

ALTER INDEX millrace.sched_txid ATTACH PARTITION millrace.sched_0_txid_idx;


--
-- Name: sched_1_due_at_idx; Type: INDEX ATTACH; Schema: millrace; Owner: -
--

ALTER INDEX millrace.sched_due ATTACH PARTITION millrace.sched_1_due_at_idx;


--
-- Name: sched_1_id_idx; Type: INDEX ATTACH; Schema: millrace; Owner: -
--

ALTER INDEX millrace.sched_id ATTACH PARTITION millrace.sched_1_id_idx;


--
-- Name: sched_1_txid_idx; Type: INDEX ATTACH; Schema: millrace; Owner: -
--

ALTER INDEX millrace.sched_txid ATTACH PARTITION millrace.sched_1_txid_idx;


--
-- Name: tick_0_owner_req_idx; Type: INDEX ATTACH; Schema: millrace; Owner: -
--

ALTER INDEX millrace.tick_owner_req ATTACH PARTITION millrace.tick_0_owner_req_idx;


--
-- Name: tick_0_queue_priority_tick_id_idx; Type: INDEX ATTACH; Schema: millrace; Owner: -
--

ALTER INDEX millrace.tick_lane ATTACH PARTITION millrace.tick_0_queue_priority_tick_id_idx;


--
-- Name: tick_0_tick_id_idx; Type: INDEX ATTACH; Schema: millrace; Owner: -
--

ALTER INDEX millrace.tick_tick ATTACH PARTITION millrace.tick_0_tick_id_idx;


--
-- Name: tick_1_owner_req_idx; Type: INDEX ATTACH; Schema: millrace; Owner: -
--

ALTER INDEX millrace.tick_owner_req ATTACH PARTITION millrace.tick_1_owner_req_idx;


--
-- Name: tick_1_queue_priority_tick_id_idx; Type: INDEX ATTACH; Schema: millrace; Owner: -
--

ALTER INDEX millrace.tick_lane ATTACH PARTITION millrace.tick_1_queue_priority_tick_id_idx;


--
-- Name: tick_1_tick_id_idx; Type: INDEX ATTACH; Schema: millrace; Owner: -
--

ALTER INDEX millrace.tick_tick ATTACH PARTITION millrace.tick_1_tick_id_idx;


--
-- Name: tick_2_owner_req_idx; Type: INDEX ATTACH; Schema: millrace; Owner: -
--

ALTER INDEX millrace.tick_owner_req ATTACH PARTITION millrace.tick_2_owner_req_idx;


--
-- Name: tick_2_queue_priority_tick_id_idx; Type: INDEX ATTACH; Schema: millrace; Owner: -
--

ALTER INDEX millrace.tick_lane ATTACH PARTITION millrace.tick_2_queue_priority_tick_id_idx;


--
-- Name: tick_2_tick_id_idx; Type: INDEX ATTACH; Schema: millrace; Owner: -
--

ALTER INDEX millrace.tick_tick ATTACH PARTITION millrace.tick_2_tick_id_idx;


--
-- Name: tick_3_owner_req_idx; Type: INDEX ATTACH; Schema: millrace; Owner: -
--

ALTER INDEX millrace.tick_owner_req ATTACH PARTITION millrace.tick_3_owner_req_idx;


--
-- Name: tick_3_queue_priority_tick_id_idx; Type: INDEX ATTACH; Schema: millrace; Owner: -
--

ALTER INDEX millrace.tick_lane ATTACH PARTITION millrace.tick_3_queue_priority_tick_id_idx;


--
-- Name: tick_3_tick_id_idx; Type: INDEX ATTACH; Schema: millrace; Owner: -
--

ALTER INDEX millrace.tick_tick ATTACH PARTITION millrace.tick_3_tick_id_idx;


--
-- Name: uniq_0_key_job_id_idx; Type: INDEX ATTACH; Schema: millrace; Owner: -
--

ALTER INDEX millrace.uniq_key ATTACH PARTITION millrace.uniq_0_key_job_id_idx;


--
-- Name: uniq_1_key_job_id_idx; Type: INDEX ATTACH; Schema: millrace; Owner: -
--

ALTER INDEX millrace.uniq_key ATTACH PARTITION millrace.uniq_1_key_job_id_idx;


--
-- Name: uniq_2_key_job_id_idx; Type: INDEX ATTACH; Schema: millrace; Owner: -
--

ALTER INDEX millrace.uniq_key ATTACH PARTITION millrace.uniq_2_key_job_id_idx;


--
-- Name: uniq_3_key_job_id_idx; Type: INDEX ATTACH; Schema: millrace; Owner: -
--

ALTER INDEX millrace.uniq_key ATTACH PARTITION millrace.uniq_3_key_job_id_idx;


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
-- Name: FUNCTION cancel(p_id bigint); Type: ACL; Schema: millrace; Owner: -
--

REVOKE ALL ON FUNCTION millrace.cancel(p_id bigint) FROM PUBLIC;
GRANT ALL ON FUNCTION millrace.cancel(p_id bigint) TO millrace_admin;


--
-- Name: FUNCTION cancelled(p_ids bigint[]); Type: ACL; Schema: millrace; Owner: -
--

REVOKE ALL ON FUNCTION millrace.cancelled(p_ids bigint[]) FROM PUBLIC;
GRANT ALL ON FUNCTION millrace.cancelled(p_ids bigint[]) TO millrace_worker;


--
-- Name: FUNCTION check_job(p_kind text, p_args jsonb, p_queue text, p_priority integer, p_max_attempts integer); Type: ACL; Schema: millrace; Owner: -
--

REVOKE ALL ON FUNCTION millrace.check_job(p_kind text, p_args jsonb, p_queue text, p_priority integer, p_max_attempts integer) FROM PUBLIC;


--
-- Name: FUNCTION claim(p_queue text, p_owner integer, p_req bigint, p_retry boolean, p_max_jobs integer, p_max_bytes bigint, p_starve interval); Type: ACL; Schema: millrace; Owner: -
--

REVOKE ALL ON FUNCTION millrace.claim(p_queue text, p_owner integer, p_req bigint, p_retry boolean, p_max_jobs integer, p_max_bytes bigint, p_starve interval) FROM PUBLIC;
GRANT ALL ON FUNCTION millrace.claim(p_queue text, p_owner integer, p_req bigint, p_retry boolean, p_max_jobs integer, p_max_bytes bigint, p_starve interval) TO millrace_worker;


--
-- Name: FUNCTION claim_space(); Type: ACL; Schema: millrace; Owner: -
--

REVOKE ALL ON FUNCTION millrace.claim_space() FROM PUBLIC;


--
-- Name: FUNCTION complete(p_job bigint, p_tick bigint, p_token bigint, p_attempt integer, p_queue text, p_kind text, p_args jsonb, p_priority smallint, p_max_attempts integer, p_created_at timestamp with time zone, p_started timestamp with time zone, p_owner integer); Type: ACL; Schema: millrace; Owner: -
--

REVOKE ALL ON FUNCTION millrace.complete(p_job bigint, p_tick bigint, p_token bigint, p_attempt integer, p_queue text, p_kind text, p_args jsonb, p_priority smallint, p_max_attempts integer, p_created_at timestamp with time zone, p_started timestamp with time zone, p_owner integer) FROM PUBLIC;
GRANT ALL ON FUNCTION millrace.complete(p_job bigint, p_tick bigint, p_token bigint, p_attempt integer, p_queue text, p_kind text, p_args jsonb, p_priority smallint, p_max_attempts integer, p_created_at timestamp with time zone, p_started timestamp with time zone, p_owner integer) TO millrace_worker;


--
-- Name: FUNCTION current_gen(); Type: ACL; Schema: millrace; Owner: -
--

REVOKE ALL ON FUNCTION millrace.current_gen() FROM PUBLIC;


--
-- Name: FUNCTION current_segment(); Type: ACL; Schema: millrace; Owner: -
--

REVOKE ALL ON FUNCTION millrace.current_segment() FROM PUBLIC;


--
-- Name: FUNCTION enqueue(p_kind text, p_args jsonb, p_queue text, p_priority integer, p_run_at timestamp with time zone, p_max_attempts integer, p_notify boolean, p_unique_key text, p_unique_states integer, p_unique_until timestamp with time zone, p_timeout_ms integer); Type: ACL; Schema: millrace; Owner: -
--

REVOKE ALL ON FUNCTION millrace.enqueue(p_kind text, p_args jsonb, p_queue text, p_priority integer, p_run_at timestamp with time zone, p_max_attempts integer, p_notify boolean, p_unique_key text, p_unique_states integer, p_unique_until timestamp with time zone, p_timeout_ms integer) FROM PUBLIC;
GRANT ALL ON FUNCTION millrace.enqueue(p_kind text, p_args jsonb, p_queue text, p_priority integer, p_run_at timestamp with time zone, p_max_attempts integer, p_notify boolean, p_unique_key text, p_unique_states integer, p_unique_until timestamp with time zone, p_timeout_ms integer) TO millrace_producer;
GRANT ALL ON FUNCTION millrace.enqueue(p_kind text, p_args jsonb, p_queue text, p_priority integer, p_run_at timestamp with time zone, p_max_attempts integer, p_notify boolean, p_unique_key text, p_unique_states integer, p_unique_until timestamp with time zone, p_timeout_ms integer) TO millrace_worker;


--
-- Name: FUNCTION enqueue_many(p_kind text[], p_args jsonb[], p_queue text[], p_priority integer[], p_run_at timestamp with time zone[], p_max_attempts integer[], p_notify boolean, p_unique_key text[], p_unique_states integer[], p_unique_until timestamp with time zone[], p_timeout_ms integer[]); Type: ACL; Schema: millrace; Owner: -
--

REVOKE ALL ON FUNCTION millrace.enqueue_many(p_kind text[], p_args jsonb[], p_queue text[], p_priority integer[], p_run_at timestamp with time zone[], p_max_attempts integer[], p_notify boolean, p_unique_key text[], p_unique_states integer[], p_unique_until timestamp with time zone[], p_timeout_ms integer[]) FROM PUBLIC;
GRANT ALL ON FUNCTION millrace.enqueue_many(p_kind text[], p_args jsonb[], p_queue text[], p_priority integer[], p_run_at timestamp with time zone[], p_max_attempts integer[], p_notify boolean, p_unique_key text[], p_unique_states integer[], p_unique_until timestamp with time zone[], p_timeout_ms integer[]) TO millrace_producer;
GRANT ALL ON FUNCTION millrace.enqueue_many(p_kind text[], p_args jsonb[], p_queue text[], p_priority integer[], p_run_at timestamp with time zone[], p_max_attempts integer[], p_notify boolean, p_unique_key text[], p_unique_states integer[], p_unique_until timestamp with time zone[], p_timeout_ms integer[]) TO millrace_worker;


--
-- Name: FUNCTION expire_history(p_completed interval, p_other interval); Type: ACL; Schema: millrace; Owner: -
--

REVOKE ALL ON FUNCTION millrace.expire_history(p_completed interval, p_other interval) FROM PUBLIC;
GRANT ALL ON FUNCTION millrace.expire_history(p_completed interval, p_other interval) TO millrace_worker;


--
-- Name: FUNCTION fence_space(); Type: ACL; Schema: millrace; Owner: -
--

REVOKE ALL ON FUNCTION millrace.fence_space() FROM PUBLIC;


--
-- Name: FUNCTION final_state(p_id bigint); Type: ACL; Schema: millrace; Owner: -
--

REVOKE ALL ON FUNCTION millrace.final_state(p_id bigint) FROM PUBLIC;


--
-- Name: FUNCTION flush(p_owner integer, p_seq bigint, p_job bigint[], p_tick bigint[], p_token bigint[], p_state smallint[], p_attempt integer[], p_error text[], p_retry_at timestamp with time zone[], p_queue text[], p_kind text[], p_args jsonb[], p_priority smallint[], p_max_attempts integer[], p_created_at timestamp with time zone[], p_timeout_ms integer[], p_started timestamp with time zone[], p_finished timestamp with time zone[], p_done_tick bigint[], p_done_token bigint[], p_done_queue text[], p_replay boolean); Type: ACL; Schema: millrace; Owner: -
--

REVOKE ALL ON FUNCTION millrace.flush(p_owner integer, p_seq bigint, p_job bigint[], p_tick bigint[], p_token bigint[], p_state smallint[], p_attempt integer[], p_error text[], p_retry_at timestamp with time zone[], p_queue text[], p_kind text[], p_args jsonb[], p_priority smallint[], p_max_attempts integer[], p_created_at timestamp with time zone[], p_timeout_ms integer[], p_started timestamp with time zone[], p_finished timestamp with time zone[], p_done_tick bigint[], p_done_token bigint[], p_done_queue text[], p_replay boolean) FROM PUBLIC;
GRANT ALL ON FUNCTION millrace.flush(p_owner integer, p_seq bigint, p_job bigint[], p_tick bigint[], p_token bigint[], p_state smallint[], p_attempt integer[], p_error text[], p_retry_at timestamp with time zone[], p_queue text[], p_kind text[], p_args jsonb[], p_priority smallint[], p_max_attempts integer[], p_created_at timestamp with time zone[], p_timeout_ms integer[], p_started timestamp with time zone[], p_finished timestamp with time zone[], p_done_tick bigint[], p_done_token bigint[], p_done_queue text[], p_replay boolean) TO millrace_worker;


--
-- Name: FUNCTION flush_space(); Type: ACL; Schema: millrace; Owner: -
--

REVOKE ALL ON FUNCTION millrace.flush_space() FROM PUBLIC;


--
-- Name: FUNCTION history_bucket(p_state smallint, p_at timestamp with time zone); Type: ACL; Schema: millrace; Owner: -
--

REVOKE ALL ON FUNCTION millrace.history_bucket(p_state smallint, p_at timestamp with time zone) FROM PUBLIC;


--
-- Name: FUNCTION holder(p_tick bigint, OUT token bigint, OUT owner integer); Type: ACL; Schema: millrace; Owner: -
--

REVOKE ALL ON FUNCTION millrace.holder(p_tick bigint, OUT token bigint, OUT owner integer) FROM PUBLIC;


--
-- Name: FUNCTION insert_many(p_kind text[], p_args jsonb[], p_queue text[], p_priority integer[], p_run_at timestamp with time zone[], p_max_attempts integer[], p_unique_key text[], p_unique_states integer[], p_unique_until timestamp with time zone[], p_timeout_ms integer[], p_notify boolean); Type: ACL; Schema: millrace; Owner: -
--

REVOKE ALL ON FUNCTION millrace.insert_many(p_kind text[], p_args jsonb[], p_queue text[], p_priority integer[], p_run_at timestamp with time zone[], p_max_attempts integer[], p_unique_key text[], p_unique_states integer[], p_unique_until timestamp with time zone[], p_timeout_ms integer[], p_notify boolean) FROM PUBLIC;
GRANT ALL ON FUNCTION millrace.insert_many(p_kind text[], p_args jsonb[], p_queue text[], p_priority integer[], p_run_at timestamp with time zone[], p_max_attempts integer[], p_unique_key text[], p_unique_states integer[], p_unique_until timestamp with time zone[], p_timeout_ms integer[], p_notify boolean) TO millrace_producer;
GRANT ALL ON FUNCTION millrace.insert_many(p_kind text[], p_args jsonb[], p_queue text[], p_priority integer[], p_run_at timestamp with time zone[], p_max_attempts integer[], p_unique_key text[], p_unique_states integer[], p_unique_until timestamp with time zone[], p_timeout_ms integer[], p_notify boolean) TO millrace_worker;


--
-- Name: FUNCTION job_state(p_id bigint); Type: ACL; Schema: millrace; Owner: -
--

REVOKE ALL ON FUNCTION millrace.job_state(p_id bigint) FROM PUBLIC;
GRANT ALL ON FUNCTION millrace.job_state(p_id bigint) TO millrace_worker;


--
-- Name: FUNCTION lane_take(p_queue text, p_priority smallint, p_snap pg_snapshot, p_tick bigint, p_owner integer, p_req bigint, p_max_jobs integer, p_max_bytes bigint, p_peek boolean); Type: ACL; Schema: millrace; Owner: -
--

REVOKE ALL ON FUNCTION millrace.lane_take(p_queue text, p_priority smallint, p_snap pg_snapshot, p_tick bigint, p_owner integer, p_req bigint, p_max_jobs integer, p_max_bytes bigint, p_peek boolean) FROM PUBLIC;


--
-- Name: FUNCTION live_job(p_id bigint); Type: ACL; Schema: millrace; Owner: -
--

REVOKE ALL ON FUNCTION millrace.live_job(p_id bigint) FROM PUBLIC;
GRANT ALL ON FUNCTION millrace.live_job(p_id bigint) TO millrace_worker;


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
-- Name: FUNCTION next_due(); Type: ACL; Schema: millrace; Owner: -
--

REVOKE ALL ON FUNCTION millrace.next_due() FROM PUBLIC;
GRANT ALL ON FUNCTION millrace.next_due() TO millrace_worker;


--
-- Name: FUNCTION open_batches(); Type: ACL; Schema: millrace; Owner: -
--

REVOKE ALL ON FUNCTION millrace.open_batches() FROM PUBLIC;


--
-- Name: FUNCTION pause(p_queue text); Type: ACL; Schema: millrace; Owner: -
--

REVOKE ALL ON FUNCTION millrace.pause(p_queue text) FROM PUBLIC;
GRANT ALL ON FUNCTION millrace.pause(p_queue text) TO millrace_admin;


--
-- Name: FUNCTION pending(p_id bigint); Type: ACL; Schema: millrace; Owner: -
--

REVOKE ALL ON FUNCTION millrace.pending(p_id bigint) FROM PUBLIC;


--
-- Name: FUNCTION periodic_last(p_name text); Type: ACL; Schema: millrace; Owner: -
--

REVOKE ALL ON FUNCTION millrace.periodic_last(p_name text) FROM PUBLIC;
GRANT ALL ON FUNCTION millrace.periodic_last(p_name text) TO millrace_worker;


--
-- Name: FUNCTION periodic_run(p_name text, p_slot_at timestamp with time zone, p_kind text, p_args jsonb, p_queue text, p_priority integer, p_max_attempts integer, p_timeout_ms integer); Type: ACL; Schema: millrace; Owner: -
--

REVOKE ALL ON FUNCTION millrace.periodic_run(p_name text, p_slot_at timestamp with time zone, p_kind text, p_args jsonb, p_queue text, p_priority integer, p_max_attempts integer, p_timeout_ms integer) FROM PUBLIC;
GRANT ALL ON FUNCTION millrace.periodic_run(p_name text, p_slot_at timestamp with time zone, p_kind text, p_args jsonb, p_queue text, p_priority integer, p_max_attempts integer, p_timeout_ms integer) TO millrace_worker;


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
-- Name: FUNCTION queue_paused(p_queue text); Type: ACL; Schema: millrace; Owner: -
--

REVOKE ALL ON FUNCTION millrace.queue_paused(p_queue text) FROM PUBLIC;
GRANT ALL ON FUNCTION millrace.queue_paused(p_queue text) TO millrace_worker;


--
-- Name: FUNCTION range_jobs(p_queue text, p_priority smallint, p_prev pg_snapshot, p_snap pg_snapshot, p_after_txid xid8, p_after_id bigint, p_upto_txid xid8, p_upto_id bigint, p_max_jobs integer, p_max_bytes bigint); Type: ACL; Schema: millrace; Owner: -
--

REVOKE ALL ON FUNCTION millrace.range_jobs(p_queue text, p_priority smallint, p_prev pg_snapshot, p_snap pg_snapshot, p_after_txid xid8, p_after_id bigint, p_upto_txid xid8, p_upto_id bigint, p_max_jobs integer, p_max_bytes bigint) FROM PUBLIC;


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
-- Name: FUNCTION resume(p_queue text); Type: ACL; Schema: millrace; Owner: -
--

REVOKE ALL ON FUNCTION millrace.resume(p_queue text) FROM PUBLIC;
GRANT ALL ON FUNCTION millrace.resume(p_queue text) TO millrace_admin;


--
-- Name: FUNCTION retry(p_id bigint); Type: ACL; Schema: millrace; Owner: -
--

REVOKE ALL ON FUNCTION millrace.retry(p_id bigint) FROM PUBLIC;
GRANT ALL ON FUNCTION millrace.retry(p_id bigint) TO millrace_admin;


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
-- Name: FUNCTION uniq_blocks(p_job bigint, p_states integer, p_until timestamp with time zone); Type: ACL; Schema: millrace; Owner: -
--

REVOKE ALL ON FUNCTION millrace.uniq_blocks(p_job bigint, p_states integer, p_until timestamp with time zone) FROM PUBLIC;


--
-- Name: FUNCTION uniq_space(); Type: ACL; Schema: millrace; Owner: -
--

REVOKE ALL ON FUNCTION millrace.uniq_space() FROM PUBLIC;


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
-- Name: TABLE cancel; Type: ACL; Schema: millrace; Owner: -
--

GRANT SELECT ON TABLE millrace.cancel TO millrace_admin;


--
-- Name: TABLE cancel_0; Type: ACL; Schema: millrace; Owner: -
--

GRANT SELECT ON TABLE millrace.cancel_0 TO millrace_admin;


--
-- Name: TABLE cancel_1; Type: ACL; Schema: millrace; Owner: -
--

GRANT SELECT ON TABLE millrace.cancel_1 TO millrace_admin;


--
-- Name: TABLE cancel_2; Type: ACL; Schema: millrace; Owner: -
--

GRANT SELECT ON TABLE millrace.cancel_2 TO millrace_admin;


--
-- Name: TABLE cancel_3; Type: ACL; Schema: millrace; Owner: -
--

GRANT SELECT ON TABLE millrace.cancel_3 TO millrace_admin;


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
-- Name: TABLE finished; Type: ACL; Schema: millrace; Owner: -
--

GRANT SELECT ON TABLE millrace.finished TO millrace_admin;


--
-- Name: TABLE finished_0; Type: ACL; Schema: millrace; Owner: -
--

GRANT SELECT ON TABLE millrace.finished_0 TO millrace_admin;


--
-- Name: TABLE finished_1; Type: ACL; Schema: millrace; Owner: -
--

GRANT SELECT ON TABLE millrace.finished_1 TO millrace_admin;


--
-- Name: TABLE finished_10; Type: ACL; Schema: millrace; Owner: -
--

GRANT SELECT ON TABLE millrace.finished_10 TO millrace_admin;


--
-- Name: TABLE finished_11; Type: ACL; Schema: millrace; Owner: -
--

GRANT SELECT ON TABLE millrace.finished_11 TO millrace_admin;


--
-- Name: TABLE finished_12; Type: ACL; Schema: millrace; Owner: -
--

GRANT SELECT ON TABLE millrace.finished_12 TO millrace_admin;


--
-- Name: TABLE finished_13; Type: ACL; Schema: millrace; Owner: -
--

GRANT SELECT ON TABLE millrace.finished_13 TO millrace_admin;


--
-- Name: TABLE finished_14; Type: ACL; Schema: millrace; Owner: -
--

GRANT SELECT ON TABLE millrace.finished_14 TO millrace_admin;


--
-- Name: TABLE finished_15; Type: ACL; Schema: millrace; Owner: -
--

GRANT SELECT ON TABLE millrace.finished_15 TO millrace_admin;


--
-- Name: TABLE finished_16; Type: ACL; Schema: millrace; Owner: -
--

GRANT SELECT ON TABLE millrace.finished_16 TO millrace_admin;


--
-- Name: TABLE finished_17; Type: ACL; Schema: millrace; Owner: -
--

GRANT SELECT ON TABLE millrace.finished_17 TO millrace_admin;


--
-- Name: TABLE finished_18; Type: ACL; Schema: millrace; Owner: -
--

GRANT SELECT ON TABLE millrace.finished_18 TO millrace_admin;


--
-- Name: TABLE finished_19; Type: ACL; Schema: millrace; Owner: -
--

GRANT SELECT ON TABLE millrace.finished_19 TO millrace_admin;


--
-- Name: TABLE finished_2; Type: ACL; Schema: millrace; Owner: -
--

GRANT SELECT ON TABLE millrace.finished_2 TO millrace_admin;


--
-- Name: TABLE finished_20; Type: ACL; Schema: millrace; Owner: -
--

GRANT SELECT ON TABLE millrace.finished_20 TO millrace_admin;


--
-- Name: TABLE finished_21; Type: ACL; Schema: millrace; Owner: -
--

GRANT SELECT ON TABLE millrace.finished_21 TO millrace_admin;


--
-- Name: TABLE finished_22; Type: ACL; Schema: millrace; Owner: -
--

GRANT SELECT ON TABLE millrace.finished_22 TO millrace_admin;


--
-- Name: TABLE finished_23; Type: ACL; Schema: millrace; Owner: -
--

GRANT SELECT ON TABLE millrace.finished_23 TO millrace_admin;


--
-- Name: TABLE finished_24; Type: ACL; Schema: millrace; Owner: -
--

GRANT SELECT ON TABLE millrace.finished_24 TO millrace_admin;


--
-- Name: TABLE finished_25; Type: ACL; Schema: millrace; Owner: -
--

GRANT SELECT ON TABLE millrace.finished_25 TO millrace_admin;


--
-- Name: TABLE finished_26; Type: ACL; Schema: millrace; Owner: -
--

GRANT SELECT ON TABLE millrace.finished_26 TO millrace_admin;


--
-- Name: TABLE finished_27; Type: ACL; Schema: millrace; Owner: -
--

GRANT SELECT ON TABLE millrace.finished_27 TO millrace_admin;


--
-- Name: TABLE finished_28; Type: ACL; Schema: millrace; Owner: -
--

GRANT SELECT ON TABLE millrace.finished_28 TO millrace_admin;


--
-- Name: TABLE finished_29; Type: ACL; Schema: millrace; Owner: -
--

GRANT SELECT ON TABLE millrace.finished_29 TO millrace_admin;


--
-- Name: TABLE finished_3; Type: ACL; Schema: millrace; Owner: -
--

GRANT SELECT ON TABLE millrace.finished_3 TO millrace_admin;


--
-- Name: TABLE finished_30; Type: ACL; Schema: millrace; Owner: -
--

GRANT SELECT ON TABLE millrace.finished_30 TO millrace_admin;


--
-- Name: TABLE finished_31; Type: ACL; Schema: millrace; Owner: -
--

GRANT SELECT ON TABLE millrace.finished_31 TO millrace_admin;


--
-- Name: TABLE finished_32; Type: ACL; Schema: millrace; Owner: -
--

GRANT SELECT ON TABLE millrace.finished_32 TO millrace_admin;


--
-- Name: TABLE finished_33; Type: ACL; Schema: millrace; Owner: -
--

GRANT SELECT ON TABLE millrace.finished_33 TO millrace_admin;


--
-- Name: TABLE finished_34; Type: ACL; Schema: millrace; Owner: -
--

GRANT SELECT ON TABLE millrace.finished_34 TO millrace_admin;


--
-- Name: TABLE finished_35; Type: ACL; Schema: millrace; Owner: -
--

GRANT SELECT ON TABLE millrace.finished_35 TO millrace_admin;


--
-- Name: TABLE finished_36; Type: ACL; Schema: millrace; Owner: -
--

GRANT SELECT ON TABLE millrace.finished_36 TO millrace_admin;


--
-- Name: TABLE finished_37; Type: ACL; Schema: millrace; Owner: -
--

GRANT SELECT ON TABLE millrace.finished_37 TO millrace_admin;


--
-- Name: TABLE finished_38; Type: ACL; Schema: millrace; Owner: -
--

GRANT SELECT ON TABLE millrace.finished_38 TO millrace_admin;


--
-- Name: TABLE finished_39; Type: ACL; Schema: millrace; Owner: -
--

GRANT SELECT ON TABLE millrace.finished_39 TO millrace_admin;


--
-- Name: TABLE finished_4; Type: ACL; Schema: millrace; Owner: -
--

GRANT SELECT ON TABLE millrace.finished_4 TO millrace_admin;


--
-- Name: TABLE finished_40; Type: ACL; Schema: millrace; Owner: -
--

GRANT SELECT ON TABLE millrace.finished_40 TO millrace_admin;


--
-- Name: TABLE finished_41; Type: ACL; Schema: millrace; Owner: -
--

GRANT SELECT ON TABLE millrace.finished_41 TO millrace_admin;


--
-- Name: TABLE finished_42; Type: ACL; Schema: millrace; Owner: -
--

GRANT SELECT ON TABLE millrace.finished_42 TO millrace_admin;


--
-- Name: TABLE finished_43; Type: ACL; Schema: millrace; Owner: -
--

GRANT SELECT ON TABLE millrace.finished_43 TO millrace_admin;


--
-- Name: TABLE finished_44; Type: ACL; Schema: millrace; Owner: -
--

GRANT SELECT ON TABLE millrace.finished_44 TO millrace_admin;


--
-- Name: TABLE finished_45; Type: ACL; Schema: millrace; Owner: -
--

GRANT SELECT ON TABLE millrace.finished_45 TO millrace_admin;


--
-- Name: TABLE finished_46; Type: ACL; Schema: millrace; Owner: -
--

GRANT SELECT ON TABLE millrace.finished_46 TO millrace_admin;


--
-- Name: TABLE finished_47; Type: ACL; Schema: millrace; Owner: -
--

GRANT SELECT ON TABLE millrace.finished_47 TO millrace_admin;


--
-- Name: TABLE finished_48; Type: ACL; Schema: millrace; Owner: -
--

GRANT SELECT ON TABLE millrace.finished_48 TO millrace_admin;


--
-- Name: TABLE finished_49; Type: ACL; Schema: millrace; Owner: -
--

GRANT SELECT ON TABLE millrace.finished_49 TO millrace_admin;


--
-- Name: TABLE finished_5; Type: ACL; Schema: millrace; Owner: -
--

GRANT SELECT ON TABLE millrace.finished_5 TO millrace_admin;


--
-- Name: TABLE finished_50; Type: ACL; Schema: millrace; Owner: -
--

GRANT SELECT ON TABLE millrace.finished_50 TO millrace_admin;


--
-- Name: TABLE finished_51; Type: ACL; Schema: millrace; Owner: -
--

GRANT SELECT ON TABLE millrace.finished_51 TO millrace_admin;


--
-- Name: TABLE finished_52; Type: ACL; Schema: millrace; Owner: -
--

GRANT SELECT ON TABLE millrace.finished_52 TO millrace_admin;


--
-- Name: TABLE finished_53; Type: ACL; Schema: millrace; Owner: -
--

GRANT SELECT ON TABLE millrace.finished_53 TO millrace_admin;


--
-- Name: TABLE finished_54; Type: ACL; Schema: millrace; Owner: -
--

GRANT SELECT ON TABLE millrace.finished_54 TO millrace_admin;


--
-- Name: TABLE finished_55; Type: ACL; Schema: millrace; Owner: -
--

GRANT SELECT ON TABLE millrace.finished_55 TO millrace_admin;


--
-- Name: TABLE finished_56; Type: ACL; Schema: millrace; Owner: -
--

GRANT SELECT ON TABLE millrace.finished_56 TO millrace_admin;


--
-- Name: TABLE finished_57; Type: ACL; Schema: millrace; Owner: -
--

GRANT SELECT ON TABLE millrace.finished_57 TO millrace_admin;


--
-- Name: TABLE finished_58; Type: ACL; Schema: millrace; Owner: -
--

GRANT SELECT ON TABLE millrace.finished_58 TO millrace_admin;


--
-- Name: TABLE finished_59; Type: ACL; Schema: millrace; Owner: -
--

GRANT SELECT ON TABLE millrace.finished_59 TO millrace_admin;


--
-- Name: TABLE finished_6; Type: ACL; Schema: millrace; Owner: -
--

GRANT SELECT ON TABLE millrace.finished_6 TO millrace_admin;


--
-- Name: TABLE finished_60; Type: ACL; Schema: millrace; Owner: -
--

GRANT SELECT ON TABLE millrace.finished_60 TO millrace_admin;


--
-- Name: TABLE finished_61; Type: ACL; Schema: millrace; Owner: -
--

GRANT SELECT ON TABLE millrace.finished_61 TO millrace_admin;


--
-- Name: TABLE finished_62; Type: ACL; Schema: millrace; Owner: -
--

GRANT SELECT ON TABLE millrace.finished_62 TO millrace_admin;


--
-- Name: TABLE finished_63; Type: ACL; Schema: millrace; Owner: -
--

GRANT SELECT ON TABLE millrace.finished_63 TO millrace_admin;


--
-- Name: TABLE finished_64; Type: ACL; Schema: millrace; Owner: -
--

GRANT SELECT ON TABLE millrace.finished_64 TO millrace_admin;


--
-- Name: TABLE finished_65; Type: ACL; Schema: millrace; Owner: -
--

GRANT SELECT ON TABLE millrace.finished_65 TO millrace_admin;


--
-- Name: TABLE finished_66; Type: ACL; Schema: millrace; Owner: -
--

GRANT SELECT ON TABLE millrace.finished_66 TO millrace_admin;


--
-- Name: TABLE finished_67; Type: ACL; Schema: millrace; Owner: -
--

GRANT SELECT ON TABLE millrace.finished_67 TO millrace_admin;


--
-- Name: TABLE finished_7; Type: ACL; Schema: millrace; Owner: -
--

GRANT SELECT ON TABLE millrace.finished_7 TO millrace_admin;


--
-- Name: TABLE finished_8; Type: ACL; Schema: millrace; Owner: -
--

GRANT SELECT ON TABLE millrace.finished_8 TO millrace_admin;


--
-- Name: TABLE finished_9; Type: ACL; Schema: millrace; Owner: -
--

GRANT SELECT ON TABLE millrace.finished_9 TO millrace_admin;


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
-- Name: TABLE history; Type: ACL; Schema: millrace; Owner: -
--

GRANT SELECT ON TABLE millrace.history TO millrace_worker;
GRANT SELECT ON TABLE millrace.history TO millrace_admin;


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
-- Name: TABLE periodic; Type: ACL; Schema: millrace; Owner: -
--

GRANT SELECT ON TABLE millrace.periodic TO millrace_admin;


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
-- Name: TABLE queue_state; Type: ACL; Schema: millrace; Owner: -
--

GRANT SELECT ON TABLE millrace.queue_state TO millrace_admin;


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
-- Name: TABLE uniq; Type: ACL; Schema: millrace; Owner: -
--

GRANT SELECT ON TABLE millrace.uniq TO millrace_admin;


--
-- Name: TABLE uniq_0; Type: ACL; Schema: millrace; Owner: -
--

GRANT SELECT ON TABLE millrace.uniq_0 TO millrace_admin;


--
-- Name: TABLE uniq_1; Type: ACL; Schema: millrace; Owner: -
--

GRANT SELECT ON TABLE millrace.uniq_1 TO millrace_admin;


--
-- Name: TABLE uniq_2; Type: ACL; Schema: millrace; Owner: -
--

GRANT SELECT ON TABLE millrace.uniq_2 TO millrace_admin;


--
-- Name: TABLE uniq_3; Type: ACL; Schema: millrace; Owner: -
--

GRANT SELECT ON TABLE millrace.uniq_3 TO millrace_admin;


--
-- PostgreSQL database dump complete
--


