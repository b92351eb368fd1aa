-- millrace schema version 2, populated and dumped by TestUpgradeFromEachVersion -update-dumps.
-- Frozen: version 2's migrations never change, so neither does this file.
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


--
-- Name: claim(text, integer); Type: FUNCTION; Schema: millrace; Owner: -
--

CREATE FUNCTION millrace.claim(p_queue text, p_owner integer) RETURNS TABLE(tick_id bigint, tick_seg smallint, id bigint, kind text, args jsonb, priority smallint, attempt integer, max_attempts integer, created_at timestamp with time zone)
    LANGUAGE plpgsql
    AS $$
DECLARE
    v_cur  smallint;
    v_prev_snap pg_snapshot;
    v_snap pg_snapshot;
    v_xip  xid8[];
    v_tick bigint;
    v_n    int;
BEGIN
    PERFORM pg_advisory_xact_lock(millrace.lock_space(), hashtext(p_queue));
    -- The snapshot comes before the segment is read: a rotation that
    -- commits after the snapshot only moves producers to a segment whose
    -- rows this snapshot cannot see yet.
    v_snap := pg_current_snapshot();
    SELECT r.segment INTO v_cur FROM millrace.rotation r ORDER BY r.id DESC LIMIT 1;
    IF v_cur = 0 THEN
        SELECT t.snap INTO v_prev_snap FROM (
        (SELECT t0.snap, t0.tick_id FROM millrace.tick_0 t0 WHERE t0.queue = p_queue ORDER BY t0.tick_id DESC LIMIT 1)
        UNION ALL
        (SELECT t1.snap, t1.tick_id FROM millrace.tick_2 t1 WHERE t1.queue = p_queue ORDER BY t1.tick_id DESC LIMIT 1)
        ) t ORDER BY t.tick_id DESC LIMIT 1;
    ELSIF v_cur = 1 THEN
        SELECT t.snap INTO v_prev_snap FROM (
        (SELECT t0.snap, t0.tick_id FROM millrace.tick_1 t0 WHERE t0.queue = p_queue ORDER BY t0.tick_id DESC LIMIT 1)
        UNION ALL
        (SELECT t1.snap, t1.tick_id FROM millrace.tick_0 t1 WHERE t1.queue = p_queue ORDER BY t1.tick_id DESC LIMIT 1)
        ) t ORDER BY t.tick_id DESC LIMIT 1;
    ELSIF v_cur = 2 THEN
        SELECT t.snap INTO v_prev_snap FROM (
        (SELECT t0.snap, t0.tick_id FROM millrace.tick_2 t0 WHERE t0.queue = p_queue ORDER BY t0.tick_id DESC LIMIT 1)
        UNION ALL
        (SELECT t1.snap, t1.tick_id FROM millrace.tick_1 t1 WHERE t1.queue = p_queue ORDER BY t1.tick_id DESC LIMIT 1)
        ) t ORDER BY t.tick_id DESC LIMIT 1;
    END IF;
    IF v_prev_snap IS NULL THEN
        v_prev_snap := '1:1:'::pg_snapshot;  -- first batch of this queue
    END IF;
    v_xip := ARRAY(SELECT pg_snapshot_xip(v_prev_snap));
    v_tick := nextval('millrace.tick_id_seq');
    IF v_cur = 0 THEN
        RETURN QUERY SELECT v_tick, v_cur, b.id, b.kind, b.args, b.priority, b.attempt, b.max_attempts, b.created_at FROM (
            SELECT j.id, j.kind, j.args, j.priority, j.attempt, j.max_attempts, j.created_at
            FROM millrace.job_0 j
            WHERE j.queue = p_queue
              AND j.txid >= pg_snapshot_xmax(v_prev_snap) AND j.txid < pg_snapshot_xmax(v_snap)
              AND pg_visible_in_snapshot(j.txid, v_snap)
            UNION ALL
            SELECT j.id, j.kind, j.args, j.priority, j.attempt, j.max_attempts, j.created_at
            FROM millrace.job_0 j
            WHERE j.queue = p_queue AND j.txid = ANY (v_xip)
              AND pg_visible_in_snapshot(j.txid, v_snap)
            UNION ALL
            SELECT j.id, j.kind, j.args, j.priority, j.attempt, j.max_attempts, j.created_at
            FROM millrace.job_2 j
            WHERE j.queue = p_queue
              AND j.txid >= pg_snapshot_xmax(v_prev_snap) AND j.txid < pg_snapshot_xmax(v_snap)
              AND pg_visible_in_snapshot(j.txid, v_snap)
            UNION ALL
            SELECT j.id, j.kind, j.args, j.priority, j.attempt, j.max_attempts, j.created_at
            FROM millrace.job_2 j
            WHERE j.queue = p_queue AND j.txid = ANY (v_xip)
              AND pg_visible_in_snapshot(j.txid, v_snap)
        ) b ORDER BY b.priority, b.id;
    ELSIF v_cur = 1 THEN
        RETURN QUERY SELECT v_tick, v_cur, b.id, b.kind, b.args, b.priority, b.attempt, b.max_attempts, b.created_at FROM (
            SELECT j.id, j.kind, j.args, j.priority, j.attempt, j.max_attempts, j.created_at
            FROM millrace.job_1 j
            WHERE j.queue = p_queue
              AND j.txid >= pg_snapshot_xmax(v_prev_snap) AND j.txid < pg_snapshot_xmax(v_snap)
              AND pg_visible_in_snapshot(j.txid, v_snap)
            UNION ALL
            SELECT j.id, j.kind, j.args, j.priority, j.attempt, j.max_attempts, j.created_at
            FROM millrace.job_1 j
            WHERE j.queue = p_queue AND j.txid = ANY (v_xip)
              AND pg_visible_in_snapshot(j.txid, v_snap)
            UNION ALL
            SELECT j.id, j.kind, j.args, j.priority, j.attempt, j.max_attempts, j.created_at
            FROM millrace.job_0 j
            WHERE j.queue = p_queue
              AND j.txid >= pg_snapshot_xmax(v_prev_snap) AND j.txid < pg_snapshot_xmax(v_snap)
              AND pg_visible_in_snapshot(j.txid, v_snap)
            UNION ALL
            SELECT j.id, j.kind, j.args, j.priority, j.attempt, j.max_attempts, j.created_at
            FROM millrace.job_0 j
            WHERE j.queue = p_queue AND j.txid = ANY (v_xip)
              AND pg_visible_in_snapshot(j.txid, v_snap)
        ) b ORDER BY b.priority, b.id;
    ELSIF v_cur = 2 THEN
        RETURN QUERY SELECT v_tick, v_cur, b.id, b.kind, b.args, b.priority, b.attempt, b.max_attempts, b.created_at FROM (
            SELECT j.id, j.kind, j.args, j.priority, j.attempt, j.max_attempts, j.created_at
            FROM millrace.job_2 j
            WHERE j.queue = p_queue
              AND j.txid >= pg_snapshot_xmax(v_prev_snap) AND j.txid < pg_snapshot_xmax(v_snap)
              AND pg_visible_in_snapshot(j.txid, v_snap)
            UNION ALL
            SELECT j.id, j.kind, j.args, j.priority, j.attempt, j.max_attempts, j.created_at
            FROM millrace.job_2 j
            WHERE j.queue = p_queue AND j.txid = ANY (v_xip)
              AND pg_visible_in_snapshot(j.txid, v_snap)
            UNION ALL
            SELECT j.id, j.kind, j.args, j.priority, j.attempt, j.max_attempts, j.created_at
            FROM millrace.job_1 j
            WHERE j.queue = p_queue
              AND j.txid >= pg_snapshot_xmax(v_prev_snap) AND j.txid < pg_snapshot_xmax(v_snap)
              AND pg_visible_in_snapshot(j.txid, v_snap)
            UNION ALL
            SELECT j.id, j.kind, j.args, j.priority, j.attempt, j.max_attempts, j.created_at
            FROM millrace.job_1 j
            WHERE j.queue = p_queue AND j.txid = ANY (v_xip)
              AND pg_visible_in_snapshot(j.txid, v_snap)
        ) b ORDER BY b.priority, b.id;
    END IF;
    GET DIAGNOSTICS v_n = ROW_COUNT;
    IF v_n > 0 THEN
        IF v_cur = 0 THEN
            INSERT INTO millrace.tick_0 (queue, tick_id, prev_snap, snap, owner, njobs)
            VALUES (p_queue, v_tick, v_prev_snap, v_snap, p_owner, v_n);
        ELSIF v_cur = 1 THEN
            INSERT INTO millrace.tick_1 (queue, tick_id, prev_snap, snap, owner, njobs)
            VALUES (p_queue, v_tick, v_prev_snap, v_snap, p_owner, v_n);
        ELSIF v_cur = 2 THEN
            INSERT INTO millrace.tick_2 (queue, tick_id, prev_snap, snap, owner, njobs)
            VALUES (p_queue, v_tick, v_prev_snap, v_snap, p_owner, v_n);
        END IF;
    END IF;
