CREATE SCHEMA IF NOT EXISTS millrace;

-- millrace storage protocol, version 1.
--
-- Every table that grows with jobs lives in three rotating segments
-- (suffix _0, _1, _2). The hot path only INSERTs; space is reclaimed by
-- TRUNCATE of a drained segment (see docs/architecture.md). Nothing on the
-- per-job or per-batch path UPDATEs or DELETEs a row.

CREATE SEQUENCE millrace.job_id_seq;
CREATE SEQUENCE millrace.tick_id_seq;      -- batch ids and fencing tokens
CREATE SEQUENCE millrace.rotation_id_seq;
CREATE SEQUENCE millrace.process_id_seq MAXVALUE 2147483647 CYCLE;

-- Append-only ledger: the newest row names the current segment. Read from
-- its newest end (ORDER BY id DESC LIMIT 1), which dead entries never cover.
CREATE TABLE millrace.rotation (
    id      bigint PRIMARY KEY,
    segment smallint NOT NULL CHECK (segment BETWEEN 0 AND 2),
    at      timestamptz NOT NULL DEFAULT now()
);
INSERT INTO millrace.rotation (id, segment) VALUES (nextval('millrace.rotation_id_seq'), 0);

-- One row per client process start. Liveness is not stored: a live process
-- holds the session advisory lock (millrace.lock_space(), id).
CREATE TABLE millrace.process (
    id         int PRIMARY KEY,
    name       text NOT NULL,
    host       text NOT NULL,
    pid        int NOT NULL,
    started_at timestamptz NOT NULL DEFAULT now()
);

