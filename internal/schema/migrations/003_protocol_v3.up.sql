-- millrace storage protocol, version 3: rotation never waits on a consumer.
--
-- What changes from version 2 (docs/architecture.md tells why):
--
-- * Each growing table is declared once, as a table partitioned by slot,
--   with one partition per slot of a ring of four. Statements name the
--   parent; only maintenance names a partition, and only to lock and
--   TRUNCATE it. Claims and lookups read every slot, so where a row lives
--   never decides whether it is found.
-- * Reclaiming a slot copies forward, verbatim (same id, same txid), every
--   row still needed: jobs not yet claimed, jobs of batches not yet
--   finished, and those batches' ticks, leases, acks and done rows. Nothing
--   waits for a consumer; a slot a long producer transaction still writes
--   into is skipped and the ring goes on with the others.
-- * Scheduled jobs live in two generations of their own, compacted only
--   when the promoted rows outweigh the waiting ones (amortized: a rotation
--   never copies them).
-- * A claim takes at most p_max_jobs jobs and p_max_bytes bytes; the rest of
--   the snapshot range stays claimable by any process (a tick records the
--   last key it took and whether more remain).
-- * Released batches (their holder died or is stuck) are adopted by any
--   claimer of their queue; a claim whose reply was lost is found again by
--   its request id; an ack flush is idempotent by its sequence number.
-- * Every callable function that writes is SECURITY DEFINER with a pinned
--   search_path; nobody needs to write a table of the schema directly.

-- --------------------------------------------------------------- carry v2
-- Jobs of version 2 that have not finished are carried into version 3:
-- ready jobs without an ack for their attempt, and scheduled jobs not yet
-- promoted. (Jobs in flight in a running v2 process may run once more:
-- stop workers before migrating.)
CREATE TEMP TABLE v2_ready ON COMMIT DROP AS
SELECT j.id, j.queue, j.kind, j.args, j.priority, j.attempt, j.max_attempts, j.created_at
FROM (SELECT * FROM millrace.job_0 UNION ALL SELECT * FROM millrace.job_1 UNION ALL SELECT * FROM millrace.job_2) j
WHERE NOT EXISTS (
    SELECT 1 FROM (SELECT job_id, attempt FROM millrace.ack_0 UNION ALL SELECT job_id, attempt FROM millrace.ack_1
                   UNION ALL SELECT job_id, attempt FROM millrace.ack_2) a
    WHERE a.job_id = j.id AND a.attempt = j.attempt + 1);

CREATE TEMP TABLE v2_sched ON COMMIT DROP AS
WITH last AS (
    SELECT p.upto, p.snap FROM (SELECT * FROM millrace.promote_0 UNION ALL SELECT * FROM millrace.promote_1
                                UNION ALL SELECT * FROM millrace.promote_2) p
    ORDER BY p.round DESC LIMIT 1)
SELECT DISTINCT ON (s.id, s.attempt) s.id, s.queue, s.kind, s.args, s.priority, s.attempt, s.max_attempts,
       s.created_at, s.due_at, s.last_error
FROM (SELECT * FROM millrace.sched_0 UNION ALL SELECT * FROM millrace.sched_1 UNION ALL SELECT * FROM millrace.sched_2) s
LEFT JOIN last ON true
WHERE NOT (coalesce(pg_visible_in_snapshot(s.txid, last.snap), false) AND s.due_at <= last.upto);

DROP FUNCTION millrace.enqueue(text, jsonb, text, smallint, timestamptz, int, boolean);
DROP FUNCTION millrace.claim(text, int);
DROP TABLE millrace.job_0, millrace.job_1, millrace.job_2,
           millrace.sched_0, millrace.sched_1, millrace.sched_2,
           millrace.tick_0, millrace.tick_1, millrace.tick_2,
           millrace.claim_0, millrace.claim_1, millrace.claim_2,
           millrace.ack_0, millrace.ack_1, millrace.ack_2,
           millrace.done_0, millrace.done_1, millrace.done_2,
           millrace.promote_0, millrace.promote_1, millrace.promote_2;

