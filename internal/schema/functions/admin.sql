-- millrace functions, operator actions: cancel, pause, resume, retry.
--
-- The current definition of every function lives once, in internal/schema/functions/;
-- Migrate applies these files with CREATE OR REPLACE after the versioned migrations,
-- in file-name order, in the same transaction. A signature change needs a migration
-- that drops the old function (docs/contributing.md).

CREATE OR REPLACE FUNCTION millrace.need_read_committed(p_call text)
 RETURNS void
 LANGUAGE plpgsql
 SET search_path TO 'pg_catalog', 'pg_temp'
 SET jit TO 'off'
 SET plan_cache_mode TO 'auto'
AS $function$
BEGIN
    IF current_setting('transaction_isolation') <> 'read committed' THEN
        RAISE EXCEPTION 'millrace: % must run at READ COMMITTED, and this transaction is % (its snapshot, older than the lock it takes, would miss what the lock waited for): run BEGIN ISOLATION LEVEL READ COMMITTED; SELECT millrace.%; COMMIT',
            p_call, current_setting('transaction_isolation'), p_call USING ERRCODE = '0A000';
    END IF;
END $function$;
COMMENT ON FUNCTION millrace.need_read_committed(p_call text) IS
    'need_read_committed raises a one-line error (0A000) that says what to do unless the caller''s transaction is READ COMMITTED. The operator actions that take a lock and then decide on what its previous holder wrote (cancel, retry, set_retention) call it first: at REPEATABLE READ or SERIALIZABLE their snapshot is older than the lock, and a cancel answered "cancelled" for jobs a claim had just taken (they ran), concurrent retries of one job raised duplicate keys.';

CREATE OR REPLACE FUNCTION millrace.cancel(p_id bigint)
 RETURNS text
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
 SET jit TO 'off'
 SET plan_cache_mode TO 'auto'
AS $function$
DECLARE
    v_state text;
    v_j record;
    v_at timestamptz;
    v_q text := coalesce((SELECT j.queue FROM millrace.job j WHERE j.id = p_id LIMIT 1),
                         (SELECT s.queue FROM millrace.sched s WHERE s.id = p_id LIMIT 1));