END $$;


--
-- Name: current_segment(); Type: FUNCTION; Schema: millrace; Owner: -
--

CREATE FUNCTION millrace.current_segment() RETURNS smallint
    LANGUAGE sql STABLE
    AS $$ SELECT segment FROM millrace.rotation ORDER BY id DESC LIMIT 1 $$;


--
-- Name: enqueue(text, jsonb, text, smallint, timestamp with time zone, integer, boolean); Type: FUNCTION; Schema: millrace; Owner: -
--

CREATE FUNCTION millrace.enqueue(p_kind text, p_args jsonb DEFAULT '{}'::jsonb, p_queue text DEFAULT 'default'::text, p_priority smallint DEFAULT 1, p_run_at timestamp with time zone DEFAULT NULL::timestamp with time zone, p_max_attempts integer DEFAULT 25, p_notify boolean DEFAULT true) RETURNS bigint
    LANGUAGE plpgsql
    AS $$
DECLARE
    v_id  bigint := nextval('millrace.job_id_seq');
    v_seg smallint;
BEGIN
    IF p_kind IS NULL OR p_kind = '' THEN
        RAISE EXCEPTION 'millrace.enqueue: kind must not be empty' USING ERRCODE = '22023';
    END IF;
    IF p_queue IS NULL OR p_queue = '' OR length(p_queue) > 128 THEN
        RAISE EXCEPTION 'millrace.enqueue: queue must be 1 to 128 characters' USING ERRCODE = '22023';
    END IF;
    IF p_max_attempts < 1 THEN
        RAISE EXCEPTION 'millrace.enqueue: max_attempts must be at least 1' USING ERRCODE = '22023';
    END IF;
    SELECT segment INTO v_seg FROM millrace.rotation ORDER BY id DESC LIMIT 1;
    IF p_run_at IS NOT NULL AND p_run_at > now() THEN
        IF v_seg = 0 THEN
            INSERT INTO millrace.sched_0 (id, queue, kind, args, priority, attempt, max_attempts, created_at, due_at)
            VALUES (v_id, p_queue, p_kind, p_args, p_priority, 0, p_max_attempts, now(), p_run_at);
        ELSIF v_seg = 1 THEN
            INSERT INTO millrace.sched_1 (id, queue, kind, args, priority, attempt, max_attempts, created_at, due_at)
            VALUES (v_id, p_queue, p_kind, p_args, p_priority, 0, p_max_attempts, now(), p_run_at);
        ELSIF v_seg = 2 THEN
            INSERT INTO millrace.sched_2 (id, queue, kind, args, priority, attempt, max_attempts, created_at, due_at)
            VALUES (v_id, p_queue, p_kind, p_args, p_priority, 0, p_max_attempts, now(), p_run_at);
        END IF;
    ELSE
        IF v_seg = 0 THEN
            INSERT INTO millrace.job_0 (id, queue, kind, args, priority, max_attempts)
            VALUES (v_id, p_queue, p_kind, p_args, p_priority, p_max_attempts);
        ELSIF v_seg = 1 THEN
            INSERT INTO millrace.job_1 (id, queue, kind, args, priority, max_attempts)
            VALUES (v_id, p_queue, p_kind, p_args, p_priority, p_max_attempts);
        ELSIF v_seg = 2 THEN
            INSERT INTO millrace.job_2 (id, queue, kind, args, priority, max_attempts)
            VALUES (v_id, p_queue, p_kind, p_args, p_priority, p_max_attempts);
        END IF;
        IF p_notify THEN
            PERFORM pg_notify('millrace', p_queue);
        END IF;
    END IF;
    RETURN v_id;