-- ------------------------------------------------------------- constants
-- Advisory lock spaces (first key of two-int locks). lock_space() (v1) holds
-- the leader lock (second key 0) and process liveness locks (process id).
CREATE FUNCTION millrace.fence_space() RETURNS int LANGUAGE sql IMMUTABLE AS $$ SELECT 1836412275 $$;
CREATE FUNCTION millrace.claim_space() RETURNS int LANGUAGE sql IMMUTABLE AS $$ SELECT 1836412276 $$;
CREATE FUNCTION millrace.flush_space() RETURNS int LANGUAGE sql IMMUTABLE AS $$ SELECT 1836412277 $$;
CREATE FUNCTION millrace.maint_space() RETURNS int LANGUAGE sql IMMUTABLE AS $$ SELECT 1836412278 $$;

-- The ring has four slots: one current (producers write into it), the
-- others waiting to be reclaimed or clean. Scheduled jobs have two
-- generations.
CREATE FUNCTION millrace.slots() RETURNS smallint LANGUAGE sql IMMUTABLE AS $$ SELECT 4::smallint $$;

-- Ledgers: rotation (which slot is current, v1) gains a running count;
-- reclaim records each slot emptied. Both take their ids from one
-- sequence so that "reclaimed since it was last current" is an id
-- comparison.
ALTER TABLE millrace.rotation DROP CONSTRAINT rotation_segment_check;
ALTER TABLE millrace.rotation ADD CONSTRAINT rotation_segment_check CHECK (segment BETWEEN 0 AND 3);
ALTER TABLE millrace.rotation ADD COLUMN n bigint NOT NULL DEFAULT 0;
CREATE SEQUENCE millrace.ring_seq;
CREATE TABLE millrace.reclaim (
    id      bigint PRIMARY KEY,
    segment smallint NOT NULL,
    n       bigint NOT NULL,            -- reclaims since install
    copied  bigint NOT NULL,            -- rows carried forward
    at      timestamptz NOT NULL DEFAULT now()
);
-- The ledger keeps its rows (no DELETE at install: no dead tuple); the
-- ring's ids continue after them, and the v2 history counts as nothing.
SELECT setval('millrace.ring_seq', (SELECT max(id) FROM millrace.rotation));
INSERT INTO millrace.rotation (id, segment, n) VALUES (nextval('millrace.ring_seq'), 0, 0);
INSERT INTO millrace.reclaim (id, segment, n, copied)
SELECT nextval('millrace.ring_seq'), s, 0, 0 FROM generate_series(1, 3) s;

-- ------------------------------------------------------------ the ring
-- A job ready to run (enqueued, promoted, or carried forward verbatim).
CREATE TABLE millrace.job (
    slot         smallint NOT NULL,
    id           bigint NOT NULL,
    queue        text NOT NULL,
    kind         text NOT NULL,
    args         jsonb NOT NULL,
    priority     smallint NOT NULL,
    attempt      int NOT NULL,          -- attempts made before this one
    max_attempts int NOT NULL,
    created_at   timestamptz NOT NULL,
    txid         xid8 NOT NULL DEFAULT pg_current_xact_id()
) PARTITION BY LIST (slot);
CREATE INDEX job_queue_txid ON millrace.job (queue, txid, id);

-- A tick is a claimed batch: the jobs of queue visible in snap and not in
-- prev_snap whose key (txid, id) is above after and at most upto. more
-- says the claim stopped at its cap: the next claim continues the same
-- range after upto. The row is also the batch's first lease (token =
-- tick_id). carried marks a copy kept only as the queue's frontier.
CREATE TABLE millrace.tick (
    slot       smallint NOT NULL,
    queue      text NOT NULL,
    tick_id    bigint NOT NULL,
    prev_snap  pg_snapshot NOT NULL,
    snap       pg_snapshot NOT NULL,
    after_txid xid8,
    after_id   bigint,
    upto_txid  xid8 NOT NULL,
    upto_id    bigint NOT NULL,
    more       boolean NOT NULL,
    owner      int NOT NULL,
    req        bigint NOT NULL,
    njobs      int NOT NULL,
    carried    boolean NOT NULL DEFAULT false,
    at         timestamptz NOT NULL DEFAULT now()
) PARTITION BY LIST (slot);
CREATE INDEX tick_queue_tick ON millrace.tick (queue, tick_id);
CREATE INDEX tick_tick ON millrace.tick (tick_id);
CREATE INDEX tick_owner_req ON millrace.tick (owner, req);