-- Jobs that ran out of attempts, kept for inspection.
CREATE TABLE millrace.discarded (
    id           bigint NOT NULL,
    queue        text NOT NULL,
    kind         text NOT NULL,
    args         jsonb NOT NULL,
    priority     smallint NOT NULL,
    attempt      int NOT NULL,
    max_attempts int NOT NULL,
    created_at   timestamptz NOT NULL,
    error        text NOT NULL,
    discarded_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX discarded_id ON millrace.discarded (id);
CREATE INDEX discarded_at ON millrace.discarded (discarded_at);

-- The advisory lock space of millrace (first key of two-int locks).
CREATE FUNCTION millrace.lock_space() RETURNS int LANGUAGE sql IMMUTABLE
AS $$ SELECT 1836412274 $$;  -- 'mill' as int4

CREATE FUNCTION millrace.current_segment() RETURNS smallint LANGUAGE sql STABLE
AS $$ SELECT segment FROM millrace.rotation ORDER BY id DESC LIMIT 1 $$;


-- ---------------------------------------------------------------- segment 0
CREATE TABLE millrace.job_0 (
    id           bigint NOT NULL DEFAULT nextval('millrace.job_id_seq'),
    queue        text NOT NULL,
    kind         text NOT NULL,
    args         jsonb NOT NULL,
    priority     smallint NOT NULL DEFAULT 1,
    attempt      int NOT NULL DEFAULT 0,
    max_attempts int NOT NULL DEFAULT 25,
    created_at   timestamptz NOT NULL DEFAULT now(),
    txid         xid8 NOT NULL DEFAULT pg_current_xact_id()
) WITH (autovacuum_enabled = false, toast.autovacuum_enabled = false);
CREATE INDEX job_0_queue_txid ON millrace.job_0 (queue, txid);

-- Jobs due later: scheduled at enqueue, or a retry waiting for its backoff.
CREATE TABLE millrace.sched_0 (
    id           bigint NOT NULL,
    queue        text NOT NULL,
    kind         text NOT NULL,
    args         jsonb NOT NULL,
    priority     smallint NOT NULL,
    attempt      int NOT NULL,
    max_attempts int NOT NULL,
    created_at   timestamptz NOT NULL,
    due_at       timestamptz NOT NULL,
    last_error   text,
    txid         xid8 NOT NULL DEFAULT pg_current_xact_id()
) WITH (autovacuum_enabled = false, toast.autovacuum_enabled = false);
CREATE INDEX sched_0_due ON millrace.sched_0 (due_at);
CREATE INDEX sched_0_txid ON millrace.sched_0 (txid);

-- A tick is a claimed batch: the jobs of queue visible in snap and not in
-- prev_snap. The row is also the batch's first lease (token = tick_id).
CREATE TABLE millrace.tick_0 (
    queue     text NOT NULL,
    tick_id   bigint NOT NULL,
    prev_snap pg_snapshot NOT NULL,
    snap      pg_snapshot NOT NULL,
    owner     int NOT NULL,
    njobs     int NOT NULL,
    carried   boolean NOT NULL DEFAULT false,  -- copied forward by rotation: a prev_snap only
    at        timestamptz NOT NULL DEFAULT now()
) WITH (autovacuum_enabled = false);
CREATE UNIQUE INDEX tick_0_queue_tick ON millrace.tick_0 (queue, tick_id);
CREATE INDEX tick_0_owner ON millrace.tick_0 (owner, tick_id);

-- Later leases of a batch, taken when its owner died (fencing tokens).
CREATE TABLE millrace.claim_0 (
    queue   text NOT NULL,
    tick_id bigint NOT NULL,
    token   bigint NOT NULL,
    owner   int NOT NULL,
    at      timestamptz NOT NULL DEFAULT now()
) WITH (autovacuum_enabled = false);
CREATE INDEX claim_0_tick ON millrace.claim_0 (tick_id, token);
CREATE INDEX claim_0_owner ON millrace.claim_0 (owner, tick_id);

-- One row per finished attempt of a job, in the segment of its batch.
-- state: 1 completed, 2 failed and retried, 3 discarded.
CREATE TABLE millrace.ack_0 (
    job_id  bigint NOT NULL,
    tick_id bigint NOT NULL,
    token   bigint NOT NULL,
    state   smallint NOT NULL,
    attempt int NOT NULL,
    at      timestamptz NOT NULL DEFAULT now(),
    error   text
) WITH (autovacuum_enabled = false, toast.autovacuum_enabled = false);
CREATE INDEX ack_0_tick ON millrace.ack_0 (tick_id);

-- A batch whose every job has an ack.
CREATE TABLE millrace.done_0 (
    queue   text NOT NULL,
    tick_id bigint NOT NULL,
    at      timestamptz NOT NULL DEFAULT now()
) WITH (autovacuum_enabled = false);
CREATE INDEX done_0_queue_tick ON millrace.done_0 (queue, tick_id);

-- Promotion rounds of due scheduled jobs (maintenance cadence).
CREATE TABLE millrace.promote_0 (
    round bigint NOT NULL,
    upto  timestamptz NOT NULL,
    snap  pg_snapshot NOT NULL
) WITH (autovacuum_enabled = false);
CREATE INDEX promote_0_round ON millrace.promote_0 (round);


-- ---------------------------------------------------------------- segment 1
CREATE TABLE millrace.job_1 (
    id           bigint NOT NULL DEFAULT nextval('millrace.job_id_seq'),
    queue        text NOT NULL,
    kind         text NOT NULL,
    args         jsonb NOT NULL,
    priority     smallint NOT NULL DEFAULT 1,
    attempt      int NOT NULL DEFAULT 0,
    max_attempts int NOT NULL DEFAULT 25,
    created_at   timestamptz NOT NULL DEFAULT now(),
    txid         xid8 NOT NULL DEFAULT pg_current_xact_id()
) WITH (autovacuum_enabled = false, toast.autovacuum_enabled = false);
CREATE INDEX job_1_queue_txid ON millrace.job_1 (queue, txid);

-- Jobs due later: scheduled at enqueue, or a retry waiting for its backoff.
CREATE TABLE millrace.sched_1 (
    id           bigint NOT NULL,
    queue        text NOT NULL,
    kind         text NOT NULL,
    args         jsonb NOT NULL,
    priority     smallint NOT NULL,
    attempt      int NOT NULL,
    max_attempts int NOT NULL,
    created_at   timestamptz NOT NULL,
    due_at       timestamptz NOT NULL,
    last_error   text,
    txid         xid8 NOT NULL DEFAULT pg_current_xact_id()
) WITH (autovacuum_enabled = false, toast.autovacuum_enabled = false);
CREATE INDEX sched_1_due ON millrace.sched_1 (due_at);
CREATE INDEX sched_1_txid ON millrace.sched_1 (txid);

-- A tick is a claimed batch: the jobs of queue visible in snap and not in
-- prev_snap. The row is also the batch's first lease (token = tick_id).
CREATE TABLE millrace.tick_1 (
    queue     text NOT NULL,
    tick_id   bigint NOT NULL,
    prev_snap pg_snapshot NOT NULL,
    snap      pg_snapshot NOT NULL,
    owner     int NOT NULL,
    njobs     int NOT NULL,
    carried   boolean NOT NULL DEFAULT false,  -- copied forward by rotation: a prev_snap only
    at        timestamptz NOT NULL DEFAULT now()
) WITH (autovacuum_enabled = false);
CREATE UNIQUE INDEX tick_1_queue_tick ON millrace.tick_1 (queue, tick_id);
CREATE INDEX tick_1_owner ON millrace.tick_1 (owner, tick_id);

-- Later leases of a batch, taken when its owner died (fencing tokens).
CREATE TABLE millrace.claim_1 (
    queue   text NOT NULL,
    tick_id bigint NOT NULL,
    token   bigint NOT NULL,
    owner   int NOT NULL,
    at      timestamptz NOT NULL DEFAULT now()
) WITH (autovacuum_enabled = false);
CREATE INDEX claim_1_tick ON millrace.claim_1 (tick_id, token);
CREATE INDEX claim_1_owner ON millrace.claim_1 (owner, tick_id);

-- One row per finished attempt of a job, in the segment of its batch.
-- state: 1 completed, 2 failed and retried, 3 discarded.
CREATE TABLE millrace.ack_1 (
    job_id  bigint NOT NULL,
    tick_id bigint NOT NULL,
    token   bigint NOT NULL,
    state   smallint NOT NULL,
    attempt int NOT NULL,
    at      timestamptz NOT NULL DEFAULT now(),
    error   text
) WITH (autovacuum_enabled = false, toast.autovacuum_enabled = false);
CREATE INDEX ack_1_tick ON millrace.ack_1 (tick_id);

-- A batch whose every job has an ack.
CREATE TABLE millrace.done_1 (
    queue   text NOT NULL,
    tick_id bigint NOT NULL,
    at      timestamptz NOT NULL DEFAULT now()
) WITH (autovacuum_enabled = false);
CREATE INDEX done_1_queue_tick ON millrace.done_1 (queue, tick_id);

-- Promotion rounds of due scheduled jobs (maintenance cadence).
CREATE TABLE millrace.promote_1 (
    round bigint NOT NULL,
    upto  timestamptz NOT NULL,
    snap  pg_snapshot NOT NULL
) WITH (autovacuum_enabled = false);
CREATE INDEX promote_1_round ON millrace.promote_1 (round);


-- ---------------------------------------------------------------- segment 2
CREATE TABLE millrace.job_2 (
    id           bigint NOT NULL DEFAULT nextval('millrace.job_id_seq'),
    queue        text NOT NULL,
    kind         text NOT NULL,
    args         jsonb NOT NULL,
    priority     smallint NOT NULL DEFAULT 1,
    attempt      int NOT NULL DEFAULT 0,
    max_attempts int NOT NULL DEFAULT 25,
    created_at   timestamptz NOT NULL DEFAULT now(),
    txid         xid8 NOT NULL DEFAULT pg_current_xact_id()
) WITH (autovacuum_enabled = false, toast.autovacuum_enabled = false);
CREATE INDEX job_2_queue_txid ON millrace.job_2 (queue, txid);

-- Jobs due later: scheduled at enqueue, or a retry waiting for its backoff.
CREATE TABLE millrace.sched_2 (
    id           bigint NOT NULL,
    queue        text NOT NULL,
    kind         text NOT NULL,
    args         jsonb NOT NULL,
    priority     smallint NOT NULL,
    attempt      int NOT NULL,
    max_attempts int NOT NULL,
    created_at   timestamptz NOT NULL,
    due_at       timestamptz NOT NULL,
    last_error   text,
    txid         xid8 NOT NULL DEFAULT pg_current_xact_id()
) WITH (autovacuum_enabled = false, toast.autovacuum_enabled = false);
CREATE INDEX sched_2_due ON millrace.sched_2 (due_at);
CREATE INDEX sched_2_txid ON millrace.sched_2 (txid);

-- A tick is a claimed batch: the jobs of queue visible in snap and not in
-- prev_snap. The row is also the batch's first lease (token = tick_id).
CREATE TABLE millrace.tick_2 (
    queue     text NOT NULL,
    tick_id   bigint NOT NULL,
    prev_snap pg_snapshot NOT NULL,
    snap      pg_snapshot NOT NULL,
    owner     int NOT NULL,
    njobs     int NOT NULL,
    carried   boolean NOT NULL DEFAULT false,  -- copied forward by rotation: a prev_snap only
    at        timestamptz NOT NULL DEFAULT now()
) WITH (autovacuum_enabled = false);
CREATE UNIQUE INDEX tick_2_queue_tick ON millrace.tick_2 (queue, tick_id);
CREATE INDEX tick_2_owner ON millrace.tick_2 (owner, tick_id);

-- Later leases of a batch, taken when its owner died (fencing tokens).
CREATE TABLE millrace.claim_2 (
    queue   text NOT NULL,
    tick_id bigint NOT NULL,
    token   bigint NOT NULL,
    owner   int NOT NULL,
    at      timestamptz NOT NULL DEFAULT now()
) WITH (autovacuum_enabled = false);
CREATE INDEX claim_2_tick ON millrace.claim_2 (tick_id, token);
CREATE INDEX claim_2_owner ON millrace.claim_2 (owner, tick_id);

-- One row per finished attempt of a job, in the segment of its batch.
-- state: 1 completed, 2 failed and retried, 3 discarded.
CREATE TABLE millrace.ack_2 (
    job_id  bigint NOT NULL,
    tick_id bigint NOT NULL,
    token   bigint NOT NULL,
    state   smallint NOT NULL,
    attempt int NOT NULL,
    at      timestamptz NOT NULL DEFAULT now(),
    error   text
) WITH (autovacuum_enabled = false, toast.autovacuum_enabled = false);
CREATE INDEX ack_2_tick ON millrace.ack_2 (tick_id);

-- A batch whose every job has an ack.
CREATE TABLE millrace.done_2 (
    queue   text NOT NULL,
    tick_id bigint NOT NULL,
    at      timestamptz NOT NULL DEFAULT now()
) WITH (autovacuum_enabled = false);
CREATE INDEX done_2_queue_tick ON millrace.done_2 (queue, tick_id);

-- Promotion rounds of due scheduled jobs (maintenance cadence).
CREATE TABLE millrace.promote_2 (
    round bigint NOT NULL,
    upto  timestamptz NOT NULL,
    snap  pg_snapshot NOT NULL
) WITH (autovacuum_enabled = false);
CREATE INDEX promote_2_round ON millrace.promote_2 (round);


-- enqueue inserts one job from SQL, inside the caller's transaction: the job
-- exists if and only if that transaction commits. It returns the job's id.
-- notify => true sends one NOTIFY per transaction (deduplicated by Postgres);
-- high-rate SQL producers can pass false and rely on the clients' fallback
-- poll, or enqueue many jobs per transaction.
CREATE FUNCTION millrace.enqueue(
    p_kind         text,
    p_args         jsonb DEFAULT '{}',
    p_queue        text DEFAULT 'default',
    p_priority     smallint DEFAULT 1,
    p_run_at       timestamptz DEFAULT NULL,
    p_max_attempts int DEFAULT 25,
    p_notify       boolean DEFAULT true
) RETURNS bigint LANGUAGE plpgsql AS $$
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

-- claim takes the next batch of a queue for process p_owner: the jobs
-- committed after the queue's previous tick and before a snapshot taken now
-- (P4). It inserts the tick only when the batch is not empty, so idle polls
-- write nothing. Ticks of one queue are serialized by a transaction-level
-- advisory lock. Only the current and previous segments are read: the next
-- segment is drained before it becomes current, so a claim never waits for
-- its TRUNCATE.
CREATE FUNCTION millrace.claim(p_queue text, p_owner int)
RETURNS TABLE (tick_id bigint, tick_seg smallint, id bigint, kind text, args jsonb,
               priority smallint, attempt int, max_attempts int, created_at timestamptz)
LANGUAGE plpgsql AS $$
DECLARE
    v_cur  smallint;
    v_prev_snap pg_snapshot;
    v_snap pg_snapshot;
    v_xip  xid8[];
    v_tick bigint;
    v_n    int;
BEGIN
    PERFORM pg_advisory_xact_lock(millrace.lock_space(), hashtext(p_queue));
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
    v_snap := pg_current_snapshot();
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