END $$;


--
-- Name: lock_space(); Type: FUNCTION; Schema: millrace; Owner: -
--

CREATE FUNCTION millrace.lock_space() RETURNS integer
    LANGUAGE sql IMMUTABLE
    AS $$ SELECT 1836412274 $$;


SET default_tablespace = '';

SET default_table_access_method = heap;

--
-- Name: ack_0; Type: TABLE; Schema: millrace; Owner: -
--

CREATE TABLE millrace.ack_0 (
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
-- Name: claim_0; Type: TABLE; Schema: millrace; Owner: -
--

CREATE TABLE millrace.claim_0 (
    queue text NOT NULL,
    tick_id bigint NOT NULL,
    token bigint NOT NULL,
    owner integer NOT NULL,
    at timestamp with time zone DEFAULT now() NOT NULL
)
WITH (autovacuum_enabled='false');


--
-- Name: claim_1; Type: TABLE; Schema: millrace; Owner: -
--

CREATE TABLE millrace.claim_1 (
    queue text NOT NULL,
    tick_id bigint NOT NULL,
    token bigint NOT NULL,
    owner integer NOT NULL,
    at timestamp with time zone DEFAULT now() NOT NULL
)
WITH (autovacuum_enabled='false');


--
-- Name: claim_2; Type: TABLE; Schema: millrace; Owner: -
--

CREATE TABLE millrace.claim_2 (
    queue text NOT NULL,
    tick_id bigint NOT NULL,
    token bigint NOT NULL,
    owner integer NOT NULL,
    at timestamp with time zone DEFAULT now() NOT NULL
)
WITH (autovacuum_enabled='false');


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
-- Name: done_0; Type: TABLE; Schema: millrace; Owner: -
--

CREATE TABLE millrace.done_0 (
    queue text NOT NULL,
    tick_id bigint NOT NULL,
    at timestamp with time zone DEFAULT now() NOT NULL
)
WITH (autovacuum_enabled='false');


--
-- Name: done_1; Type: TABLE; Schema: millrace; Owner: -
--

CREATE TABLE millrace.done_1 (
    queue text NOT NULL,
    tick_id bigint NOT NULL,
    at timestamp with time zone DEFAULT now() NOT NULL
)
WITH (autovacuum_enabled='false');


--
-- Name: done_2; Type: TABLE; Schema: millrace; Owner: -
--

CREATE TABLE millrace.done_2 (
    queue text NOT NULL,
    tick_id bigint NOT NULL,
    at timestamp with time zone DEFAULT now() NOT NULL
)
WITH (autovacuum_enabled='false');


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
-- Name: job_0; Type: TABLE; Schema: millrace; Owner: -
--

CREATE TABLE millrace.job_0 (
    id bigint DEFAULT nextval('millrace.job_id_seq'::regclass) NOT NULL,
    queue text NOT NULL,
    kind text NOT NULL,
    args jsonb NOT NULL,
    priority smallint DEFAULT 1 NOT NULL,
    attempt integer DEFAULT 0 NOT NULL,
    max_attempts integer DEFAULT 25 NOT NULL,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    txid xid8 DEFAULT pg_current_xact_id() NOT NULL
)
WITH (autovacuum_enabled='false', toast.autovacuum_enabled='false');


--
-- Name: job_1; Type: TABLE; Schema: millrace; Owner: -
--

CREATE TABLE millrace.job_1 (
    id bigint DEFAULT nextval('millrace.job_id_seq'::regclass) NOT NULL,
    queue text NOT NULL,
    kind text NOT NULL,
    args jsonb NOT NULL,
    priority smallint DEFAULT 1 NOT NULL,
    attempt integer DEFAULT 0 NOT NULL,
    max_attempts integer DEFAULT 25 NOT NULL,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    txid xid8 DEFAULT pg_current_xact_id() NOT NULL
)
WITH (autovacuum_enabled='false', toast.autovacuum_enabled='false');


--
-- Name: job_2; Type: TABLE; Schema: millrace; Owner: -
--

CREATE TABLE millrace.job_2 (
    id bigint DEFAULT nextval('millrace.job_id_seq'::regclass) NOT NULL,
    queue text NOT NULL,
    kind text NOT NULL,
    args jsonb NOT NULL,
    priority smallint DEFAULT 1 NOT NULL,
    attempt integer DEFAULT 0 NOT NULL,
    max_attempts integer DEFAULT 25 NOT NULL,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    txid xid8 DEFAULT pg_current_xact_id() NOT NULL
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
-- Name: promote_0; Type: TABLE; Schema: millrace; Owner: -
--

CREATE TABLE millrace.promote_0 (
    round bigint NOT NULL,
    upto timestamp with time zone NOT NULL,
    snap pg_snapshot NOT NULL
)
WITH (autovacuum_enabled='false');


--
-- Name: promote_1; Type: TABLE; Schema: millrace; Owner: -
--

CREATE TABLE millrace.promote_1 (
    round bigint NOT NULL,
    upto timestamp with time zone NOT NULL,
    snap pg_snapshot NOT NULL
)
WITH (autovacuum_enabled='false');


--
-- Name: promote_2; Type: TABLE; Schema: millrace; Owner: -
--

CREATE TABLE millrace.promote_2 (
    round bigint NOT NULL,
    upto timestamp with time zone NOT NULL,
    snap pg_snapshot NOT NULL
)
WITH (autovacuum_enabled='false');


--
-- Name: rotation; Type: TABLE; Schema: millrace; Owner: -
--

CREATE TABLE millrace.rotation (
    id bigint NOT NULL,
    segment smallint NOT NULL,
    at timestamp with time zone DEFAULT now() NOT NULL,
    CONSTRAINT rotation_segment_check CHECK (((segment >= 0) AND (segment <= 2)))
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
-- Name: sched_0; Type: TABLE; Schema: millrace; Owner: -
--

CREATE TABLE millrace.sched_0 (
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
-- Name: sched_2; Type: TABLE; Schema: millrace; Owner: -
--

CREATE TABLE millrace.sched_2 (
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
-- Name: tick_0; Type: TABLE; Schema: millrace; Owner: -
--

CREATE TABLE millrace.tick_0 (
    queue text NOT NULL,
    tick_id bigint NOT NULL,
    prev_snap pg_snapshot NOT NULL,
    snap pg_snapshot NOT NULL,
    owner integer NOT NULL,
    njobs integer NOT NULL,
    carried boolean DEFAULT false NOT NULL,
    at timestamp with time zone DEFAULT now() NOT NULL
)
WITH (autovacuum_enabled='false');


--
-- Name: tick_1; Type: TABLE; Schema: millrace; Owner: -
--

CREATE TABLE millrace.tick_1 (
    queue text NOT NULL,
    tick_id bigint NOT NULL,
    prev_snap pg_snapshot NOT NULL,
    snap pg_snapshot NOT NULL,
    owner integer NOT NULL,
    njobs integer NOT NULL,
    carried boolean DEFAULT false NOT NULL,
    at timestamp with time zone DEFAULT now() NOT NULL
)
WITH (autovacuum_enabled='false');


--
-- Name: tick_2; Type: TABLE; Schema: millrace; Owner: -
--

CREATE TABLE millrace.tick_2 (
    queue text NOT NULL,
    tick_id bigint NOT NULL,
    prev_snap pg_snapshot NOT NULL,
    snap pg_snapshot NOT NULL,
    owner integer NOT NULL,
    njobs integer NOT NULL,
    carried boolean DEFAULT false NOT NULL,
    at timestamp with time zone DEFAULT now() NOT NULL
)
WITH (autovacuum_enabled='false');


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
-- Data for Name: ack_0; Type: TABLE DATA; Schema: millrace; Owner: -
--



--
-- Data for Name: ack_1; Type: TABLE DATA; Schema: millrace; Owner: -
--



--
-- Data for Name: ack_2; Type: TABLE DATA; Schema: millrace; Owner: -
--



--
-- Data for Name: claim_0; Type: TABLE DATA; Schema: millrace; Owner: -
--



--
-- Data for Name: claim_1; Type: TABLE DATA; Schema: millrace; Owner: -
--



--
-- Data for Name: claim_2; Type: TABLE DATA; Schema: millrace; Owner: -
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
-- Data for Name: job_0; Type: TABLE DATA; Schema: millrace; Owner: -
--

INSERT INTO millrace.job_0 VALUES (1, 'q', 'k', '{"n": 0}', 1, 0, 25, '2026-11-25 18:36:02.396773+00', '895');
INSERT INTO millrace.job_0 VALUES (2, 'q', 'k', '{"n": 1}', 1, 0, 25, '2026-11-25 18:36:02.405266+00', '896');
INSERT INTO millrace.job_0 VALUES (3, 'q', 'k', '{"n": 2}', 1, 0, 25, '2026-11-25 18:36:02.407078+00', '897');


--
-- Data for Name: job_1; Type: TABLE DATA; Schema: millrace; Owner: -
--



--
-- Data for Name: job_2; Type: TABLE DATA; Schema: millrace; Owner: -
--



--
-- Data for Name: migration; Type: TABLE DATA; Schema: millrace; Owner: -
--

INSERT INTO millrace.migration VALUES (1, 'init', '2026-11-25 18:36:01.580119+00');
INSERT INTO millrace.migration VALUES (2, 'claim_snapshot_first', '2026-11-25 18:36:01.580119+00');


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
-- Data for Name: rotation; Type: TABLE DATA; Schema: millrace; Owner: -
--

INSERT INTO millrace.rotation VALUES (1, 0, '2026-11-25 18:36:01.580119+00');


--
-- Data for Name: sched_0; Type: TABLE DATA; Schema: millrace; Owner: -
--

INSERT INTO millrace.sched_0 VALUES (4, 'q', 'k', '{}', 1, 0, 25, '2026-11-25 18:36:02.414506+00', '2036-11-25 18:36:02.414506+00', NULL, '898');


--
-- Data for Name: sched_1; Type: TABLE DATA; Schema: millrace; Owner: -
--



--
-- Data for Name: sched_2; Type: TABLE DATA; Schema: millrace; Owner: -
--



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
-- Name: job_id_seq; Type: SEQUENCE SET; Schema: millrace; Owner: -
--

SELECT pg_catalog.setval('millrace.job_id_seq', 4, true);


--
-- Name: process_id_seq; Type: SEQUENCE SET; Schema: millrace; Owner: -
--

SELECT pg_catalog.setval('millrace.process_id_seq', 1, false);


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
-- Name: rotation rotation_pkey; Type: CONSTRAINT; Schema: millrace; Owner: -
--

ALTER TABLE ONLY millrace.rotation
    ADD CONSTRAINT rotation_pkey PRIMARY KEY (id);


--
-- Name: ack_0_tick; Type: INDEX; Schema: millrace; Owner: -
--

CREATE INDEX ack_0_tick ON millrace.ack_0 USING btree (tick_id);


--
-- Name: ack_1_tick; Type: INDEX; Schema: millrace; Owner: -
--

CREATE INDEX ack_1_tick ON millrace.ack_1 USING btree (tick_id);


--
-- Name: ack_2_tick; Type: INDEX; Schema: millrace; Owner: -
--

CREATE INDEX ack_2_tick ON millrace.ack_2 USING btree (tick_id);


--
-- Name: claim_0_owner; Type: INDEX; Schema: millrace; Owner: -
--

CREATE INDEX claim_0_owner ON millrace.claim_0 USING btree (owner, tick_id);


--
-- Name: claim_0_tick; Type: INDEX; Schema: millrace; Owner: -
--

CREATE INDEX claim_0_tick ON millrace.claim_0 USING btree (tick_id, token);


--
-- Name: claim_1_owner; Type: INDEX; Schema: millrace; Owner: -
--

CREATE INDEX claim_1_owner ON millrace.claim_1 USING btree (owner, tick_id);


--
-- Name: claim_1_tick; Type: INDEX; Schema: millrace; Owner: -
--

CREATE INDEX claim_1_tick ON millrace.claim_1 USING btree (tick_id, token);


--
-- Name: claim_2_owner; Type: INDEX; Schema: millrace; Owner: -
--

CREATE INDEX claim_2_owner ON millrace.claim_2 USING btree (owner, tick_id);


--
-- Name: claim_2_tick; Type: INDEX; Schema: millrace; Owner: -
--

CREATE INDEX claim_2_tick ON millrace.claim_2 USING btree (tick_id, token);


--
-- Name: discarded_at; Type: INDEX; Schema: millrace; Owner: -
--

CREATE INDEX discarded_at ON millrace.discarded USING btree (discarded_at);


--
-- Name: discarded_id; Type: INDEX; Schema: millrace; Owner: -
--

CREATE INDEX discarded_id ON millrace.discarded USING btree (id);


--
-- Name: done_0_queue_tick; Type: INDEX; Schema: millrace; Owner: -
--

CREATE INDEX done_0_queue_tick ON millrace.done_0 USING btree (queue, tick_id);


--
-- Name: done_1_queue_tick; Type: INDEX; Schema: millrace; Owner: -
--

CREATE INDEX done_1_queue_tick ON millrace.done_1 USING btree (queue, tick_id);


--
-- Name: done_2_queue_tick; Type: INDEX; Schema: millrace; Owner: -
--

CREATE INDEX done_2_queue_tick ON millrace.done_2 USING btree (queue, tick_id);


--
-- Name: job_0_queue_txid; Type: INDEX; Schema: millrace; Owner: -
--

CREATE INDEX job_0_queue_txid ON millrace.job_0 USING btree (queue, txid);


--
-- Name: job_1_queue_txid; Type: INDEX; Schema: millrace; Owner: -
--

CREATE INDEX job_1_queue_txid ON millrace.job_1 USING btree (queue, txid);


--
-- Name: job_2_queue_txid; Type: INDEX; Schema: millrace; Owner: -
--

CREATE INDEX job_2_queue_txid ON millrace.job_2 USING btree (queue, txid);


--
-- Name: promote_0_round; Type: INDEX; Schema: millrace; Owner: -
--

CREATE INDEX promote_0_round ON millrace.promote_0 USING btree (round);


--
-- Name: promote_1_round; Type: INDEX; Schema: millrace; Owner: -
--

CREATE INDEX promote_1_round ON millrace.promote_1 USING btree (round);


--
-- Name: promote_2_round; Type: INDEX; Schema: millrace; Owner: -
--

CREATE INDEX promote_2_round ON millrace.promote_2 USING btree (round);


--
-- Name: sched_0_due; Type: INDEX; Schema: millrace; Owner: -
--

CREATE INDEX sched_0_due ON millrace.sched_0 USING btree (due_at);


--
-- Name: sched_0_txid; Type: INDEX; Schema: millrace; Owner: -
--

CREATE INDEX sched_0_txid ON millrace.sched_0 USING btree (txid);


--
-- Name: sched_1_due; Type: INDEX; Schema: millrace; Owner: -
--

CREATE INDEX sched_1_due ON millrace.sched_1 USING btree (due_at);


--
-- Name: sched_1_txid; Type: INDEX; Schema: millrace; Owner: -
--

CREATE INDEX sched_1_txid ON millrace.sched_1 USING btree (txid);


--
-- Name: sched_2_due; Type: INDEX; Schema: millrace; Owner: -
--

CREATE INDEX sched_2_due ON millrace.sched_2 USING btree (due_at);


--
-- Name: sched_2_txid; Type: INDEX; Schema: millrace; Owner: -
--

CREATE INDEX sched_2_txid ON millrace.sched_2 USING btree (txid);


--
-- Name: tick_0_owner; Type: INDEX; Schema: millrace; Owner: -
--

CREATE INDEX tick_0_owner ON millrace.tick_0 USING btree (owner, tick_id);


--
-- Name: tick_0_queue_tick; Type: INDEX; Schema: millrace; Owner: -
--

CREATE UNIQUE INDEX tick_0_queue_tick ON millrace.tick_0 USING btree (queue, tick_id);


--
-- Name: tick_1_owner; Type: INDEX; Schema: millrace; Owner: -
--

CREATE INDEX tick_1_owner ON millrace.tick_1 USING btree (owner, tick_id);


--
-- Name: tick_1_queue_tick; Type: INDEX; Schema: millrace; Owner: -
--

CREATE UNIQUE INDEX tick_1_queue_tick ON millrace.tick_1 USING btree (queue, tick_id);


--
-- Name: tick_2_owner; Type: INDEX; Schema: millrace; Owner: -
--

CREATE INDEX tick_2_owner ON millrace.tick_2 USING btree (owner, tick_id);


--
-- Name: tick_2_queue_tick; Type: INDEX; Schema: millrace; Owner: -
--

CREATE UNIQUE INDEX tick_2_queue_tick ON millrace.tick_2 USING btree (queue, tick_id);


--
-- PostgreSQL database dump complete
--