BEGIN
    PERFORM millrace.need_read_committed('cancel(...)');
    -- History is read before the queue's claim lock, which every claim of
    -- the queue waits for: a finished job stays finished, and probing
    -- history's buckets takes milliseconds that claims must not wait. Under
    -- the lock only the live rows are read, which is what a claim changes.
    -- A job still waiting (in the schedule, or its newest row not yet
    -- claimed) and never cancelled has not finished: its live rows say so
    -- in a few index probes, where history's lookup plans two statements
    -- over the buckets at each call (1.35 ms of a cancel's 4.9 ms in the
    -- full mix at 800 jobs/s).
    IF v_q IS NULL OR EXISTS (SELECT 1 FROM millrace.cancel c WHERE c.job_id = p_id)
       OR coalesce(millrace.live_state(p_id) NOT IN ('scheduled', 'available'), true) THEN
        IF millrace.final_state(p_id, millrace.live_since(p_id)) IS NOT NULL THEN
            RETURN 'finished';
        END IF;
    END IF;
    IF v_q IS NOT NULL THEN
        -- Cancels of one job wait for each other (the job's own key), and
        -- share the queue's claim lock, which a claim takes exclusively: a
        -- claim and a cancel exclude each other (the claim reads the
        -- cancellations of the jobs it takes; the cancel reads whether its
        -- job was taken), but cancels of different jobs no longer queue
        -- behind one another and hold the claims up in turn.
        PERFORM pg_advisory_xact_lock(millrace.cancel_space(), (p_id % 2147483647)::int);
        -- A job still in the schedule can be taken by no claim: only a
        -- promote round moves it to its queue. Holding the rounds' lock
        -- shared keeps it in the schedule until this transaction ends, and
        -- the next round sees the cancellation and leaves the job out; the
        -- claims are not waited for (they held cancels of scheduled jobs
        -- for 32 ms each in the bench's full mix).
        IF millrace.live_state(p_id) = 'scheduled' THEN
            PERFORM pg_advisory_xact_lock_shared(millrace.maint_space(), 2);
            v_state := millrace.live_state(p_id);
        END IF;
        IF v_state IS DISTINCT FROM 'scheduled' THEN
            PERFORM pg_advisory_xact_lock_shared(millrace.claim_space(), hashtext(v_q));
        END IF;
    END IF;
    IF v_state IS DISTINCT FROM 'scheduled' THEN
        v_state := millrace.live_state(p_id);
    END IF;
    IF v_state IS NULL THEN
        -- No live row: it finished meanwhile (and its rows went), or it
        -- never was.
        RETURN CASE WHEN millrace.final_state(p_id) IS NOT NULL THEN 'finished' ELSE 'unknown' END;
    END IF;
    IF EXISTS (SELECT 1 FROM millrace.cancel c WHERE c.job_id = p_id) THEN
        -- Asked before: another call may have cancelled it while this one
        -- waited for the lock (a rare path, where history is read again).
        IF v_state <> 'running' AND millrace.final_state(p_id, millrace.live_since(p_id)) IS NOT NULL THEN
            RETURN 'finished';
        END IF;
    ELSE
        INSERT INTO millrace.cancel (slot, job_id) VALUES (millrace.current_segment(), p_id);
    END IF;
    IF v_state = 'running' THEN
        -- Only a running job needs its process told now (it also polls).
        PERFORM pg_notify('millrace_cancel', p_id::text);
        RETURN 'cancelling';
    END IF;
    IF v_state = 'scheduled' THEN
        -- The job's rows by id, then the newest (OFFSET 0 keeps the
        -- planner from walking the due_at index backwards for the id:
        -- 38 ms over 37,000 schedule rows, under the queue's claim lock).
        SELECT s.attempt, s.queue, s.kind, s.args, s.priority, s.max_attempts, s.created_at INTO v_j
        FROM (SELECT * FROM millrace.sched s WHERE s.id = p_id OFFSET 0) s ORDER BY s.due_at DESC LIMIT 1;
    ELSE
        SELECT j.attempt, j.queue, j.kind, j.args, j.priority, j.max_attempts, j.created_at INTO v_j
        FROM millrace.job j WHERE j.id = p_id ORDER BY j.ready_at DESC LIMIT 1;
    END IF;
    v_at := clock_timestamp();  -- a variable: history_bucket is inlined (see flush)
    INSERT INTO millrace.finished (bucket, id, attempt, state, queue, kind, args, priority, max_attempts, created_at,
                                  started_at, finished_at, error, owner)
    VALUES (millrace.history_bucket(4::smallint, v_at), p_id, v_j.attempt, 4, v_j.queue, v_j.kind, v_j.args,
            v_j.priority, v_j.max_attempts, v_j.created_at, NULL, v_at, 'cancelled before it ran', 0);
    RETURN 'cancelled';
END $function$;
COMMENT ON FUNCTION millrace.cancel(p_id bigint) IS
    'cancel asks that job p_id not run, or stop if it runs: a job waiting in a slot or the schedule is finished as cancelled; a running one gets a cancellation request its process polls. It reads history first (a finished job stays finished), then takes its queue''s claim lock and reads the job''s live rows under it, so that a claim not yet committed cannot hand the job to a worker after cancel finished it, and claims never wait for history''s lookups. A job still in the schedule is cancelled under the promote rounds'' lock (shared) instead: no claim can take it before a round moves it.';

CREATE OR REPLACE FUNCTION millrace.pause(p_queue text)
 RETURNS void
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
 SET jit TO 'off'
 SET plan_cache_mode TO 'auto'
AS $function$
BEGIN
    PERFORM millrace.check_job('pause', '{}', p_queue, 0, 1);
    INSERT INTO millrace.queue_state (queue, paused, running, rate, rate_per, per_key, per_key_by)
    SELECT p_queue, true, l.running, l.rate, l.rate_per, l.per_key, l.per_key_by
    FROM (SELECT NULL) x LEFT JOIN LATERAL (SELECT s.running, s.rate, s.rate_per, s.per_key, s.per_key_by FROM millrace.queue_state s WHERE s.queue = p_queue
                                            ORDER BY s.id DESC LIMIT 1) l ON true;
END $function$;
COMMENT ON FUNCTION millrace.pause(p_queue text) IS
    'pause stops every process claiming from p_queue (at their next claim); its jobs stay where they are, and rotation goes on. The queue''s limits stay.';

CREATE OR REPLACE FUNCTION millrace.resume(p_queue text)
 RETURNS void
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
 SET jit TO 'off'
 SET plan_cache_mode TO 'auto'
AS $function$
BEGIN
    PERFORM millrace.check_job('resume', '{}', p_queue, 0, 1);
    INSERT INTO millrace.queue_state (queue, paused, running, rate, rate_per, per_key, per_key_by)
    SELECT p_queue, false, l.running, l.rate, l.rate_per, l.per_key, l.per_key_by
    FROM (SELECT NULL) x LEFT JOIN LATERAL (SELECT s.running, s.rate, s.rate_per, s.per_key, s.per_key_by FROM millrace.queue_state s WHERE s.queue = p_queue
                                            ORDER BY s.id DESC LIMIT 1) l ON true;
    PERFORM pg_notify('millrace', p_queue);
END $function$;
COMMENT ON FUNCTION millrace.resume(p_queue text) IS
    'resume lets p_queue be claimed again and wakes its claimers. The queue''s limits stay.';

CREATE OR REPLACE FUNCTION millrace.rate_window(p_per interval)
 RETURNS interval
 LANGUAGE sql
 IMMUTABLE
AS $function$ SELECT p_per + least(p_per / 10, interval '1 second') $function$;
COMMENT ON FUNCTION millrace.rate_window(p_per interval) IS
    'rate_window is the window a rate limit of so many starts per p_per counts claims in: the period and a tenth of it, at most a second more, for the time a job takes from its claim to its start in a process (a start measured there stays within the rate).';

CREATE OR REPLACE FUNCTION millrace.set_limit(p_queue text, p_running integer DEFAULT NULL::integer, p_rate integer DEFAULT NULL::integer, p_per interval DEFAULT NULL::interval, p_per_key integer DEFAULT NULL::integer, p_key text[] DEFAULT NULL::text[], p_key_rate integer DEFAULT NULL::integer, p_key_per interval DEFAULT NULL::interval)
 RETURNS void
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
 SET jit TO 'off'
 SET plan_cache_mode TO 'auto'
AS $function$
DECLARE
    v_by text[];
BEGIN
    PERFORM millrace.check_job('set_limit', '{}', p_queue, 0, 1);
    IF p_running IS NOT NULL AND p_running NOT BETWEEN 1 AND 1000000 THEN
        RAISE EXCEPTION 'millrace: a running limit must be 1 to 1000000 (NULL: none), not %', p_running USING ERRCODE = '22023';
    END IF;
    IF (p_rate IS NULL) <> (p_per IS NULL) THEN
        RAISE EXCEPTION 'millrace: a rate limit needs both a number of starts and a period (or neither)' USING ERRCODE = '22023';
    END IF;
    IF p_rate IS NOT NULL AND (p_rate NOT BETWEEN 1 AND 1000000 OR p_per < interval '10 milliseconds' OR p_per > interval '1 day') THEN
        RAISE EXCEPTION 'millrace: a rate limit must be 1 to 1000000 starts per 10 ms to 1 day, not % per %', p_rate, p_per USING ERRCODE = '22023';
    END IF;
    IF p_per_key IS NOT NULL AND p_per_key NOT BETWEEN 1 AND 1000000 THEN
        RAISE EXCEPTION 'millrace: a per-key limit must be 1 to 1000000 (NULL: none), not %', p_per_key USING ERRCODE = '22023';
    END IF;
    IF (p_key_rate IS NULL) <> (p_key_per IS NULL) THEN
        RAISE EXCEPTION 'millrace: a per-key rate needs both a number of starts and a period (or neither)' USING ERRCODE = '22023';
    END IF;
    IF p_key_rate IS NOT NULL AND (p_key_rate NOT BETWEEN 1 AND 1000000 OR p_key_per < interval '10 milliseconds' OR p_key_per > interval '1 day') THEN
        RAISE EXCEPTION 'millrace: a per-key rate must be 1 to 1000000 starts per 10 ms to 1 day, not % per %', p_key_rate, p_key_per USING ERRCODE = '22023';
    END IF;
    IF p_per_key IS NULL AND p_key_rate IS NULL AND p_key IS NOT NULL THEN
        RAISE EXCEPTION 'millrace: a key needs a per-key limit or a per-key rate' USING ERRCODE = '22023';
    END IF;
    IF p_per_key IS NOT NULL OR p_key_rate IS NOT NULL THEN
        -- The key: 'kind', or a top-level args field ('args.F', or F).
        v_by := ARRAY(SELECT CASE WHEN b = 'kind' OR starts_with(b, 'args.') THEN b ELSE 'args.' || b END
                      FROM unnest(coalesce(p_key, ARRAY['kind'])) WITH ORDINALITY u(b, o) ORDER BY o);
        IF cardinality(v_by) NOT BETWEEN 1 AND 8 OR EXISTS (SELECT 1 FROM unnest(v_by) b WHERE b IS NULL OR b = 'args.' OR length(b) > 68) THEN
            RAISE EXCEPTION 'millrace: a key is 1 to 8 parts, each kind or a top-level args field name of 1 to 63 bytes, not %', p_key USING ERRCODE = '22023';
        END IF;
    END IF;
    INSERT INTO millrace.queue_state (queue, paused, running, rate, rate_per, per_key, per_key_by, key_rate, key_rate_per)
    VALUES (p_queue, coalesce((SELECT s.paused FROM millrace.queue_state s WHERE s.queue = p_queue ORDER BY s.id DESC LIMIT 1), false),
            p_running, p_rate, p_per, p_per_key, v_by, p_key_rate, p_key_per);
    -- Claimers held back by a lower limit try again.
    PERFORM pg_notify('millrace', p_queue);
END $function$;
COMMENT ON FUNCTION millrace.set_limit(p_queue text, p_running integer, p_rate integer, p_per interval, p_per_key integer, p_key text[], p_key_rate integer, p_key_per interval) IS
    'set_limit sets queue p_queue''s limits, replacing the ones it had: p_running, how many of its jobs may run at once across every process (1 to 1000000), p_rate starts per p_per (1 to 1000000 per 10 ms to 1 day) across every process, p_per_key, how many jobs of one key may run at once across every process (1 to 1000000), and p_key_rate starts of one key per p_key_per (as p_rate), the key being p_key''s parts: ''kind'' for the job''s kind, ''args.F'' (or F) for its top-level args field F as text (a missing field is the empty string; parts are joined by /), ''kind'' when NULL; NULL: none (then each process''s workers are the only bound). A job counts for p_running and p_per_key from its claim until it ends in its process, or until its process''s lease runs out; for p_rate and p_key_rate, at its claim (server clock: no more than p_rate claims'' jobs in any window of rate_window(p_per), no more than p_key_rate of one key in any window of rate_window(p_key_per)). A claim defers the jobs of a key at its limit or rate to the schedule (job_state says scheduled), paced at one per slot of the key for each time a job of the queue takes in the claiming process, and at most p_key_rate every rate_window(p_key_per), after the key''s deferred jobs, so that other keys'' jobs behind them are not held back. It takes effect at each process''s next claim; a lower limit than what runs now lets the running jobs finish and starts none until the queue is under it. The newest call wins; a pause keeps it.';

CREATE OR REPLACE FUNCTION millrace.job_key_parts(p_kind text, p_args jsonb, p_by text[])
 RETURNS text
 LANGUAGE sql
 IMMUTABLE PARALLEL SAFE
AS $function$
    SELECT string_agg(CASE WHEN b = 'kind' THEN p_kind ELSE coalesce(p_args ->> substr(b, 6), '') END, '/' ORDER BY o)
    FROM unnest(p_by) WITH ORDINALITY u(b, o)
$function$;
COMMENT ON FUNCTION millrace.job_key_parts(p_kind text, p_args jsonb, p_by text[]) IS
    'job_key_parts is job_key of a key of several parts (p_by): its parts as text, joined by /.';

CREATE OR REPLACE FUNCTION millrace.job_key(p_kind text, p_args jsonb, p_by text[])
 RETURNS text
 LANGUAGE sql
 IMMUTABLE PARALLEL SAFE
AS $function$
    -- One expression, no subquery: the planner inlines it into the
    -- caller's statement. A call per job planned its body each time
    -- (58,000 plans in 33 s of the mix with a per-key limit, 0.014 ms
    -- each); a key of several parts calls job_key_parts.
    SELECT CASE WHEN cardinality(p_by) = 1 THEN
                CASE WHEN p_by[1] = 'kind' THEN p_kind ELSE coalesce(p_args ->> substr(p_by[1], 6), '') END
           ELSE millrace.job_key_parts(p_kind, p_args, p_by) END
$function$;
COMMENT ON FUNCTION millrace.job_key(p_kind text, p_args jsonb, p_by text[]) IS
    'job_key is the key of a job of kind p_kind with args p_args under a per-key limit keyed by p_by (set_limit): its parts as text, joined by /; NULL when p_by is NULL.';

CREATE OR REPLACE FUNCTION millrace.key_held(p_queue text, p_key text, p_owner integer, OUT n bigint, OUT slots integer, OUT until timestamp with time zone)
 RETURNS record
 LANGUAGE sql
 STABLE
 SET search_path TO 'pg_catalog', 'pg_temp'
 SET jit TO 'off'
AS $function$
    SELECT coalesce(x.n, 0), least(coalesce(x.s, x.n, 0), coalesce(x.n, 0)), x.u
    FROM (SELECT 1) one
    LEFT JOIN LATERAL (
        SELECT y.n, y.s, y.u
        FROM (SELECT h.keys, h.n, h.slots, h.until FROM millrace.keyhold h
              WHERE h.queue = p_queue AND h.owner = p_owner ORDER BY h.id DESC LIMIT 1) h
        CROSS JOIN LATERAL unnest(h.keys, h.n, h.slots, h.until) y(k, n, s, u)
        WHERE y.k = p_key) x ON true
$function$;
COMMENT ON FUNCTION millrace.key_held(p_queue text, p_key text, p_owner integer, OUT n bigint, OUT slots integer, OUT until timestamp with time zone) IS
    'key_held is what process p_owner holds of key p_key of queue p_queue''s per-key limit, by its newest map (keyhold): n, the jobs its claims took that have not ended in it; slots, what counts against the limit: the least of n and its slots of the key (it runs no more at once); and where the key''s deferred jobs end by its claims (until).';

CREATE OR REPLACE FUNCTION millrace.keyhold_put(p_queue text, p_owner integer, p_keys text[], p_dn integer[], p_slots integer[], p_until timestamp with time zone[], p_clear boolean DEFAULT false)
 RETURNS void
 LANGUAGE plpgsql
 SET search_path TO 'pg_catalog', 'pg_temp'
 SET jit TO 'off'
 SET plan_cache_mode TO 'force_generic_plan'
AS $function$
-- PL/pgSQL for a plan cached for the session: a claim or a flush of a
-- queue with a per-key limit calls it once. One generic plan per
-- statement (plan_cache_mode): see claim.
DECLARE
    v_old  record;
    v_keys text[];         -- the new map: its keys (in order),
    v_n    int[];          -- the jobs held of each,
    v_s    int[];          -- the slots,
    v_u    timestamptz[];  -- and where each key's deferred jobs end
    v_i    int;            -- one key given: its place in the old map,
    v_z    int;            -- the first key of the old map holding nothing,
    v_nn   int;            -- and its new count,
    v_ss   int;            -- slots
    v_uu   timestamptz;    -- and end
BEGIN
    -- The process's lock of the queue's map, then its newest map: a claim
    -- and a flush of one process write it in turn, each adding to the
    -- one before (READ COMMITTED: the read's snapshot follows the lock).
    PERFORM pg_advisory_xact_lock(millrace.keys_space(), hashtext(p_queue || '/' || p_owner::text));
    SELECT h.keys, h.n, h.slots, h.until INTO v_old FROM millrace.keyhold h
    WHERE h.queue = p_queue AND h.owner = p_owner ORDER BY h.id DESC LIMIT 1;
    v_keys := coalesce(v_old.keys, '{}');
    v_n := coalesce(v_old.n, '{}');
    v_s := coalesce(v_old.slots, '{}');
    v_u := coalesce(v_old.until, '{}');
    v_i := array_position(v_keys, p_keys[1]);
    v_z := array_position(v_n, 0);
    IF NOT coalesce(p_clear, false) AND cardinality(p_keys) = 1
       AND (v_z IS NULL OR CASE WHEN v_z = v_i THEN array_position(v_n, 0, v_i + 1) IS NULL ELSE false END) THEN
        -- One key, and no other key of the map holding nothing (whose
        -- deferred jobs' end may have passed: the statement below drops
        -- those): the statement's arithmetic for that key alone, in
        -- variables (a claim or a flush of one job's key, most of them).
        -- The statement's set-up cost 0.036 ms a call against 0.004.
        v_nn := greatest(coalesce(v_n[v_i], 0) + coalesce(p_dn[1], 0), 0);
        v_ss := coalesce(p_slots[1], v_s[v_i]);
        v_uu := greatest(v_u[v_i], p_until[1]);
        IF v_nn > 0 OR v_uu > clock_timestamp() THEN
            IF v_i IS NULL THEN
                -- A new key, in its place by the statement's order.
                v_i := 1;
                WHILE v_i <= cardinality(v_keys) AND v_keys[v_i] < p_keys[1] LOOP
                    v_i := v_i + 1;
                END LOOP;
                v_keys := v_keys[:v_i - 1] || p_keys[1] || v_keys[v_i:];
                v_n := v_n[:v_i - 1] || v_nn || v_n[v_i:];
                v_s := v_s[:v_i - 1] || v_ss || v_s[v_i:];
                v_u := v_u[:v_i - 1] || v_uu || v_u[v_i:];
            ELSE
                v_n[v_i] := v_nn;
                v_s[v_i] := v_ss;
                v_u[v_i] := v_uu;
            END IF;
        ELSIF v_i IS NOT NULL THEN
            -- It holds nothing and waits for nothing: it leaves the map.
            v_keys := v_keys[:v_i - 1] || v_keys[v_i + 1:];
            v_n := v_n[:v_i - 1] || v_n[v_i + 1:];
            v_s := v_s[:v_i - 1] || v_s[v_i + 1:];
            v_u := v_u[:v_i - 1] || v_u[v_i + 1:];
        END IF;
    ELSE
        -- Each key: its jobs held (the old count, nothing with p_clear, plus
        -- p_dn, at least 0), its slots (p_slots', else the old) and the end of
        -- its deferred jobs (the later). A key holding nothing whose deferred
        -- jobs have ended leaves the map.
        -- Sorted once, in the subquery (a subquery with ORDER BY is not
        -- pulled up: the aggregate reads its rows in that order), and
        -- aggregated in one pass, so the four arrays stay parallel. An
        -- ORDER BY in each aggregate sorted the map four times (PostgreSQL
        -- 15 sorts each one's input on its own): 0.54 against 0.12 ms a
        -- call for a map of 90 keys and 30 changes.
        SELECT coalesce(array_agg(m.k), '{}'), coalesce(array_agg(m.n), '{}'),
               coalesce(array_agg(m.s), '{}'), coalesce(array_agg(m.u), '{}')
        INTO v_keys, v_n, v_s, v_u
        FROM (SELECT coalesce(c.k, o.k) AS k,
                     greatest(CASE WHEN p_clear THEN 0 ELSE coalesce(o.n, 0) END + coalesce(c.dn, 0), 0) AS n,
                     coalesce(c.s, o.s) AS s, greatest(o.u, c.u) AS u
              FROM unnest(v_old.keys, v_old.n, v_old.slots, v_old.until) o(k, n, s, u)
              FULL JOIN unnest(p_keys, p_dn, p_slots, p_until) c(k, dn, s, u) ON c.k = o.k
              ORDER BY 1) m
        WHERE m.n > 0 OR m.u > clock_timestamp();
    END IF;
    -- Written only when it changed (none yet and nothing to hold: no row).
    IF v_keys IS DISTINCT FROM coalesce(v_old.keys, '{}') OR v_n IS DISTINCT FROM coalesce(v_old.n, '{}')
       OR v_s IS DISTINCT FROM coalesce(v_old.slots, '{}') OR v_u IS DISTINCT FROM coalesce(v_old.until, '{}') THEN
        INSERT INTO millrace.keyhold (slot, queue, owner, keys, n, slots, until)
        VALUES (millrace.current_segment(), p_queue, p_owner, v_keys, v_n, v_s, v_u);
    END IF;
END $function$;
COMMENT ON FUNCTION millrace.keyhold_put(p_queue text, p_owner integer, p_keys text[], p_dn integer[], p_slots integer[], p_until timestamp with time zone[], p_clear boolean) IS
    'keyhold_put writes process p_owner''s new map of the keys it holds of queue p_queue''s per-key limit, under its lock of the queue (keys_space): its newest map (nothing with p_clear, keeping where each key''s deferred jobs end) with, for each key of p_keys (parallel arrays), p_dn more jobs held (negative: ended; at least 0), p_slots its slots (NULL: as they were) and p_until where its deferred jobs end (the later of the two). A key that holds nothing and whose deferred jobs have ended leaves the map. A row only when the map changed. Claims (jobs taken, slots, deferred jobs), flushes (jobs that ended) and release (everything) call it.';

CREATE OR REPLACE FUNCTION millrace.queue_limits()
 RETURNS TABLE(queue text, running_limit integer, running bigint, rate integer, rate_per interval, started bigint, per_key integer, per_key_by text[], keys_running bigint, keys_full bigint, deferred bigint, key_rate integer, key_rate_per interval)
 LANGUAGE sql
 STABLE SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
 SET jit TO 'off'
AS $function$
    WITH live AS MATERIALIZED (
        SELECT p.id FROM millrace.process p
        WHERE (SELECT b.until FROM millrace.heartbeat b WHERE b.process = p.id ORDER BY b.id DESC LIMIT 1) > clock_timestamp())
    SELECT q.queue, q.running, coalesce((
        SELECT sum(h.n) FROM live p
        CROSS JOIN LATERAL (SELECT x.n FROM millrace.hold x WHERE x.queue = q.queue AND x.owner = p.id ORDER BY x.id DESC LIMIT 1) h), 0),
        q.rate, q.rate_per,
        -- The window's claims from the running totals (claim's two probes;
        -- the statement's time, stable, bounds the index scan).
        CASE WHEN q.rate IS NOT NULL THEN coalesce(
            (SELECT h.total FROM millrace.hold h WHERE h.queue = q.queue AND h.took > 0 ORDER BY h.at DESC LIMIT 1)
            - (SELECT h.total - h.took FROM millrace.hold h
               WHERE h.queue = q.queue AND h.took > 0 AND h.at > statement_timestamp() - millrace.rate_window(q.rate_per)
               ORDER BY h.at LIMIT 1), 0) END,
        q.per_key, q.per_key_by, k.running, k.full,
        -- Jobs a per-key limit deferred that wait in the schedule.
        CASE WHEN q.per_key IS NOT NULL OR q.key_rate IS NOT NULL THEN (SELECT count(*) FROM millrace.sched s WHERE s.queue = q.queue AND s.last_error = 'deferred by its key''s limit') END,
        q.key_rate, q.key_rate_per
    FROM (SELECT DISTINCT ON (s.queue) s.queue, s.running, s.rate, s.rate_per, s.per_key, s.per_key_by, s.key_rate, s.key_rate_per
          FROM millrace.queue_state s ORDER BY s.queue, s.id DESC) q
    LEFT JOIN LATERAL (
        -- Keys whose slots the live processes hold (each one's newest map),
        -- and those at the limit.
        SELECT count(*) FILTER (WHERE y.n > 0) AS running, count(*) FILTER (WHERE y.n >= q.per_key) AS full
        FROM (SELECT x.k, sum(least(coalesce(x.s, x.n), x.n)) AS n
              FROM live p
              CROSS JOIN LATERAL (SELECT h.keys, h.n, h.slots FROM millrace.keyhold h
                                  WHERE h.queue = q.queue AND h.owner = p.id ORDER BY h.id DESC LIMIT 1) h
              CROSS JOIN LATERAL unnest(h.keys, h.n, h.slots) x(k, n, s)
              GROUP BY x.k) y
        WHERE q.per_key IS NOT NULL) k ON true
    WHERE q.running IS NOT NULL OR q.rate IS NOT NULL OR q.per_key IS NOT NULL OR q.key_rate IS NOT NULL
    ORDER BY q.queue
$function$;
COMMENT ON FUNCTION millrace.queue_limits() IS
    'queue_limits lists the queues with a limit: the running limit (NULL: none) and how many slots of it the live processes hold (as each one''s newest claim wrote them; each runs at most its slots at once: never fewer than run); the rate limit (rate starts per rate_per; NULL: none) and how many jobs the claims of its current window took (started); the per-key limit (per_key, keyed by per_key_by; NULL: none), how many keys have jobs running (keys_running) and how many are at the limit (keys_full), how many jobs the per-key limit or rate deferred wait in the schedule (deferred), and the per-key rate (key_rate starts of a key per key_rate_per, keyed by per_key_by; NULL: none).';

CREATE OR REPLACE FUNCTION millrace.key_limits(p_queue text, p_top integer DEFAULT 10)
 RETURNS TABLE(key text, running bigint, started bigint)
 LANGUAGE sql
 STABLE SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
 SET jit TO 'off'
AS $function$
    WITH q AS MATERIALIZED (
        SELECT s.key_rate_per FROM millrace.queue_state s WHERE s.queue = p_queue ORDER BY s.id DESC LIMIT 1),
    r AS (
        -- Slots held by the live processes (as key_held counts them, from
        -- each one's newest map: never fewer than run).
        SELECT x.k AS key, sum(least(coalesce(x.s, x.n), x.n)) AS n
        FROM millrace.process p
        CROSS JOIN LATERAL (SELECT h.keys, h.n, h.slots FROM millrace.keyhold h
                            WHERE h.queue = p_queue AND h.owner = p.id ORDER BY h.id DESC LIMIT 1) h
        CROSS JOIN LATERAL unnest(h.keys, h.n, h.slots) x(k, n, s)
        WHERE (SELECT b.until FROM millrace.heartbeat b WHERE b.process = p.id ORDER BY b.id DESC LIMIT 1) > clock_timestamp()
        GROUP BY x.k),
    w AS (
        -- Started in the key's rate window: the claims' running totals,
        -- as a claim reads them (the statement's time, stable).
        SELECT k.key, n.total - o.before AS n
        FROM (SELECT DISTINCT z.key FROM millrace.keyrate z, q
              WHERE z.queue = p_queue AND z.at > statement_timestamp() - millrace.rate_window(q.key_rate_per)) k
        CROSS JOIN q
        CROSS JOIN LATERAL (SELECT x.total FROM millrace.keyrate x WHERE x.queue = p_queue AND x.key = k.key ORDER BY x.at DESC LIMIT 1) n
        CROSS JOIN LATERAL (SELECT x.total - x.took AS before FROM millrace.keyrate x
                            WHERE x.queue = p_queue AND x.key = k.key AND x.at > statement_timestamp() - millrace.rate_window(q.key_rate_per)
                            ORDER BY x.at LIMIT 1) o)
    SELECT coalesce(r.key, w.key), coalesce(r.n, 0), w.n
    FROM r FULL JOIN w ON w.key = r.key
    WHERE coalesce(r.n, 0) > 0 OR w.n > 0
    ORDER BY 2 DESC, 3 DESC NULLS LAST, 1 LIMIT greatest(p_top, 0)
$function$;
COMMENT ON FUNCTION millrace.key_limits(p_queue text, p_top integer) IS
    'key_limits is the p_top keys of queue p_queue''s per-key limits with the most slots held by the live processes (running, key_held''s slots: never fewer than run), then the most started in the current window of the per-key rate (started: the jobs the claims of the window took of the key; NULL without a per-key rate).';

CREATE OR REPLACE FUNCTION millrace.cancel_space()
 RETURNS integer
 LANGUAGE sql
 IMMUTABLE
AS $function$ SELECT 1836412281 $function$;
COMMENT ON FUNCTION millrace.cancel_space() IS
    'cancel_space is the advisory lock space of cancellations (second key: job id modulo 2^31-1): cancels of one job run one at a time, while cancels of different jobs share their queue''s claim lock.';

CREATE OR REPLACE FUNCTION millrace.retry_space()
 RETURNS integer
 LANGUAGE sql
 IMMUTABLE
AS $function$ SELECT 1836412280 $function$;
COMMENT ON FUNCTION millrace.retry_space() IS
    'retry_space is the advisory lock space of retries (second key: job id modulo 2^31-1): retries of one job run one at a time.';

CREATE OR REPLACE FUNCTION millrace.retry(p_id bigint)
 RETURNS text
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
 SET jit TO 'off'
 SET plan_cache_mode TO 'auto'
AS $function$
DECLARE
    v_h millrace.finished;
    v_s smallint;
    v_id bigint;
BEGIN
    PERFORM millrace.need_read_committed('retry(...)');
    -- Retries of one job wait for each other, and each reads the ledger
    -- after the lock (a statement of its own: a snapshot taken after it).
    PERFORM pg_advisory_xact_lock(millrace.retry_space(), (p_id % 2147483647)::int);
    SELECT r.new_id INTO v_id FROM millrace.retried r WHERE r.job_id = p_id;
    IF FOUND THEN
        RETURN 'retried as job ' || v_id;
    END IF;
    v_s := millrace.final_state(p_id);
    IF v_s IS NULL THEN
        RETURN CASE WHEN millrace.pending(p_id) THEN 'not finished' ELSE 'unknown' END;
    END IF;
    IF v_s = 1 THEN
        RETURN 'completed';
    END IF;
    SELECT * INTO v_h FROM millrace.finished h WHERE h.id = p_id AND h.state IN (3, 4) LIMIT 1;
    SELECT i.id INTO v_id FROM millrace.insert_many(ARRAY[v_h.kind], ARRAY[v_h.args], ARRAY[v_h.queue], ARRAY[v_h.priority::int],
                                                    ARRAY[NULL::timestamptz], ARRAY[v_h.max_attempts]) i;
    INSERT INTO millrace.retried (job_id, new_id) VALUES (p_id, v_id);
    RETURN 'retried as job ' || v_id;
END $function$;
COMMENT ON FUNCTION millrace.retry(p_id bigint) IS
    'retry queues a discarded or cancelled job to run again now, as a new job (a new id: the finished one stays finished in history) with the same kind, queue, args, priority and max attempts: ''retried as job N'', ''not finished'' (it is still live), ''completed'' (it succeeded: nothing is done) or ''unknown''. It is idempotent: retries of one job are serialized by an advisory lock, each is recorded in millrace.retried, and a retry of a job already retried answers with the job it made (''retried as job N'' again) and makes none. The record outlives the job''s history (it is deleted after 33 days, see expire_history).';

CREATE OR REPLACE FUNCTION millrace.retried_as(p_id bigint)
 RETURNS bigint
 LANGUAGE sql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
 SET jit TO 'off'
AS $function$
    SELECT r.new_id FROM millrace.retried r WHERE r.job_id = p_id
$function$;
COMMENT ON FUNCTION millrace.retried_as(p_id bigint) IS
    'retried_as is the job that a retry of job p_id made (retry''s ''retried as job N''), or NULL when it was not retried: one probe of millrace.retried''s primary key, for readers (the dashboard, jobs show) whose role may not read the table.';