-- Later leases of a batch: owner 0 releases it to any claimer of its
-- queue (its holder died or is stuck); a claimer adopts it with a new,
-- higher token. The newest token is the fence.
CREATE TABLE millrace.lease (
    slot    smallint NOT NULL,
    queue   text NOT NULL,
    tick_id bigint NOT NULL,
    token   bigint NOT NULL,
    owner   int NOT NULL,
    req     bigint NOT NULL DEFAULT 0,  -- the adopting claim's request id
    at      timestamptz NOT NULL DEFAULT now()
) PARTITION BY LIST (slot);
CREATE INDEX lease_tick ON millrace.lease (tick_id, token);
CREATE INDEX lease_released ON millrace.lease (queue, tick_id) WHERE owner = 0;
CREATE INDEX lease_owner_req ON millrace.lease (owner, req) WHERE owner <> 0;

-- One row per finished attempt of a job of a batch.
-- state: 1 completed, 2 failed and retried, 3 discarded.
CREATE TABLE millrace.ack (
    slot    smallint NOT NULL,
    job_id  bigint NOT NULL,
    tick_id bigint NOT NULL,
    token   bigint NOT NULL,
    state   smallint NOT NULL,
    attempt int NOT NULL,
    at      timestamptz NOT NULL DEFAULT now(),
    error   text
) PARTITION BY LIST (slot);
CREATE INDEX ack_tick ON millrace.ack (tick_id, job_id);

-- A batch whose every job has an ack.
CREATE TABLE millrace.done (
    slot    smallint NOT NULL,
    queue   text NOT NULL,
    tick_id bigint NOT NULL,
    at      timestamptz NOT NULL DEFAULT now()
) PARTITION BY LIST (slot);
CREATE INDEX done_tick ON millrace.done (tick_id);

-- Ack flushes by process and sequence number: a replayed flush is a no-op.
CREATE TABLE millrace.flush (
    slot  smallint NOT NULL,
    owner int NOT NULL,
    seq   bigint NOT NULL,
    at    timestamptz NOT NULL DEFAULT now()
) PARTITION BY LIST (slot);
CREATE INDEX flush_owner_seq ON millrace.flush (owner, seq);

-- Promotion rounds of due scheduled jobs (maintenance cadence). total is
-- the running count of promoted jobs.
CREATE TABLE millrace.promote (
    slot  smallint NOT NULL,
    round bigint NOT NULL,
    upto  timestamptz NOT NULL,
    snap  pg_snapshot NOT NULL,
    total bigint NOT NULL
) PARTITION BY LIST (slot);
CREATE INDEX promote_round ON millrace.promote (round);

-- Jobs due later: scheduled at enqueue, or a retry waiting for its backoff.
-- Two generations; promotion reads both.
CREATE TABLE millrace.sched (
    gen          smallint NOT NULL,
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
) PARTITION BY LIST (gen);
CREATE INDEX sched_due ON millrace.sched (due_at);
CREATE INDEX sched_txid ON millrace.sched (txid);

-- The newest row names the generation scheduled jobs go into.
CREATE TABLE millrace.sched_gen (
    id       bigint PRIMARY KEY,
    gen      smallint NOT NULL,
    copied   bigint NOT NULL,   -- rows carried by the compaction that made it active
    promoted bigint NOT NULL,   -- promote.total when it became active
    at       timestamptz NOT NULL DEFAULT now()
);
INSERT INTO millrace.sched_gen (id, gen, copied, promoted) VALUES (nextval('millrace.ring_seq'), 0, 0, 0);

