-- millrace storage protocol, version 5: job semantics, still with no dead
-- tuple on any path a claim or an insert reads.
--
-- * Priority lanes: a queue's jobs of one priority form a lane with its own
--   ticks (its own frontier). A claim serves lanes in priority order (lower
--   number first), except that a lane whose oldest waiting job has waited
--   longer than the claim's p_starve is served first: no lane starves.
-- * Outcomes: an ack's state is 1 completed, 2 failed (retried later),
--   3 discarded, 4 cancelled, 5 snoozed (runs again later, not counted as an
--   attempt). Retries and snoozes go to the schedule and wake the promoter
--   (NOTIFY millrace_sched), so sub-second delays hold.
-- * History: every finished attempt is one row of millrace.history, a table
--   partitioned into two rings of buckets (completed rows by 2-hour bucket,
--   the others by day) that are emptied by TRUNCATE once older than their
--   retention. Nothing is deleted.
-- * Cancel: a row in millrace.cancel (a table of the ring, carried forward
--   while its job is unfinished); a claim hands a cancelled job over marked
--   as such and the worker acks it cancelled without running it; a running
--   one is cancelled by its process (NOTIFY millrace_cancel, and a poll).
-- * Unique jobs: a key row in millrace.uniq (a table of the ring, carried
--   forward while it still blocks); an insert takes an advisory lock on the
--   key and looks at the newest row for it.
-- * Pause and resume: a ledger per queue, newest row wins; a claim of a
--   paused queue takes nothing.
-- * Periodic jobs: one row per (name, slot time) with a primary key, so a
--   slot is enqueued once however many leaders try.
-- * Transactional completion: millrace.complete, called inside a worker's
--   own transaction, writes the job's ack with the same fencing as a flush.

