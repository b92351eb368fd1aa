-- millrace functions, leader and processes: registration and liveness (leases renewed by heartbeats), leadership (a ledger of terms, renewed by the leader's rounds) and its fencing, rescue of dead processes' batches (charging an attempt to the jobs they were running), promotion of due jobs, periodic slots, tally rounds.
--
-- The current definition of every function lives once, in internal/schema/functions/;
-- Migrate applies these files with CREATE OR REPLACE after the versioned migrations,
-- in file-name order, in the same transaction. A signature change needs a migration
-- that drops the old function (docs/contributing.md).

CREATE OR REPLACE FUNCTION millrace.process_alive(p integer)
 RETURNS boolean
 LANGUAGE plpgsql
 SET search_path TO 'pg_catalog', 'pg_temp'
 SET jit TO 'off'
 SET plan_cache_mode TO 'auto'
AS $function$
-- PL/pgSQL for a plan cached for the session: the leader asks about every
-- process at every round.
BEGIN
    RETURN EXISTS (SELECT 1 FROM millrace.process x WHERE x.id = p)
       AND coalesce((SELECT h.until FROM millrace.heartbeat h WHERE h.process = p ORDER BY h.id DESC LIMIT 1)
                    > clock_timestamp(), false);
END $function$;
COMMENT ON FUNCTION millrace.process_alive(p integer) IS
    'process_alive says process p is alive: it is registered and not forgotten, and its newest heartbeat''s lease runs past now (the server''s clock). A process that stops renewing (killed, stopped, partitioned, hung) is dead once its lease runs out, whatever its connections do. A caller that acts on the answer holds the advisory lock (lock_space, p) until it commits, as beat does.';

CREATE OR REPLACE FUNCTION millrace.check_lease(p_lease interval)
 RETURNS void
 LANGUAGE plpgsql
 IMMUTABLE
 SET search_path TO 'pg_catalog', 'pg_temp'
 SET plan_cache_mode TO 'auto'
AS $function$
BEGIN
    IF p_lease IS NULL OR p_lease < interval '1 second' OR p_lease > interval '1 hour' THEN
        RAISE EXCEPTION 'millrace: a lease must be 1 second to 1 hour, not %', p_lease USING ERRCODE = '22023';
    END IF;
END $function$;
COMMENT ON FUNCTION millrace.check_lease(p_lease interval) IS
    'check_lease refuses a process or leader lease outside 1 second to 1 hour.';

CREATE OR REPLACE FUNCTION millrace.register(p_name text, p_host text, p_pid integer, p_lease interval DEFAULT '00:00:15'::interval)
 RETURNS integer
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
 SET jit TO 'off'
 SET plan_cache_mode TO 'auto'
AS $function$
DECLARE
    v_id int := nextval('millrace.process_id_seq')::int;
BEGIN
    PERFORM millrace.check_lease(p_lease);
    INSERT INTO millrace.process (id, name, host, pid) VALUES (v_id, left(p_name, 200), left(p_host, 200), p_pid);
    INSERT INTO millrace.heartbeat (slot, id, process, until)
    VALUES (millrace.current_segment(), nextval('millrace.lease_seq'), v_id, clock_timestamp() + p_lease);
    RETURN v_id;
END $function$;
COMMENT ON FUNCTION millrace.register(p_name text, p_host text, p_pid integer, p_lease interval) IS
    'register records a client process and its first heartbeat, and returns its id. The process is alive for p_lease (the server''s clock), and for as long after as it renews its lease with beat before the lease runs out; its connections have nothing to do with it.';

CREATE OR REPLACE FUNCTION millrace.beat(p_process integer, p_lease interval DEFAULT '00:00:15'::interval)
 RETURNS boolean
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
 SET jit TO 'off'
 SET plan_cache_mode TO 'auto'
AS $function$
BEGIN
    PERFORM millrace.check_lease(p_lease);
    -- Serialized with rescue's judgment of this process: a beat either
    -- lands before rescue looks (the process lives) or after it (and then
    -- finds the lease run out, as rescue did).
    PERFORM pg_advisory_xact_lock(millrace.lock_space(), p_process);
    IF NOT millrace.process_alive(p_process) THEN
        RETURN false;
    END IF;
    INSERT INTO millrace.heartbeat (slot, id, process, until)
    VALUES (millrace.current_segment(), nextval('millrace.lease_seq'), p_process, clock_timestamp() + p_lease);
    RETURN true;
END $function$;
COMMENT ON FUNCTION millrace.beat(p_process integer, p_lease interval) IS
    'beat renews the lease of process p_process for p_lease from now (the server''s clock) and returns true; it returns false, and renews nothing, when the process is dead: its lease ran out (anyone may have released its batches since) or it was forgotten. A process told false registers again under a new id; its old batches belong to nobody it can trust.';

CREATE OR REPLACE FUNCTION millrace.lead(p_process integer, p_term bigint, p_lease interval DEFAULT '00:00:10'::interval)
 RETURNS bigint
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
 SET jit TO 'off'
 SET plan_cache_mode TO 'auto'
AS $function$
DECLARE
    v     millrace.leader;
    v_now timestamptz;
    v_id  bigint;
BEGIN
    PERFORM millrace.check_lease(p_lease);
    -- Takeovers and renewals run one at a time (a transaction lock: nothing
    -- outlives the transaction), each reading the ledger after the lock.
    PERFORM pg_advisory_xact_lock(millrace.lock_space(), 0);
    SELECT * INTO v FROM millrace.leader l ORDER BY l.id DESC LIMIT 1;
    v_now := clock_timestamp();
    IF p_term IS NOT NULL THEN
        -- A renewal: only of the newest term, by its holder, before it ran
        -- out, by a process that is itself alive.
        IF v.term IS DISTINCT FROM p_term OR v.holder IS DISTINCT FROM p_process OR v.until <= v_now
           OR NOT millrace.process_alive(p_process) THEN
            RETURN NULL;
        END IF;
        IF v.at > v_now - least(interval '1 second', p_lease / 4) THEN
            -- Renewed less than a second ago (a quarter of a shorter
            -- lease): one row a second at most. Not a whole second for a
            -- lease of a second or two, or it would run out between rows.
            RETURN p_term;
        END IF;
        INSERT INTO millrace.leader (slot, id, term, holder, until)
        VALUES (millrace.current_segment(), nextval('millrace.lease_seq'), p_term, p_process, v_now + p_lease);
        RETURN p_term;
    END IF;
    IF NOT millrace.process_alive(p_process) THEN
        RETURN NULL;  -- the caller is not alive itself
    END IF;
    -- A term runs until its until, unless its holder is gone: not renewed
    -- for 2 s and no session connection of its process is open (a killed
    -- process's connections close with it). A stopped or cut-off holder
    -- keeps its connection, and its term runs out as a lease does. A live
    -- holder that only lost its connection for a while is fenced by the
    -- new term, and steps down.
    IF v.until > v_now AND NOT (v.at < v_now - interval '2 seconds' AND NOT EXISTS (
            SELECT 1 FROM pg_stat_activity a
            WHERE a.datid = (SELECT d.oid FROM pg_database d WHERE d.datname = current_database())
              AND a.application_name = 'millrace process ' || v.holder)) THEN
        RETURN NULL;  -- a term runs
    END IF;
    v_id := nextval('millrace.lease_seq');
    INSERT INTO millrace.leader (slot, id, term, holder, until)
    VALUES (millrace.current_segment(), v_id, v_id, p_process, v_now + p_lease);
    RETURN v_id;
END $function$;
COMMENT ON FUNCTION millrace.lead(p_process integer, p_term bigint, p_lease interval) IS
    'lead is leadership as a lease. With p_term NULL it is a takeover attempt: when no term runs (the newest one''s until has passed, by the server''s clock, or its holder is gone: not renewed for 2 s and no session connection of its process open, as when the process was killed) a new term held by p_process starts, for p_lease, and its number is returned (NULL: another term runs). With p_term it is a renewal by the holder: the term is extended to p_lease from now (at most one row a second, or a quarter of p_lease when that is shorter) and p_term returned, or NULL when the term is no longer the newest or ran out, and the caller must stop leading. Terms are an append-only ledger read newest first, serialized by a transaction-level advisory lock. The leader passes its term to every maintenance function, which refuses it once it is not the newest running term (fence_leader).';

CREATE OR REPLACE FUNCTION millrace.resign(p_process integer, p_term bigint)
 RETURNS boolean
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
 SET jit TO 'off'
 SET plan_cache_mode TO 'auto'
AS $function$
DECLARE
    v millrace.leader;
BEGIN
    PERFORM pg_advisory_xact_lock(millrace.lock_space(), 0);
    SELECT * INTO v FROM millrace.leader l ORDER BY l.id DESC LIMIT 1;
    IF v.term IS DISTINCT FROM p_term OR v.holder IS DISTINCT FROM p_process OR v.until <= clock_timestamp() THEN
        RETURN false;
    END IF;
    INSERT INTO millrace.leader (slot, id, term, holder, until)
    VALUES (millrace.current_segment(), nextval('millrace.lease_seq'), p_term, p_process, clock_timestamp());
    RETURN true;
END $function$;
COMMENT ON FUNCTION millrace.resign(p_process integer, p_term bigint) IS
    'resign ends term p_term of leader p_process now (a stopping leader), so that another process takes over at its next attempt instead of when the lease runs out.';

CREATE OR REPLACE FUNCTION millrace.fence_leader(p_term bigint)
 RETURNS void
 LANGUAGE plpgsql
 SET search_path TO 'pg_catalog', 'pg_temp'
 SET jit TO 'off'
 SET plan_cache_mode TO 'auto'
AS $function$
BEGIN
    IF p_term IS NULL THEN
        RETURN;  -- an operator's call, not a leader's: serialized by the caller's lock all the same
    END IF;
    IF NOT EXISTS (SELECT 1 FROM (SELECT l.term, l.until FROM millrace.leader l ORDER BY l.id DESC LIMIT 1) n
                   WHERE n.term = p_term AND n.until > clock_timestamp()) THEN
        RAISE EXCEPTION 'millrace: leader term % is over; this process no longer leads', p_term
            USING ERRCODE = 'MR001', HINT = 'another process took over, or the lease ran out: stop leading';
    END IF;
END $function$;
COMMENT ON FUNCTION millrace.fence_leader(p_term bigint) IS
    'fence_leader raises MR001 unless leader term p_term is the newest term and has not run out (the server''s clock). Every maintenance function calls it with its caller''s term after taking the lock that serializes it, so a leader that resumes after losing its term (stopped, paused, partitioned) does nothing. A NULL term is an operator''s call and is not fenced.';

CREATE OR REPLACE FUNCTION millrace.release(p_owner integer)
 RETURNS integer
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
 SET jit TO 'off'
 SET plan_cache_mode TO 'auto'
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
    -- What it held of limited queues goes with its batches (an adopter
    -- counts them).
    INSERT INTO millrace.hold (slot, queue, owner, n)
    SELECT millrace.current_segment(), h.queue, p_owner, 0
    FROM (SELECT DISTINCT ON (x.queue) x.queue, x.n FROM millrace.hold x WHERE x.owner = p_owner ORDER BY x.queue, x.id DESC) h
    WHERE h.n > 0;
    PERFORM millrace.keyhold_put(h.queue, p_owner, NULL, NULL, NULL, NULL, true)
    FROM (SELECT DISTINCT ON (x.queue) x.queue, x.n FROM millrace.keyhold x WHERE x.owner = p_owner ORDER BY x.queue, x.id DESC) h
    WHERE 0 < ANY (h.n)
    ORDER BY hashtext(h.queue || '/' || p_owner::text), h.queue;  -- keyhold_put's lock keys, in one order
    RETURN v_n;
END $function$;
COMMENT ON FUNCTION millrace.release(p_owner integer) IS
    'release gives the open batches held by process p_owner back to any claimer of their queue at once (a stopping process calls it for the jobs it did not finish, a process declared dead for those of its old id), instead of waiting for the leader to see it gone. It charges no attempt: the caller is alive. What the process held of limited queues is set to nothing.';

CREATE OR REPLACE FUNCTION millrace.charge_started(p_tick bigint, p_token bigint, p_owner integer)
 RETURNS integer
 LANGUAGE plpgsql
 SET search_path TO 'pg_catalog', 'pg_temp'
 SET jit TO 'off'
 SET plan_cache_mode TO 'auto'
AS $function$
DECLARE
    v_slot smallint := millrace.current_segment();
    v_now  timestamptz := clock_timestamp();
    v_n    int;
BEGIN
    WITH r AS MATERIALIZED (
        SELECT b.*, s.at AS started_at, b.attempt + 1 AS a,
               (CASE WHEN b.attempt + 1 >= b.max_attempts THEN 3 ELSE 2 END)::smallint AS st,
               CASE WHEN millrace.process_alive(p_owner)
                    THEN format('millrace: the job ran longer than StuckAfter without an outcome, and its batch was released (attempt %s of %s)', b.attempt + 1, b.max_attempts)
                    ELSE format('millrace: the process died while running the job (attempt %s of %s)', b.attempt + 1, b.max_attempts) END AS err
        FROM millrace.batch_jobs(p_tick) b
        -- Started: by a start row under this lease, or as a whole by the
        -- claim that made the batch (its tick), less the jobs with a
        -- cancellation request: that claim handed those over cancelled,
        -- never to run (one cancelled while it ran finishes as cancelled
        -- at its next claim, uncharged).
        CROSS JOIN LATERAL (SELECT coalesce(
                (SELECT min(s.at) FROM millrace.start s
                 WHERE s.tick_id = p_tick AND s.token = p_token AND b.id = ANY (s.jobs)),
                (SELECT t.at FROM millrace.tick t
                 WHERE t.tick_id = p_tick AND t.started AND NOT t.carried AND p_token = p_tick
                   AND (SELECT count(*) FROM millrace.cancel c WHERE c.job_id = b.id) = 0
                 LIMIT 1)) AS at) s
        WHERE s.at IS NOT NULL),
    a AS (
        INSERT INTO millrace.ack (slot, job_id, tick_id, token, state, attempt, error)
        SELECT v_slot, r.id, p_tick, p_token, r.st, r.a, r.err FROM r
        RETURNING 1),
    sch AS (
        INSERT INTO millrace.sched (gen, id, queue, kind, args, priority, attempt, max_attempts, created_at, due_at, last_error,
                                    timeout_ms)
        SELECT millrace.current_gen(), r.id, r.queue, r.kind, r.args, r.priority, r.a, r.max_attempts, least(r.created_at, v_now),
               -- the default backoff (2^attempt seconds, at most an hour): the worker's own policy died with it
               v_now + least(interval '1 second' * power(2, least(r.a, 12)), interval '1 hour'), r.err, r.timeout_ms
        FROM r WHERE r.st = 2
        RETURNING 1),
    fin AS (
        INSERT INTO millrace.finished (bucket, id, attempt, state, queue, kind, args, priority, max_attempts, created_at,
                                      started_at, finished_at, error, owner)
        SELECT millrace.history_bucket(r.st, v_now), r.id, r.a, r.st, r.queue, r.kind, r.args, r.priority, r.max_attempts,
               r.created_at, r.started_at, v_now, r.err, p_owner
        FROM r
        RETURNING 1)
    SELECT count(*) INTO v_n FROM a;
    RETURN v_n;
END $function$;
COMMENT ON FUNCTION millrace.charge_started(p_tick bigint, p_token bigint, p_owner integer) IS
    'charge_started counts an attempt for every job of batch p_tick that its holder p_owner, dead or stuck, had started under lease p_token (a start mark, or its tick marked started as a whole, less jobs with a cancellation request) and not finished (no ack): the job failed with "the process died while running the job (attempt n of m)" (or, when the holder is still alive, "the job ran longer than StuckAfter"), and runs again after the default backoff, or is discarded after its last attempt. Jobs of the batch that had not started are not charged. The caller holds the batch''s fence lock.';

CREATE OR REPLACE FUNCTION millrace.rescue(p_stuck interval, p_term bigint DEFAULT NULL::bigint)
 RETURNS TABLE(queue text, tick_id bigint, owner integer, reason text, charged integer)
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
 SET jit TO 'off'
 SET plan_cache_mode TO 'auto'
AS $function$
#variable_conflict use_column
DECLARE
    v       record;
    v_alive boolean;
    v_live  int[] := '{}';
    v_dead  int[] := '{}';
    v_n     int;
    v_p     int;
BEGIN
    PERFORM pg_advisory_xact_lock(millrace.maint_space(), 1);
    PERFORM millrace.fence_leader(p_term);
    FOR v IN SELECT * FROM millrace.open_batches() o WHERE o.owner <> 0 ORDER BY o.tick_id LOOP
        IF v.owner = ANY (v_live) THEN
            v_alive := true;
        ELSIF v.owner = ANY (v_dead) THEN
            v_alive := false;
        ELSE
            -- Judged once, under the process's lock, held to the end: its
            -- beats wait, and then find it dead as judged here.
            PERFORM pg_advisory_xact_lock(millrace.lock_space(), v.owner);
            v_alive := millrace.process_alive(v.owner);
            IF v_alive THEN
                v_live := v_live || v.owner;
            ELSE
                v_dead := v_dead || v.owner;
            END IF;
        END IF;
        CONTINUE WHEN v_alive AND v.leased_at > clock_timestamp() - p_stuck;
        -- Never wait on a client's transaction: a CompleteTx left open (by
        -- a process whose lease ran out, say) holds the batch's fence lock
        -- shared to its end, and waiting for it stalled every maintenance
        -- step after this one (rotation included). The batch is said held
        -- and tried again at the next round.
        IF NOT pg_try_advisory_xact_lock(millrace.fence_space(), (v.tick_id % 2147483647)::int) THEN
            queue := v.queue; tick_id := v.tick_id; owner := v.owner; charged := 0; reason := 'held';
            RETURN NEXT;
            CONTINUE;
        END IF;
        CONTINUE WHEN (SELECT h.token FROM millrace.holder(v.tick_id) h) <> v.token;
        -- The jobs its holder had started used an attempt, whether the
        -- holder is dead or only stuck: either way the attempt is given
        -- up, and a job that kills its process (whose next process is up
        -- before the lease of the dead one runs out, with StuckAfter
        -- shorter than the lease) would otherwise run forever at attempt 1.
        v_n := millrace.charge_started(v.tick_id, v.token, v.owner);
        IF v_n > 0 AND NOT EXISTS (SELECT 1 FROM millrace.batch_jobs(v.tick_id)) THEN
            -- Every job left had started: the batch is finished.
            INSERT INTO millrace.done (slot, queue, tick_id) VALUES (millrace.current_segment(), v.queue, v.tick_id);
        ELSE
            INSERT INTO millrace.lease (slot, queue, tick_id, token, owner)
            VALUES (millrace.current_segment(), v.queue, v.tick_id, nextval('millrace.tick_id_seq'), 0);
            PERFORM pg_notify('millrace', v.queue);
        END IF;
        queue := v.queue; tick_id := v.tick_id; owner := v.owner; charged := v_n;
        reason := CASE WHEN v_alive THEN 'stuck' ELSE 'dead' END;
        RETURN NEXT;
    END LOOP;
    -- Forget dead processes (budgeted: one dead tuple per process identity).
    FOR v_p IN SELECT x.id FROM millrace.process x LOOP
        CONTINUE WHEN millrace.process_alive(v_p);
        PERFORM pg_advisory_xact_lock(millrace.lock_space(), v_p);
        DELETE FROM millrace.process x WHERE x.id = v_p AND NOT millrace.process_alive(v_p);
    END LOOP;
END $function$;
COMMENT ON FUNCTION millrace.rescue(p_stuck interval, p_term bigint) IS
    'rescue releases, to any claimer of their queue, the open batches whose holder is dead (its lease ran out: it exited, crashed, was stopped or cut off, or never lived past a claim that committed late) or whose lease is older than p_stuck. The jobs of a released batch that its holder had started and not finished use an attempt (charge_started), whether the holder is dead or stuck; a batch left with nothing to run is closed. It does not depend on the process table, so a batch claimed after its process was declared dead is found too. A batch whose fence lock a client''s transaction holds (an open CompleteTx) is not waited for: it is returned with reason ''held'' and tried again at the next call. It returns what it released and forgets dead processes. p_term is the calling leader''s term (fence_leader).';

CREATE OR REPLACE FUNCTION millrace.next_due()
 RETURNS timestamp with time zone
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
 SET jit TO 'off'
 SET plan_cache_mode TO 'auto'
AS $function$
-- PL/pgSQL for a plan cached for the session.
BEGIN
    RETURN (SELECT min(s.due_at) FROM millrace.sched s
            WHERE s.due_at > coalesce((SELECT p.upto FROM millrace.promote p ORDER BY p.round DESC LIMIT 1), '-infinity'));
END $function$;
COMMENT ON FUNCTION millrace.next_due() IS
    'next_due is when the next scheduled job not yet promoted is due (NULL: none); promote_due returns the same after its round, and the leader''s promoter sleeps until then (at most a second).';

CREATE OR REPLACE FUNCTION millrace.promote_due(p_compact_min bigint DEFAULT 10000, p_term bigint DEFAULT NULL::bigint, OUT promoted bigint, OUT queues text[], OUT next_due timestamp with time zone)
 RETURNS record
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
 SET jit TO 'off'
 SET plan_cache_mode TO 'force_generic_plan'
AS $function$
#variable_conflict use_column
DECLARE
    -- One generic plan per statement (plan_cache_mode): see claim.
    v_snap  pg_snapshot;
    v_now   timestamptz := clock_timestamp();
    v_last  millrace.promote;
    v_n     bigint := 0;
    v_gen   millrace.sched_gen;
    v_copied bigint;
    v_queues text[];
    v_seg   smallint;
BEGIN
    PERFORM pg_advisory_xact_lock(millrace.maint_space(), 2);
    PERFORM millrace.fence_leader(p_term);
    v_snap := pg_current_snapshot();
    SELECT * INTO v_last FROM millrace.promote p ORDER BY p.round DESC LIMIT 1;
    -- A round's time never goes below the last one's, even if the server
    -- clock steps back: otherwise due rows would be promoted twice.
    v_now := greatest(clock_timestamp(), v_last.upto);
    -- Nothing in the schedule is due by now (one probe of sched_due): no
    -- row can be promoted, and the statement below, which writes, is left
    -- out (an idle leader calls this every second).
    IF EXISTS (SELECT 1 FROM millrace.sched s WHERE s.due_at <= v_now) THEN
        -- The slot once, as a producer's transaction takes it (txn_slot),
        -- not a call per promoted job.
        v_seg := millrace.current_segment();
        WITH due AS (
            SELECT s.* FROM millrace.sched s
            WHERE v_last IS NULL AND s.due_at <= v_now AND pg_visible_in_snapshot(s.txid, v_snap)
            UNION ALL
            SELECT s.* FROM millrace.sched s
            WHERE v_last IS NOT NULL AND s.due_at > v_last.upto AND s.due_at <= v_now AND pg_visible_in_snapshot(s.txid, v_snap)
            UNION ALL
            -- Rows written since the last round, due by its time (late
            -- commits): read by txid, bounded on both sides. Every row
            -- promoted since the last compaction is due by then too, so
            -- the due time is kept from the index (+ 0): planned on the
            -- due-time index, this read all of them at every round.
            SELECT s.* FROM millrace.sched s
            WHERE v_last IS NOT NULL AND s.txid >= pg_snapshot_xmax(v_last.snap) AND s.txid < pg_snapshot_xmax(v_snap)
              AND s.due_at + interval '0' <= v_last.upto
              AND pg_visible_in_snapshot(s.txid, v_snap)
            UNION ALL
            SELECT s.* FROM millrace.sched s
            WHERE v_last IS NOT NULL AND s.txid = ANY (ARRAY(SELECT pg_snapshot_xip(v_last.snap))) AND s.due_at <= v_last.upto
              AND pg_visible_in_snapshot(s.txid, v_snap)),
        ins AS (
            INSERT INTO millrace.job (slot, id, queue, kind, args, priority, attempt, max_attempts, created_at, ready_at, timeout_ms)
            SELECT v_seg, id, queue, kind, args, priority, attempt, max_attempts, created_at, due_at, timeout_ms
            FROM due
            -- cancelled while scheduled: a probe per due job, not a hash of
            -- every cancel row the ring holds (docs/architecture.md, "Probes,
            -- not hashes")
            WHERE (SELECT count(*) FROM millrace.cancel c WHERE c.job_id = due.id) = 0
            RETURNING job.queue)
        SELECT count(*), array_agg(DISTINCT ins.queue) INTO v_n, v_queues FROM ins;
    END IF;
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
    promoted := v_n;
    queues := coalesce(v_queues, '{}');
    -- When the promoter should look again (next_due, in the same call).
    next_due := (SELECT min(s.due_at) FROM millrace.sched s WHERE s.due_at > coalesce(v_last.upto, '-infinity'));
END $function$;
COMMENT ON FUNCTION millrace.promote_due(p_compact_min bigint, p_term bigint, OUT promoted bigint, OUT queues text[], OUT next_due timestamp with time zone) IS
    'promote_due is a promote round that sends no NOTIFY: it returns how many jobs it promoted, the queues they went to (for the caller to announce once the round has committed) and when the next scheduled job not yet promoted is due (as next_due says after the round; NULL: none). A NOTIFY in the round''s transaction took the server''s one notification lock and held it through the round''s durable commit, so every announcement of every process waited behind each round; the leader''s promoter announces the queues itself, after the commit, and asks for the next due time in the same call.';

CREATE OR REPLACE FUNCTION millrace.promote(p_compact_min bigint DEFAULT 10000, p_term bigint DEFAULT NULL::bigint)
 RETURNS bigint
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
 SET jit TO 'off'
 SET plan_cache_mode TO 'auto'
AS $function$
DECLARE
    v record;
    v_q text;
BEGIN
    SELECT * INTO v FROM millrace.promote_due(p_compact_min, p_term);
    FOREACH v_q IN ARRAY v.queues LOOP
        PERFORM pg_notify('millrace', v_q);
    END LOOP;
    RETURN v.promoted;
END $function$;
COMMENT ON FUNCTION millrace.promote(p_compact_min bigint, p_term bigint) IS
    'promote moves scheduled jobs that are due into the current slot; a promoted job is ready from the time it was due. Every p_compact_min promotions it compacts the schedule into its other generation. p_term is the calling leader''s term (fence_leader). It is promote_due and one NOTIFY per queue that got jobs, sent at its commit: the leader''s promoter calls promote_due and announces after the commit instead.';

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

CREATE OR REPLACE FUNCTION millrace.periodic_run(p_name text, p_slot_at timestamp with time zone, p_kind text, p_args jsonb, p_queue text, p_priority integer, p_max_attempts integer, p_timeout_ms integer DEFAULT 0, p_term bigint DEFAULT NULL::bigint)
 RETURNS bigint
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
 SET jit TO 'off'
 SET plan_cache_mode TO 'auto'
AS $function$
DECLARE
    v_id bigint;
BEGIN
    -- Leaders trying the same slot are serialized; the later one sees the
    -- earlier one's row once it commits (READ COMMITTED: each statement
    -- here takes a new snapshot).
    PERFORM pg_advisory_xact_lock(millrace.uniq_space(), hashtext('periodic:' || p_name));
    PERFORM millrace.fence_leader(p_term);
    IF EXISTS (SELECT 1 FROM millrace.periodic p WHERE p.name = p_name AND p.slot_at = p_slot_at) THEN
        RETURN NULL;
    END IF;
    SELECT i.id INTO v_id FROM millrace.insert_many(ARRAY[p_kind], ARRAY[p_args], ARRAY[p_queue], ARRAY[p_priority],
                                                    ARRAY[NULL::timestamptz], ARRAY[p_max_attempts], NULL, NULL, NULL,
                                                    ARRAY[p_timeout_ms]) i;
    INSERT INTO millrace.periodic (name, slot_at, job_id) VALUES (p_name, p_slot_at, v_id);
    RETURN v_id;
END $function$;
COMMENT ON FUNCTION millrace.periodic_run(p_name text, p_slot_at timestamp with time zone, p_kind text, p_args jsonb, p_queue text, p_priority integer, p_max_attempts integer, p_timeout_ms integer, p_term bigint) IS
    'periodic_run enqueues the job of periodic slot (p_name, p_slot_at) unless some process did already; it returns the job''s id, or NULL. p_term is the calling leader''s term (fence_leader).';

CREATE OR REPLACE FUNCTION millrace.tally(p_every interval, p_term bigint DEFAULT NULL::bigint)
 RETURNS bigint
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
 SET jit TO 'off'
 SET plan_cache_mode TO 'auto'
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
    PERFORM millrace.fence_leader(p_term);
    -- A round runs in its caller's explicit transaction: if the caller
    -- stops before it commits, the server ends the transaction (and the
    -- lock above) rather than leave the next leader without tally rounds.
    PERFORM set_config('idle_in_transaction_session_timeout', '10s', true);
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
COMMENT ON FUNCTION millrace.tally(p_every interval, p_term bigint) IS
    'tally runs a tally round if the newest is at least p_every old (the leader calls it at every maintenance round); it returns the rows it counted, or NULL when it was not yet time. p_term is the calling leader''s term (fence_leader).';