-- The partitions. Space comes back by TRUNCATE, never VACUUM.
DO $$
DECLARE
    t text;
BEGIN
    FOR s IN 0 .. millrace.slots() - 1 LOOP
        FOREACH t IN ARRAY ARRAY['job', 'tick', 'lease', 'ack', 'done', 'flush', 'promote'] LOOP
            EXECUTE format('CREATE TABLE millrace.%I PARTITION OF millrace.%I FOR VALUES IN (%s)'
                           ' WITH (autovacuum_enabled = false, toast.autovacuum_enabled = false)', t || '_' || s, t, s);
        END LOOP;
    END LOOP;
    FOR g IN 0 .. 1 LOOP
        EXECUTE format('CREATE TABLE millrace.%I PARTITION OF millrace.sched FOR VALUES IN (%s)'
                       ' WITH (autovacuum_enabled = false, toast.autovacuum_enabled = false)', 'sched_' || g, g);
    END LOOP;
END $$;

-- The partitions of a slot, in lock order.
CREATE FUNCTION millrace.slot_tables(p_slot int) RETURNS text[] LANGUAGE sql IMMUTABLE
AS $$ SELECT ARRAY(SELECT format('millrace.%I', t || '_' || p_slot)
                   FROM unnest(ARRAY['job', 'tick', 'lease', 'ack', 'done', 'flush', 'promote']) t) $$;

INSERT INTO millrace.job (slot, id, queue, kind, args, priority, attempt, max_attempts, created_at)
SELECT 0, id, queue, kind, args, priority, attempt, max_attempts, created_at FROM v2_ready;
INSERT INTO millrace.sched (gen, id, queue, kind, args, priority, attempt, max_attempts, created_at, due_at, last_error)
SELECT 0, id, queue, kind, args, priority, attempt, max_attempts, created_at, due_at, last_error FROM v2_sched;

CREATE OR REPLACE FUNCTION millrace.current_segment() RETURNS smallint LANGUAGE sql STABLE
AS $$ SELECT segment FROM millrace.rotation ORDER BY id DESC LIMIT 1 $$;

CREATE FUNCTION millrace.current_gen() RETURNS smallint LANGUAGE sql STABLE
AS $$ SELECT gen FROM millrace.sched_gen ORDER BY id DESC LIMIT 1 $$;

-- txn_slot is the slot a producer transaction writes its jobs into: the
-- current one when it first enqueues, and the same one for the rest of the
-- transaction (a transaction-local setting), so that a transaction that
-- enqueues for a long time holds one slot of the ring, never all of them.
CREATE FUNCTION millrace.txn_slot() RETURNS smallint LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    v text := current_setting('millrace.txn_slot', true);
BEGIN
    IF v IS NULL OR v = '' THEN
        v := millrace.current_segment()::text;
        PERFORM set_config('millrace.txn_slot', v, true);
    END IF;
    RETURN v::smallint;
END $$;

-- ---------------------------------------------------------- input rules
-- check_job enforces the rules every enqueue path meets (the Go client
-- mirrors them with the same messages).
CREATE FUNCTION millrace.check_job(p_kind text, p_args jsonb, p_queue text, p_priority int, p_max_attempts int)
RETURNS void LANGUAGE plpgsql IMMUTABLE SET search_path = pg_catalog, pg_temp SET jit = off AS $$
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

-- --------------------------------------------------------------- enqueue
-- enqueue inserts one job inside the caller's transaction: the job exists
-- if and only if that transaction commits, at any isolation level and
-- any transaction age (claims read every slot, so the slot it lands in
-- does not matter). notify => true sends one NOTIFY per transaction.
CREATE FUNCTION millrace.enqueue(
    p_kind         text,
    p_args         jsonb DEFAULT '{}',
    p_queue        text DEFAULT 'default',
    p_priority     int DEFAULT 0,
    p_run_at       timestamptz DEFAULT NULL,
    p_max_attempts int DEFAULT 25,
    p_notify       boolean DEFAULT true
) RETURNS bigint LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp SET jit = off AS $$
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