-- ------------------------------------------------------------ columns
-- ready_at: when the job became ready (enqueued now, or the time it was
-- due); a lane's starvation is measured from it. timeout_ms: the job's own
-- timeout (0: the worker's default).
DROP VIEW millrace.jobs;
DROP FUNCTION millrace.queue_counts();
DROP FUNCTION millrace.live_jobs();
DROP FUNCTION millrace.claim(text, int, bigint, boolean, int, bigint);
DROP FUNCTION millrace.batch_jobs(bigint);
DROP FUNCTION millrace.reclaim_slot(smallint, smallint);
DROP FUNCTION millrace.unclaimed(smallint);
DROP FUNCTION millrace.range_jobs(text, pg_snapshot, pg_snapshot, xid8, bigint, xid8, bigint, int, bigint);
DROP FUNCTION millrace.flush(int, bigint, bigint[], bigint[], bigint[], smallint[], int[], text[], timestamptz[], text[],
                             text[], jsonb[], smallint[], int[], timestamptz[], bigint[], bigint[], text[], boolean);
DROP FUNCTION millrace.enqueue(text, jsonb, text, int, timestamptz, int, boolean);
DROP FUNCTION millrace.enqueue_many(text[], jsonb[], text[], int[], timestamptz[], int[], boolean);

ALTER TABLE millrace.job ADD COLUMN ready_at timestamptz NOT NULL DEFAULT now();
ALTER TABLE millrace.job ADD COLUMN timeout_ms int NOT NULL DEFAULT 0;
ALTER TABLE millrace.sched ADD COLUMN timeout_ms int NOT NULL DEFAULT 0;
ALTER TABLE millrace.tick ADD COLUMN priority smallint NOT NULL DEFAULT 0;

DROP INDEX millrace.job_queue_txid;
CREATE INDEX job_lane ON millrace.job (queue, priority, txid, id);
CREATE INDEX job_id ON millrace.job (id);
CREATE INDEX sched_id ON millrace.sched (id);
DROP INDEX millrace.tick_queue_tick;
CREATE INDEX tick_lane ON millrace.tick (queue, priority, tick_id);

CREATE FUNCTION millrace.uniq_space() RETURNS int LANGUAGE sql IMMUTABLE AS $$ SELECT 1836412279 $$;

-- ------------------------------------------------------------ new tables
-- Cancellation requests, in the ring: carried forward while the job is
-- unfinished.
CREATE TABLE millrace.cancel (
    slot   smallint NOT NULL,
    job_id bigint NOT NULL,
    at     timestamptz NOT NULL DEFAULT now()
) PARTITION BY LIST (slot);
CREATE INDEX cancel_job ON millrace.cancel (job_id);

-- Unique keys, in the ring: carried forward while they still block.
-- states is a bit set of the finished states that keep blocking (2
-- completed, 4 discarded, 8 cancelled); an unfinished job always blocks.
-- until ends the key's period (NULL: no period).
CREATE TABLE millrace.uniq (
    slot   smallint NOT NULL,
    key    text NOT NULL,
    job_id bigint NOT NULL,
    states int NOT NULL,
    until  timestamptz,
    at     timestamptz NOT NULL DEFAULT now()
) PARTITION BY LIST (slot);
CREATE INDEX uniq_key ON millrace.uniq (key, job_id);

DO $$
BEGIN
    FOR s IN 0 .. millrace.slots() - 1 LOOP
        EXECUTE format('CREATE TABLE millrace.%I PARTITION OF millrace.cancel FOR VALUES IN (%s)'
                       ' WITH (autovacuum_enabled = false, toast.autovacuum_enabled = false)', 'cancel_' || s, s);
        EXECUTE format('CREATE TABLE millrace.%I PARTITION OF millrace.uniq FOR VALUES IN (%s)'
                       ' WITH (autovacuum_enabled = false, toast.autovacuum_enabled = false)', 'uniq_' || s, s);
    END LOOP;
END $$;

CREATE OR REPLACE FUNCTION millrace.slot_tables(p_slot int) RETURNS text[] LANGUAGE sql IMMUTABLE
AS $$ SELECT ARRAY(SELECT format('millrace.%I', t || '_' || p_slot)
                   FROM unnest(ARRAY['job', 'tick', 'lease', 'ack', 'done', 'flush', 'promote', 'cancel', 'uniq']) t) $$;

-- Finished attempts. bucket: completed rows go to one of 36 two-hour
-- buckets (0-35), the others to one of 32 daily buckets (36-67); a bucket
-- is truncated once its newest row is older than its retention.
-- state: as in ack (1 completed, 2 failed, 3 discarded, 4 cancelled,
-- 5 snoozed).
CREATE TABLE millrace.finished (
    bucket       smallint NOT NULL,
    id           bigint NOT NULL,
    attempt      int NOT NULL,
    state        smallint NOT NULL,
    queue        text NOT NULL,
    kind         text NOT NULL,
    args         jsonb NOT NULL,
    priority     smallint NOT NULL,
    max_attempts int NOT NULL,
    created_at   timestamptz NOT NULL,
    started_at   timestamptz,
    finished_at  timestamptz NOT NULL,
    error        text,
    owner        int NOT NULL
) PARTITION BY LIST (bucket);
CREATE INDEX finished_id ON millrace.finished (id);
CREATE INDEX finished_finished ON millrace.finished (finished_at);
CREATE INDEX finished_kind ON millrace.finished (kind, finished_at);

DO $$
BEGIN
    FOR b IN 0 .. 67 LOOP
        EXECUTE format('CREATE TABLE millrace.%I PARTITION OF millrace.finished FOR VALUES IN (%s)'
                       ' WITH (autovacuum_enabled = false, toast.autovacuum_enabled = false)', 'finished_' || b, b);
    END LOOP;
END $$;

CREATE FUNCTION millrace.history_bucket(p_state smallint, p_at timestamptz) RETURNS smallint
LANGUAGE sql IMMUTABLE AS $$
    SELECT CASE WHEN p_state = 1 THEN (floor(extract(epoch FROM p_at) / 7200)::bigint % 36)::smallint
                ELSE (36 + floor(extract(epoch FROM p_at) / 86400)::bigint % 32)::smallint END
$$;

-- Queue pause ledger: the newest row of a queue says whether it is paused.
CREATE SEQUENCE millrace.queue_state_seq;
CREATE TABLE millrace.queue_state (
    id     bigint PRIMARY KEY DEFAULT nextval('millrace.queue_state_seq'),
    queue  text NOT NULL,
    paused boolean NOT NULL,
    at     timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX queue_state_queue ON millrace.queue_state (queue, id);

-- Periodic job slots enqueued, one row per (name, slot time). Read only by
-- the leader's periodic step; rows older than a week are deleted at
-- maintenance cadence (budgeted).
CREATE TABLE millrace.periodic (
    name    text NOT NULL,
    slot_at timestamptz NOT NULL,
    job_id  bigint NOT NULL,
    at      timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (name, slot_at)
);

-- The history view: one row per finished attempt, state by name.
CREATE VIEW millrace.history AS
SELECT h.id, h.attempt,
       (ARRAY['completed', 'failed', 'discarded', 'cancelled', 'snoozed'])[h.state] AS state,
       h.queue, h.kind, h.args, h.priority, h.max_attempts, h.created_at, h.started_at, h.finished_at, h.error, h.owner
FROM millrace.finished h;

-- The v1 discarded table: its rows move into history, and it goes.
INSERT INTO millrace.finished (bucket, id, attempt, state, queue, kind, args, priority, max_attempts, created_at,
                              started_at, finished_at, error, owner)
SELECT millrace.history_bucket(3::smallint, d.discarded_at), d.id, d.attempt, 3, d.queue, d.kind, d.args, d.priority,
       d.max_attempts, d.created_at, NULL, d.discarded_at, d.error, 0
FROM millrace.discarded d;
DROP TABLE millrace.discarded;

-- ------------------------------------------------------------ job state
-- The functions that look at jobs are VOLATILE, not STABLE: each of their
-- statements then takes its snapshot after it has its locks. A reclaim
-- TRUNCATEs a slot (which an older snapshot would see as empty) and copies
-- what it keeps into another (which an older snapshot cannot see); a
-- statement that waited for the reclaim's lock must not look with a
-- snapshot from before it.
-- final_state is the finished state of job p_id (1 completed, 3 discarded,
-- 4 cancelled) if history still holds it, else NULL.
CREATE FUNCTION millrace.final_state(p_id bigint) RETURNS smallint LANGUAGE sql VOLATILE
SET search_path = pg_catalog, pg_temp SET jit = off AS $$
    SELECT h.state FROM millrace.finished h WHERE h.id = p_id AND h.state IN (1, 3, 4) LIMIT 1
$$;

-- pending says job p_id exists and has not finished.
CREATE FUNCTION millrace.pending(p_id bigint) RETURNS boolean LANGUAGE sql VOLATILE
SET search_path = pg_catalog, pg_temp SET jit = off AS $$
    SELECT millrace.final_state(p_id) IS NULL
       AND (EXISTS (SELECT 1 FROM millrace.job j WHERE j.id = p_id)
            OR EXISTS (SELECT 1 FROM millrace.sched s WHERE s.id = p_id))
$$;

-- uniq_blocks says a key row still blocks a new job with its key.
CREATE FUNCTION millrace.uniq_blocks(p_job bigint, p_states int, p_until timestamptz) RETURNS boolean LANGUAGE sql VOLATILE
SET search_path = pg_catalog, pg_temp SET jit = off AS $$
    SELECT (p_until IS NULL OR p_until > now())
       AND CASE millrace.final_state(p_job)
               WHEN 1 THEN p_states & 2 <> 0
               WHEN 3 THEN p_states & 4 <> 0
               WHEN 4 THEN p_states & 8 <> 0
               ELSE millrace.pending(p_job) END
$$;

-- queue_paused says queue p_queue is paused.
CREATE FUNCTION millrace.queue_paused(p_queue text) RETURNS boolean LANGUAGE sql STABLE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp SET jit = off AS $$
    SELECT coalesce((SELECT s.paused FROM millrace.queue_state s WHERE s.queue = p_queue ORDER BY s.id DESC LIMIT 1), false)
$$;

-- pause stops every process claiming from p_queue (at their next claim);
-- its jobs stay where they are, and rotation goes on.
CREATE FUNCTION millrace.pause(p_queue text) RETURNS void LANGUAGE plpgsql SECURITY DEFINER
SET search_path = pg_catalog, pg_temp SET jit = off AS $$
BEGIN
    PERFORM millrace.check_job('pause', '{}', p_queue, 0, 1);
    INSERT INTO millrace.queue_state (queue, paused) VALUES (p_queue, true);
END $$;

-- resume lets p_queue be claimed again and wakes its claimers.
CREATE FUNCTION millrace.resume(p_queue text) RETURNS void LANGUAGE plpgsql SECURITY DEFINER
SET search_path = pg_catalog, pg_temp SET jit = off AS $$
BEGIN
    PERFORM millrace.check_job('resume', '{}', p_queue, 0, 1);
    INSERT INTO millrace.queue_state (queue, paused) VALUES (p_queue, false);
    PERFORM pg_notify('millrace', p_queue);
END $$;

-- ------------------------------------------------------------ insert
-- insert_many inserts jobs (parallel arrays; NULL run_at means now) and
-- returns, in order, each job's id, whether it was a duplicate of a unique
-- job (its id is then the existing job's and nothing was inserted), whether
-- it is scheduled for later, and when it is due. A job with a unique key
-- is inserted only if no job holding the same key still blocks it (see
-- uniq); keys are locked for the rest of the transaction, and unique
-- inserts need READ COMMITTED (a REPEATABLE READ snapshot could not see a
-- concurrent insert of the same key). One NOTIFY per queue with a job due
-- now (a NOTIFY serializes commits: scheduled jobs send none, the leader's
-- promoter polls the schedule).
CREATE FUNCTION millrace.insert_many(
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

-- enqueue inserts one job inside the caller's transaction and returns its
-- id (for a duplicate of a unique job, the existing job's id): the job
-- exists if and only if that transaction commits, at any isolation level
-- and any transaction age. p_unique_key, when set, makes the job unique
-- (see insert_many); p_unique_states lists the finished states that keep
-- blocking (bits: 2 completed, 4 discarded, 8 cancelled), p_unique_until
-- ends the key's period.
CREATE FUNCTION millrace.enqueue(
    p_kind          text,
    p_args          jsonb DEFAULT '{}',
    p_queue         text DEFAULT 'default',
    p_priority      int DEFAULT 0,
    p_run_at        timestamptz DEFAULT NULL,
    p_max_attempts  int DEFAULT 25,
    p_notify        boolean DEFAULT true,
    p_unique_key    text DEFAULT NULL,
    p_unique_states int DEFAULT 0,
    p_unique_until  timestamptz DEFAULT NULL,
    p_timeout_ms    int DEFAULT 0
) RETURNS bigint LANGUAGE sql SECURITY DEFINER SET search_path = pg_catalog, pg_temp SET jit = off AS $$
    SELECT i.id FROM millrace.insert_many(ARRAY[p_kind], ARRAY[p_args], ARRAY[p_queue], ARRAY[p_priority], ARRAY[p_run_at],
                                          ARRAY[p_max_attempts], ARRAY[p_unique_key], ARRAY[p_unique_states],
                                          ARRAY[p_unique_until], ARRAY[p_timeout_ms], p_notify) i
$$;

-- enqueue_many inserts many jobs in one statement and returns their ids in
-- order (see insert_many).
CREATE FUNCTION millrace.enqueue_many(
    p_kind text[], p_args jsonb[], p_queue text[], p_priority int[], p_run_at timestamptz[], p_max_attempts int[],
    p_notify boolean DEFAULT true, p_unique_key text[] DEFAULT NULL, p_unique_states int[] DEFAULT NULL,
    p_unique_until timestamptz[] DEFAULT NULL, p_timeout_ms int[] DEFAULT NULL
) RETURNS SETOF bigint LANGUAGE sql SECURITY DEFINER SET search_path = pg_catalog, pg_temp SET jit = off AS $$
    SELECT i.id FROM millrace.insert_many(p_kind, p_args, p_queue, p_priority, p_run_at, p_max_attempts,
                                          p_unique_key, p_unique_states, p_unique_until, p_timeout_ms, p_notify) i
$$;

-- ------------------------------------------------------------ the claim
-- range_jobs returns the jobs of lane (p_queue, p_priority) visible in
-- p_snap and not in p_prev with key (txid, id) above p_after and at most
-- p_upto (NULL: unbounded), in key order, stopping after p_max_jobs jobs
-- or once p_max_bytes of args are reached (at least one job).
CREATE FUNCTION millrace.range_jobs(
    p_queue text, p_priority smallint, p_prev pg_snapshot, p_snap pg_snapshot,
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

-- batch_jobs returns the jobs of batch p_tick that have no ack yet.
CREATE FUNCTION millrace.batch_jobs(p_tick bigint) RETURNS SETOF millrace.job
LANGUAGE sql VOLATILE SET search_path = pg_catalog, pg_temp SET jit = off AS $$
    SELECT r.* FROM (SELECT * FROM millrace.tick t WHERE t.tick_id = p_tick AND NOT t.carried LIMIT 1) t
    CROSS JOIN LATERAL millrace.range_jobs(t.queue, t.priority, t.prev_snap, t.snap, t.after_txid, t.after_id,
                                           t.upto_txid, t.upto_id, 2147483647, 9223372036854775807) r
    WHERE NOT EXISTS (SELECT 1 FROM millrace.ack a WHERE a.tick_id = p_tick AND a.job_id = r.id)
$$;

-- lane_take returns the next jobs of lane (p_queue, p_priority): the rest
-- of the range its newest tick stopped in at its cap, or else those
-- committed since that tick and visible in p_snap; at most p_max_jobs jobs
-- and p_max_bytes bytes. Unless p_peek, it records them as batch p_tick of
-- process p_owner (claim request p_req).
CREATE FUNCTION millrace.lane_take(
    p_queue text, p_priority smallint, p_snap pg_snapshot, p_tick bigint, p_owner int, p_req bigint,
    p_max_jobs int, p_max_bytes bigint, p_peek boolean
) RETURNS SETOF millrace.job LANGUAGE plpgsql VOLATILE SET search_path = pg_catalog, pg_temp SET jit = off AS $$
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

-- claim hands process p_owner its next jobs of p_queue, in this order:
-- 1. with p_retry, the batches an earlier call with the same p_req
--    committed but whose reply was lost (found by owner and request id);
-- 2. nothing if the queue is paused;
-- 3. a batch released by the leader (its holder died or got stuck): any
--    claimer of the queue adopts it under a new, higher token;
-- 4. the next jobs of each lane (priority) of the queue, lanes in priority
--    order (lower number first) except that lanes whose first waiting job
--    has been ready longer than p_starve come first, oldest first: at most
--    p_max_jobs jobs and p_max_bytes bytes of args in all, one batch per
--    lane served.
-- cancelled marks a job cancelled before it ran: the claimer acks it
-- cancelled without running it. Claims of one queue are serialized by an
-- advisory lock in their own key space. An idle poll writes nothing.
CREATE FUNCTION millrace.claim(
    p_queue text, p_owner int, p_req bigint, p_retry boolean DEFAULT false,
    p_max_jobs int DEFAULT 1000, p_max_bytes bigint DEFAULT 8388608, p_starve interval DEFAULT '5 seconds'
) RETURNS TABLE (tick_id bigint, token bigint, id bigint, kind text, args jsonb, priority smallint,
                 attempt int, max_attempts int, created_at timestamptz, ready_at timestamptz, timeout_ms int,
                 cancelled boolean)
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp SET jit = off AS $$
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

-- ------------------------------------------------------------- the flush
-- flush writes the outcomes of finished attempts and the batches they
-- complete, in one transaction, once per (owner, seq): a replay of a
-- flush whose reply was lost changes nothing. Acks of a batch whose newest
-- lease token is not the one given are dropped (fencing) and their ticks
-- returned. Every written ack becomes a row of history; failed (2) and
-- snoozed (5) jobs go to the schedule (a snooze does not count an
-- attempt). Arrays are parallel. p_replay says the caller may have sent
-- this flush before: acks already written are then skipped one by one.
CREATE FUNCTION millrace.flush(
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

-- complete finishes job p_job of batch p_tick (lease token p_token) inside
-- the caller's transaction: its ack and history row commit with whatever
-- else that transaction does, or not at all. It raises an error when the
-- batch was released or re-leased since (another process may run the job)
-- or the job already has an outcome.
CREATE FUNCTION millrace.complete(
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
    VALUES (millrace.history_bucket(1::smallint, now()), p_job, p_attempt, 1, p_queue, p_kind, p_args, p_priority,
            p_max_attempts, p_created_at, p_started, clock_timestamp(), p_owner);
END $$;

-- ------------------------------------------------------------ cancel, retry
-- job_state is where job p_id stands: 'completed', 'discarded' or
-- 'cancelled' (finished, while history holds it), 'scheduled' (due later,
-- or waiting for a retry or a snooze), 'available' (ready, not yet
-- claimed), 'running' (claimed, no outcome yet), or NULL (unknown). It
-- costs a few index probes.
CREATE FUNCTION millrace.job_state(p_id bigint) RETURNS text LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp SET jit = off AS $$
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

-- live_job is the current row of live job p_id: its newest job row, or its
-- schedule row (run_at set) when it waits in the schedule.
CREATE FUNCTION millrace.live_job(p_id bigint)
RETURNS TABLE (queue text, kind text, args jsonb, priority smallint, attempt int, max_attempts int,
               created_at timestamptz, run_at timestamptz)
LANGUAGE sql VOLATILE SECURITY DEFINER SET search_path = pg_catalog, pg_temp SET jit = off AS $$
    SELECT x.queue, x.kind, x.args, x.priority, x.attempt, x.max_attempts, x.created_at, x.run_at FROM (
        (SELECT s.queue, s.kind, s.args, s.priority, s.attempt, s.max_attempts, s.created_at, s.due_at AS run_at, 1 AS o
         FROM millrace.sched s WHERE s.id = p_id AND millrace.job_state(p_id) = 'scheduled' ORDER BY s.due_at DESC LIMIT 1)
        UNION ALL
        (SELECT j.queue, j.kind, j.args, j.priority, j.attempt, j.max_attempts, j.created_at, NULL, 2
         FROM millrace.job j WHERE j.id = p_id ORDER BY j.ready_at DESC LIMIT 1)) x
    ORDER BY x.o LIMIT 1
$$;

-- cancel asks that job p_id never run again: 'cancelled' (it was waiting or
-- scheduled: it is finished as cancelled at once, in history; a claimer
-- that meets its row acks it without running it, and promotion skips its
-- schedule row), 'cancelling' (it has been claimed: the process running it
-- is told and cancels its context; it finishes when its worker returns),
-- 'finished' (it already finished: nothing is done) or 'unknown'.
CREATE FUNCTION millrace.cancel(p_id bigint) RETURNS text LANGUAGE plpgsql SECURITY DEFINER
SET search_path = pg_catalog, pg_temp SET jit = off AS $$
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

-- cancelled returns those of p_ids that have a cancellation request (a
-- process polls it for the jobs it runs, in case a NOTIFY was missed).
CREATE FUNCTION millrace.cancelled(p_ids bigint[]) RETURNS SETOF bigint LANGUAGE sql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp SET jit = off AS $$
    SELECT DISTINCT c.job_id FROM millrace.cancel c WHERE c.job_id = ANY (p_ids)
$$;

-- retry queues a discarded or cancelled job to run again now, as a new job
-- (a new id: the finished one stays finished in history) with the same
-- kind, queue, args, priority and max attempts: 'retried as job N',
-- 'not finished' (it is still live), 'completed' (it succeeded: nothing is
-- done) or 'unknown'.
CREATE FUNCTION millrace.retry(p_id bigint) RETURNS text LANGUAGE plpgsql SECURITY DEFINER
SET search_path = pg_catalog, pg_temp SET jit = off AS $$
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

-- ------------------------------------------------------------ maintenance
-- unclaimed returns the jobs of slot p_slot that no tick covers yet: for
-- each lane with jobs in the slot (found by skip scan), the rows its
-- newest tick's snapshot does not see, or that lie in the rest of a range
-- that tick stopped at its cap.
CREATE FUNCTION millrace.unclaimed(p_slot smallint) RETURNS SETOF millrace.job
LANGUAGE sql VOLATILE SET search_path = pg_catalog, pg_temp SET jit = off AS $$
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

-- reclaim_slot empties slot p_slot into slot p_into. The caller holds
-- ACCESS EXCLUSIVE on every partition of p_slot, so no transaction that
-- read or wrote them is still running. Everything still needed moves
-- forward verbatim (same ids, same txids, so claims and batches find it
-- exactly as before): jobs not yet claimed, jobs of open batches not yet
-- acked, open batches' ticks, leases and acks, done rows of ticks that
-- live in another slot, each lane's newest tick, the newest promotion
-- round, cancellations of unfinished jobs and unique keys that still
-- block. Then the partitions are truncated. It returns the rows copied.
CREATE FUNCTION millrace.reclaim_slot(p_slot smallint, p_into smallint) RETURNS bigint
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

-- promote moves scheduled jobs that are due into the current slot (see
-- version 3); a promoted job is ready from the time it was due.
CREATE OR REPLACE FUNCTION millrace.promote(p_compact_min bigint DEFAULT 10000)
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
END $$;

-- next_due is when the next scheduled job not yet promoted is due (NULL:
-- none); the leader's promoter sleeps until then, and at most 50 ms.
CREATE FUNCTION millrace.next_due() RETURNS timestamptz LANGUAGE sql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp SET jit = off AS $$
    SELECT min(s.due_at) FROM millrace.sched s
    WHERE s.due_at > coalesce((SELECT p.upto FROM millrace.promote p ORDER BY p.round DESC LIMIT 1), '-infinity')
$$;

-- expire_history truncates the history buckets whose newest row is older
-- than the retention of its kind (completed: p_completed; others:
-- p_other), each under a NOWAIT lock (a bucket being read is skipped until
-- the next round), and forgets periodic slots older than a week. It
-- returns the buckets truncated.
CREATE FUNCTION millrace.expire_history(p_completed interval, p_other interval) RETURNS int
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp SET jit = off SET lock_timeout = '50ms' AS $$
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

-- periodic_run enqueues the job of periodic slot (p_name, p_slot_at)
-- unless some process did already; it returns the job's id, or NULL.
CREATE FUNCTION millrace.periodic_run(
    p_name text, p_slot_at timestamptz, p_kind text, p_args jsonb, p_queue text, p_priority int, p_max_attempts int,
    p_timeout_ms int DEFAULT 0
) RETURNS bigint LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp SET jit = off AS $$
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

-- periodic_last is the newest slot of periodic job p_name enqueued.
CREATE FUNCTION millrace.periodic_last(p_name text) RETURNS timestamptz LANGUAGE sql STABLE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp SET jit = off AS $$
    SELECT max(p.slot_at) FROM millrace.periodic p WHERE p.name = p_name
$$;

-- ------------------------------------------------------------ read surface
-- live_jobs lists every job not yet finished (see version 3), by lane.
CREATE FUNCTION millrace.live_jobs()
RETURNS TABLE (id bigint, queue text, kind text, args jsonb, priority smallint, attempt int, max_attempts int,
               created_at timestamptz, state text, run_at timestamptz, tick_id bigint, owner int)
LANGUAGE sql VOLATILE SECURITY DEFINER SET search_path = pg_catalog, pg_temp SET jit = off AS $$
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

CREATE VIEW millrace.jobs AS SELECT * FROM millrace.live_jobs();

-- queue_counts is the number of jobs per queue and state: live ones
-- (derived from live_jobs), discarded and completed ones still in history,
-- and whether the queue is paused. Nothing is counted in a row; it is for
-- people and dashboards, not for a loop.
CREATE FUNCTION millrace.queue_counts()
RETURNS TABLE (queue text, available bigint, running bigint, scheduled bigint, discarded bigint, paused boolean,
               completed bigint)
LANGUAGE sql VOLATILE SECURITY DEFINER SET search_path = pg_catalog, pg_temp SET jit = off AS $$
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

-- ------------------------------------------------------------ grants
REVOKE ALL ON ALL TABLES IN SCHEMA millrace FROM PUBLIC;
REVOKE ALL ON ALL SEQUENCES IN SCHEMA millrace FROM PUBLIC;
REVOKE EXECUTE ON ALL FUNCTIONS IN SCHEMA millrace FROM PUBLIC;
DO $$
BEGIN
    IF EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'millrace_producer') THEN
        GRANT EXECUTE ON FUNCTION
            millrace.enqueue(text, jsonb, text, int, timestamptz, int, boolean, text, int, timestamptz, int),
            millrace.enqueue_many(text[], jsonb[], text[], int[], timestamptz[], int[], boolean, text[], int[], timestamptz[], int[]),
            millrace.insert_many(text[], jsonb[], text[], int[], timestamptz[], int[], text[], int[], timestamptz[], int[], boolean)
        TO millrace_producer;
    END IF;
    IF EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'millrace_worker') THEN
        GRANT EXECUTE ON FUNCTION
            millrace.enqueue(text, jsonb, text, int, timestamptz, int, boolean, text, int, timestamptz, int),
            millrace.enqueue_many(text[], jsonb[], text[], int[], timestamptz[], int[], boolean, text[], int[], timestamptz[], int[]),
            millrace.insert_many(text[], jsonb[], text[], int[], timestamptz[], int[], text[], int[], timestamptz[], int[], boolean),
            millrace.claim(text, int, bigint, boolean, int, bigint, interval),
            millrace.flush(int, bigint, bigint[], bigint[], bigint[], smallint[], int[], text[], timestamptz[], text[],
                           text[], jsonb[], smallint[], int[], timestamptz[], int[], timestamptz[], timestamptz[],
                           bigint[], bigint[], text[], boolean),
            millrace.complete(bigint, bigint, bigint, int, text, text, jsonb, smallint, int, timestamptz, timestamptz, int),
            millrace.live_jobs(),
            millrace.queue_counts(),
            millrace.queue_paused(text),
            millrace.job_state(bigint),
            millrace.live_job(bigint),
            millrace.cancelled(bigint[]),
            millrace.next_due(),
            millrace.expire_history(interval, interval),
            millrace.periodic_run(text, timestamptz, text, jsonb, text, int, int, int),
            millrace.periodic_last(text)
        TO millrace_worker;
        GRANT SELECT ON millrace.jobs, millrace.history TO millrace_worker;
    END IF;
    IF EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'millrace_admin') THEN
        GRANT EXECUTE ON FUNCTION
            millrace.pause(text), millrace.resume(text), millrace.cancel(bigint), millrace.retry(bigint)
        TO millrace_admin;
        GRANT SELECT ON ALL TABLES IN SCHEMA millrace TO millrace_admin;
    END IF;
END $$;