-- enqueue_many inserts many jobs in one statement (arrays of equal length;
-- a NULL run_at means now). It returns their ids in order and sends one
-- NOTIFY per queue that got a job due now.
CREATE FUNCTION millrace.enqueue_many(
    p_kind text[], p_args jsonb[], p_queue text[], p_priority int[], p_run_at timestamptz[], p_max_attempts int[],
    p_notify boolean DEFAULT true
) RETURNS SETOF bigint LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp SET jit = off AS $$
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

-- ------------------------------------------------------------ the claim
-- range_jobs returns the jobs of queue visible in p_snap and not in p_prev
-- with key (txid, id) above p_after and at most p_upto (NULL: unbounded),
-- in key order, stopping after p_max_jobs jobs or once p_max_bytes of args
-- are reached (at least one job). It reads every slot: index probes on
-- (queue, txid, id), one per in-progress xid of p_prev and one range.
CREATE FUNCTION millrace.range_jobs(
    p_queue text, p_prev pg_snapshot, p_snap pg_snapshot,
    p_after_txid xid8, p_after_id bigint, p_upto_txid xid8, p_upto_id bigint,
    p_max_jobs int, p_max_bytes bigint
) RETURNS SETOF millrace.job LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, pg_temp SET jit = off SET plan_cache_mode = force_custom_plan AS $$
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

-- token_of is the newest lease token of a batch (its tick id if it was
-- never re-leased) and its holder (0: released).
CREATE FUNCTION millrace.holder(p_tick bigint, OUT token bigint, OUT owner int)
LANGUAGE sql STABLE SET search_path = pg_catalog, pg_temp SET jit = off AS $$
    SELECT token, owner FROM (
        (SELECT l.token, l.owner FROM millrace.lease l WHERE l.tick_id = p_tick ORDER BY l.token DESC LIMIT 1)
        UNION ALL
        (SELECT t.tick_id, t.owner FROM millrace.tick t WHERE t.tick_id = p_tick AND NOT t.carried LIMIT 1)) h
    ORDER BY token DESC LIMIT 1
$$;

-- batch_jobs returns the jobs of batch p_tick that have no ack yet.
CREATE FUNCTION millrace.batch_jobs(p_tick bigint) RETURNS SETOF millrace.job
LANGUAGE sql VOLATILE SET search_path = pg_catalog, pg_temp SET jit = off AS $$
    SELECT r.* FROM (SELECT * FROM millrace.tick t WHERE t.tick_id = p_tick AND NOT t.carried LIMIT 1) t
    CROSS JOIN LATERAL millrace.range_jobs(t.queue, t.prev_snap, t.snap, t.after_txid, t.after_id,
                                           t.upto_txid, t.upto_id, 2147483647, 9223372036854775807) r
    WHERE NOT EXISTS (SELECT 1 FROM millrace.ack a WHERE a.tick_id = p_tick AND a.job_id = r.id)
$$;

-- claim hands process p_owner its next batch of p_queue, in this order:
-- 1. with p_retry, the batch an earlier call with the same p_req committed
--    but whose reply was lost (found by owner and request id);
-- 2. a batch released by the leader (its holder died or got stuck): any
--    claimer of the queue adopts it under a new, higher token;
-- 3. the next jobs of the queue: those committed after the queue's newest
--    tick and visible in a snapshot taken now (or, when the newest tick
--    stopped at its cap, the rest of its range), at most p_max_jobs jobs
--    and p_max_bytes bytes of args.
-- Ticks of one queue are serialized by an advisory lock in their own key
-- space. An idle poll writes nothing.
CREATE FUNCTION millrace.claim(
    p_queue text, p_owner int, p_req bigint, p_retry boolean DEFAULT false,
    p_max_jobs int DEFAULT 1000, p_max_bytes bigint DEFAULT 8388608
) RETURNS TABLE (tick_id bigint, token bigint, id bigint, kind text, args jsonb, priority smallint,
                 attempt int, max_attempts int, created_at timestamptz)
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp SET jit = off AS $$
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

-- ------------------------------------------------------------- the flush
-- flush writes the outcomes of finished attempts and the batches they
-- complete, in one transaction, once per (owner, seq): a replay of a
-- flush whose reply was lost changes nothing. Acks of a batch whose newest
-- lease token is not the one given are dropped (fencing) and their ticks
-- returned. Retries go to the schedule, discarded jobs to discarded.
-- Arrays are parallel; job fields other than the ids may be NULL for
-- completed jobs. p_replay says the caller may have sent this flush before
-- (it lost a reply): acks already written are then skipped one by one,
-- which a first attempt need not pay for.
CREATE FUNCTION millrace.flush(
    p_owner int, p_seq bigint,
    p_job bigint[], p_tick bigint[], p_token bigint[], p_state smallint[], p_attempt int[], p_error text[],
    p_retry_at timestamptz[], p_queue text[], p_kind text[], p_args jsonb[], p_priority smallint[],
    p_max_attempts int[], p_created_at timestamptz[],
    p_done_tick bigint[], p_done_token bigint[], p_done_queue text[],
    p_replay boolean DEFAULT true
) RETURNS SETOF bigint LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp SET jit = off AS $$
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

-- ------------------------------------------------------------ maintenance
-- open_batches lists the batches not yet finished, with their holder.
CREATE FUNCTION millrace.open_batches()
RETURNS TABLE (queue text, tick_id bigint, token bigint, owner int, leased_at timestamptz)
LANGUAGE sql STABLE SET search_path = pg_catalog, pg_temp SET jit = off AS $$
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

-- process_alive reports whether process p holds its liveness lock.
CREATE FUNCTION millrace.process_alive(p int) RETURNS boolean LANGUAGE sql STABLE
SET search_path = pg_catalog, pg_temp SET jit = off AS $$
    SELECT EXISTS (
        SELECT 1 FROM pg_locks l
        WHERE l.locktype = 'advisory' AND l.granted
          AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())
          AND l.classid = millrace.lock_space()::oid AND l.objid = p::oid AND l.objsubid = 2)
$$;

-- rescue releases, to any claimer of their queue, the open batches whose
-- holder is dead (its liveness lock is free: it exited, crashed, lost its
-- connection, or never lived past a claim that committed late) or whose
-- lease is older than p_stuck. It does not depend on the process table, so
-- a batch claimed after its process was declared dead is found too. It
-- returns what it released and forgets dead processes.
CREATE FUNCTION millrace.rescue(p_stuck interval)
RETURNS TABLE (queue text, tick_id bigint, owner int, reason text)
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp SET jit = off AS $$
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

-- unclaimed returns the jobs of slot p_slot that no tick covers yet: for
-- each queue with jobs in the slot (found by skip scan), the rows its
-- newest tick's snapshot does not see, or that lie in the rest of a range
-- that tick stopped at its cap.
CREATE FUNCTION millrace.unclaimed(p_slot smallint) RETURNS SETOF millrace.job
LANGUAGE sql VOLATILE SET search_path = pg_catalog, pg_temp SET jit = off AS $$
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

-- reclaim_slot empties slot p_slot into slot p_into. The caller holds
-- ACCESS EXCLUSIVE on every partition of p_slot, so no transaction that
-- read or wrote them is still running. Everything still needed moves
-- forward verbatim (same ids, same txids, so claims and batches find it
-- exactly as before): jobs not yet claimed, jobs of open batches not yet
-- acked, open batches' ticks, leases and acks, done rows of ticks that
-- live in another slot, each queue's newest tick and the newest promotion
-- round. Then the partitions are truncated. It returns the rows copied.
CREATE FUNCTION millrace.reclaim_slot(p_slot smallint, p_into smallint) RETURNS bigint
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp SET jit = off AS $$
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

-- slot_is_clean says slot p_slot was reclaimed since it was last current.
CREATE FUNCTION millrace.slot_is_clean(p_slot int) RETURNS boolean LANGUAGE sql STABLE
SET search_path = pg_catalog, pg_temp AS $$
    SELECT coalesce((SELECT max(c.id) FROM millrace.reclaim c WHERE c.segment = p_slot), 0)
         > coalesce((SELECT max(r.id) FROM millrace.rotation r WHERE r.segment = p_slot), 0)
$$;

-- rotate is one round of ring maintenance, serialized by an advisory lock
-- and reading the ledger only after it holds it (so two leaders can never
-- both rotate from the same state):
-- 1. reclaim every slot that is not current, not clean, and stopped being
--    current at least p_after ago (or any such slot when no slot is clean),
--    each under ACCESS EXCLUSIVE NOWAIT locks tried a few times: a slot in
--    use is skipped and named, never waited for. A slot that still holds
--    more than p_max_carry jobs not yet claimed (a backlog) is left where
--    it is until they are claimed: copying a backlog at every turn of the
--    ring would cost more than the space it frees, and claims read every
--    slot anyway;
-- 2. make the next clean slot current once the current one is p_after old.
-- It returns one row per action or obstacle.
CREATE FUNCTION millrace.rotate(p_after interval, p_max_carry bigint DEFAULT 5000)
RETURNS TABLE (action text, segment smallint, detail text)
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp SET jit = off SET lock_timeout = '50ms' AS $$
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

-- promote moves scheduled jobs that are due into the current slot. A
-- round promotes the rows due by now that the previous round did not:
-- those due since its time, and those it could not yet see (committed
-- after its snapshot), found by xid range and in-progress list, not by
-- scanning history. It returns the number promoted. When the rows
-- promoted since the active generation began outweigh those it was
-- started with (and at least p_compact_min), the waiting rows are copied,
-- verbatim, into the other generation and the active one is truncated:
-- each compaction is paid for by the promotions before it, and a rotation
-- never touches scheduled jobs.
CREATE FUNCTION millrace.promote(p_compact_min bigint DEFAULT 10000)
RETURNS bigint LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp SET jit = off AS $$
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
END $$;

-- ------------------------------------------------------------ read surface
-- jobs lists every job not yet finished: 'available' (committed, not yet
-- claimed, or in a batch released to other claimers), 'running' (in an
-- open batch held by a process, no ack yet), 'scheduled' (due
-- later, or a retry waiting for its backoff). It reads every slot; it is
-- for inspection, not for a hot path.
CREATE FUNCTION millrace.live_jobs()
RETURNS TABLE (id bigint, queue text, kind text, args jsonb, priority smallint, attempt int, max_attempts int,
               created_at timestamptz, state text, run_at timestamptz, tick_id bigint, owner int)
LANGUAGE sql STABLE SECURITY DEFINER SET search_path = pg_catalog, pg_temp SET jit = off AS $$
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

CREATE VIEW millrace.jobs AS SELECT * FROM millrace.live_jobs();

-- queue_counts is the number of jobs per queue and state (derived from
-- live_jobs and discarded; nothing is counted in a row).
CREATE FUNCTION millrace.queue_counts()
RETURNS TABLE (queue text, available bigint, running bigint, scheduled bigint, discarded bigint)
LANGUAGE sql STABLE SECURITY DEFINER SET search_path = pg_catalog, pg_temp SET jit = off AS $$
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

-- ring_stats reports the ring: current slot, when it became current, the
-- number of rotations and reclaims since install, and per slot its bytes.
CREATE FUNCTION millrace.ring_stats(
    OUT current_slot smallint, OUT since timestamptz, OUT rotations bigint, OUT reclaims bigint, OUT last_reclaim timestamptz)
LANGUAGE sql STABLE SECURITY DEFINER SET search_path = pg_catalog, pg_temp SET jit = off AS $$
    SELECT r.segment, r.at, r.n, c.n, c.at
    FROM (SELECT * FROM millrace.rotation ORDER BY id DESC LIMIT 1) r
    LEFT JOIN LATERAL (SELECT * FROM millrace.reclaim ORDER BY id DESC LIMIT 1) c ON true
$$;
