-- millrace functions, history: finished attempts bucketed by the server's clock, bounded lookups of a job's state, counts and retention.
--
-- The current definition of every function lives once, in internal/schema/functions/;
-- Migrate applies these files with CREATE OR REPLACE after the versioned migrations,
-- in file-name order, in the same transaction. A signature change needs a migration
-- that drops the old function (docs/contributing.md).

CREATE OR REPLACE FUNCTION millrace.history_v6()
 RETURNS timestamp with time zone
 LANGUAGE plpgsql
 STABLE
 SET search_path TO 'pg_catalog', 'pg_temp'
 SET plan_cache_mode TO 'auto'
AS $function$
BEGIN
    RETURN (SELECT m.at FROM millrace.mark m WHERE m.name = 'history_v6');
END $function$;
COMMENT ON FUNCTION millrace.history_v6() IS
    'history_v6 is when migration 6 ran: history rows written before it were bucketed by the writer''s clock, so a job created before it is looked for in every bucket.';

CREATE OR REPLACE FUNCTION millrace.history_slack()
 RETURNS interval
 LANGUAGE sql
 IMMUTABLE
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$ SELECT interval '1 hour' $function$;
COMMENT ON FUNCTION millrace.history_slack() IS
    'history_slack widens a bucket range: a server clock that stepped back by up to this much between a job''s creation and its end.';

CREATE OR REPLACE FUNCTION millrace.pick(a anyarray, i bigint)
 RETURNS anyelement
 LANGUAGE sql
 IMMUTABLE
AS $function$ SELECT a[CASE WHEN cardinality(a) = 1 THEN 1 ELSE i END] $function$;
COMMENT ON FUNCTION millrace.pick(a anyarray, i bigint) IS
    'pick is element i of a, or its only element: an array of a completed row (millrace.completed) holds one value when every job of the row has it (the flush writes it so). Plain SQL without settings, so it is inlined.';

CREATE OR REPLACE FUNCTION millrace.id_block(p_id bigint)
 RETURNS bigint
 LANGUAGE sql
 IMMUTABLE
AS $function$ SELECT p_id / 32 $function$;
COMMENT ON FUNCTION millrace.id_block(p_id bigint) IS
    'id_block is the block of job id p_id: a row of millrace.completed holds jobs of one block (its blk), and a job is looked for there by its block. Plain SQL without settings, so it is inlined and the blk index is used.';

CREATE OR REPLACE FUNCTION millrace.history_bucket(p_state smallint, p_at timestamp with time zone)
 RETURNS smallint
 LANGUAGE sql
 IMMUTABLE
AS $function$
    -- The epoch as an interval since 1970: extract(epoch FROM timestamptz)
    -- is only STABLE (other fields depend on the time zone), and the
    -- planner inlines an IMMUTABLE function only when its body is too.
    SELECT CASE WHEN p_state = 1 THEN (floor(extract(epoch FROM p_at - '1970-01-01 00:00:00+00'::timestamptz) / 7200)::bigint % 36)::smallint
                ELSE (36 + floor(extract(epoch FROM p_at - '1970-01-01 00:00:00+00'::timestamptz) / 86400)::bigint % 32)::smallint END
$function$;
COMMENT ON FUNCTION millrace.history_bucket(p_state smallint, p_at timestamp with time zone) IS
    'history_bucket is the history partition of a row finished at p_at in state p_state: completed rows (state 1) in 36 two-hour buckets (0-35), the others in 32 one-day buckets (36-67), by the server''s clock.';

CREATE OR REPLACE FUNCTION millrace.history_buckets(p_from timestamp with time zone, p_to timestamp with time zone)
 RETURNS smallint[]
 LANGUAGE plpgsql
 IMMUTABLE
 SET search_path TO 'pg_catalog', 'pg_temp'
 SET plan_cache_mode TO 'auto'
AS $function$
-- Arithmetic, no statement: every lookup of a job's history, every cancel
-- and every unique insert asks (with generate_series and DISTINCT it cost
-- 160 us a call, 600 under load).
DECLARE
    v_lo   bigint;
    v_hi   bigint;
    v_seen boolean[] := array_fill(false, ARRAY[68], ARRAY[0]);
    v_out  smallint[] := '{}';
BEGIN
    IF p_from IS NULL OR p_to IS NULL OR NOT isfinite(p_from) OR NOT isfinite(p_to)
       OR greatest(p_from, p_to) - least(p_from, p_to) >= interval '32 days' THEN
        RETURN '{0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,18,19,20,21,22,23,24,25,26,27,28,29,30,31,32,33,34,35,36,37,38,39,40,41,42,43,44,45,46,47,48,49,50,51,52,53,54,55,56,57,58,59,60,61,62,63,64,65,66,67}'::smallint[];
    END IF;
    v_lo := floor(extract(epoch FROM least(p_from, p_to)) / 7200)::bigint;
    v_hi := least(floor(extract(epoch FROM greatest(p_from, p_to)) / 7200)::bigint, v_lo + 35);
    FOR g IN v_lo .. v_hi LOOP
        v_seen[((g % 36) + 36) % 36] := true;
    END LOOP;
    v_lo := floor(extract(epoch FROM least(p_from, p_to)) / 86400)::bigint;
    v_hi := floor(extract(epoch FROM greatest(p_from, p_to)) / 86400)::bigint;
    FOR g IN v_lo .. v_hi LOOP
        v_seen[36 + ((g % 32) + 32) % 32] := true;
    END LOOP;
    FOR b IN 0 .. 67 LOOP
        IF v_seen[b] THEN
            v_out := v_out || b::smallint;
        END IF;
    END LOOP;
    RETURN v_out;
END $function$;
COMMENT ON FUNCTION millrace.history_buckets(p_from timestamp with time zone, p_to timestamp with time zone) IS
    'history_buckets lists the history buckets that rows finished between p_from and p_to can be in: the two-hour buckets of completed rows (0-35) and the daily buckets of every other state (36-67), each ring at most once around. A range that is not finite, or longer than the daily ring, lists every bucket.';

CREATE OR REPLACE FUNCTION millrace.history_since(p_since timestamp with time zone)
 RETURNS smallint[]
 LANGUAGE plpgsql
 SET search_path TO 'pg_catalog', 'pg_temp'
 SET plan_cache_mode TO 'auto'
AS $function$
-- PL/pgSQL for a plan cached for the session (see history_buckets).
BEGIN
    IF p_since IS NULL OR p_since < millrace.history_v6() THEN
        RETURN millrace.history_buckets(NULL, NULL);
    END IF;
    RETURN millrace.history_buckets(least(p_since, clock_timestamp()) - millrace.history_slack(),
                                    clock_timestamp() + millrace.history_slack());
END $function$;
COMMENT ON FUNCTION millrace.history_since(p_since timestamp with time zone) IS
    'history_since lists the buckets that can hold the history of a job created at p_since: from then (or now, if p_since is later) until now, widened by history_slack; every bucket for a job created before version 6 or at an unknown time.';

CREATE OR REPLACE FUNCTION millrace.history_new(p_prev pg_snapshot, p_snap pg_snapshot)
 RETURNS TABLE(bucket smallint, queue text, state smallint, n bigint)
 LANGUAGE plpgsql
 SET search_path TO 'pg_catalog', 'pg_temp'
 SET jit TO 'off'
 SET plan_cache_mode TO 'force_generic_plan'
AS $function$
-- PL/pgSQL with a generic plan, made once per session: planning a
-- statement over every history bucket cost most of a call (the tally
-- asks every 10 s, and every count of queues), and a session would
-- otherwise plan its first five calls each.
#variable_conflict use_column
BEGIN
    RETURN QUERY
    SELECT x.bucket, x.queue, x.state, sum(x.n)::bigint FROM (
        SELECT h.bucket, h.queue, h.state, count(*) AS n FROM millrace.finished h
        WHERE ((h.txid >= pg_snapshot_xmax(p_prev) AND h.txid < pg_snapshot_xmax(p_snap))
               OR h.txid = ANY (ARRAY(SELECT pg_snapshot_xip(p_prev))))
          AND pg_visible_in_snapshot(h.txid, p_snap)
        GROUP BY h.bucket, h.queue, h.state
        UNION ALL
        -- completed jobs, a row of millrace.completed holding several
        SELECT c.bucket, c.queue, 1::smallint, sum(cardinality(c.ids)) FROM millrace.completed c
        WHERE ((c.txid >= pg_snapshot_xmax(p_prev) AND c.txid < pg_snapshot_xmax(p_snap))
               OR c.txid = ANY (ARRAY(SELECT pg_snapshot_xip(p_prev))))
          AND pg_visible_in_snapshot(c.txid, p_snap)
        GROUP BY c.bucket, c.queue) x
    GROUP BY x.bucket, x.queue, x.state;
END $function$;
COMMENT ON FUNCTION millrace.history_new(p_prev pg_snapshot, p_snap pg_snapshot) IS
    'history_new counts, by bucket, queue and state, the finished attempts whose transaction is visible in p_snap and not in p_prev: rows of millrace.finished, and the jobs of rows of millrace.completed.';

CREATE OR REPLACE FUNCTION millrace.final_state(p_id bigint)
 RETURNS smallint
 LANGUAGE plpgsql
 SET search_path TO 'pg_catalog', 'pg_temp'
 SET jit TO 'off'
 SET plan_cache_mode TO 'auto'
AS $function$
-- PL/pgSQL for a plan cached for the session: as an SQL function it was
-- planned over all 68 buckets at every call (1.4 ms a call; now 0.25).
DECLARE
    v_s smallint;
BEGIN
    SELECT h.state INTO v_s FROM millrace.finished h WHERE h.id = p_id AND h.state IN (1, 3, 4) LIMIT 1;
    IF v_s IS NULL AND (SELECT count(*) FROM millrace.completed c WHERE c.blk = millrace.id_block(p_id) AND p_id = ANY (c.ids)) > 0 THEN
        v_s := 1;  -- completed, in a row of its block (version 11)
    END IF;
    RETURN v_s;
END $function$;
COMMENT ON FUNCTION millrace.final_state(p_id bigint) IS
    'final_state is the finished state of job p_id (1 completed, 3 discarded, 4 cancelled) if history still holds it, else NULL; it reads every bucket (final_state(p_id, p_since) reads only those since the job''s creation). Functions that look at jobs are VOLATILE, so that each statement takes its snapshot after its locks: a statement that waited for a reclaim must not look with a snapshot from before it.';

CREATE OR REPLACE FUNCTION millrace.final_state(p_id bigint, p_since timestamp with time zone)
 RETURNS smallint
 LANGUAGE plpgsql
 SET search_path TO 'pg_catalog', 'pg_temp'
 SET jit TO 'off'
 SET plan_cache_mode TO 'auto'
AS $function$
-- The buckets are literals, so the statement is planned (and locks) only
-- those: a cached plan with the buckets as a parameter would lock all 68
-- at each call (TestLookupsReadOnlyTheirBuckets). Every bucket is read by
-- final_state(p_id), whose plan is cached.
DECLARE
    v_b smallint[] := millrace.history_since(p_since);
    v_s smallint;
BEGIN
    IF cardinality(v_b) >= 68 THEN
        RETURN millrace.final_state(p_id);
    END IF;
    -- A completed job is found by its block in millrace.completed (a
    -- count, never LIMIT 1: see docs/architecture.md, "Probes, not
    -- hashes"), in the completed buckets of the list; then a final row of
    -- finished. Two simple statements plan faster than one that asks both
    -- (62 and 105 us against 190 a call), and the first answers for most
    -- finished jobs.
    EXECUTE format('SELECT CASE WHEN count(*) > 0 THEN 1::smallint END FROM millrace.completed c'
                   ' WHERE c.bucket = ANY (%L::smallint[]) AND c.blk = millrace.id_block($1) AND $1 = ANY (c.ids)',
                   ARRAY(SELECT b FROM unnest(v_b) b WHERE b < 36))
    INTO v_s USING p_id;
    IF v_s IS NULL THEN
        EXECUTE format('SELECT h.state FROM millrace.finished h WHERE h.bucket = ANY (%L::smallint[]) AND h.id = $1'
                       ' AND h.state IN (1, 3, 4) LIMIT 1', v_b)
        INTO v_s USING p_id;
    END IF;
    RETURN v_s;
END $function$;
COMMENT ON FUNCTION millrace.final_state(p_id bigint, p_since timestamp with time zone) IS
    'final_state(p_id, p_since) is final_state(p_id) for a job created at p_since: only the buckets history_since lists are planned and read (every one when p_since is NULL).';

CREATE OR REPLACE FUNCTION millrace.final_attempt(p_id bigint, p_since timestamp with time zone, OUT state smallint, OUT started_at timestamp with time zone)
 RETURNS record
 LANGUAGE plpgsql
 SET search_path TO 'pg_catalog', 'pg_temp'
 SET jit TO 'off'
 SET plan_cache_mode TO 'auto'
AS $function$
-- final_state(p_id, p_since) with the start of the final attempt, in the
-- same probe: the buckets are literals (see final_state), and a job
-- created at an unknown time or before version 6 is looked for in every
-- bucket.
#variable_conflict use_column
DECLARE
    v_b smallint[] := millrace.history_since(p_since);
BEGIN
    IF cardinality(v_b) >= 68 THEN
        SELECT h.state, coalesce(h.started_at, h.finished_at) INTO state, started_at
        FROM millrace.finished h WHERE h.id = p_id AND h.state IN (1, 3, 4) LIMIT 1;
        IF state IS NULL THEN
            SELECT 1::smallint, max(coalesce(c.started_at[k], c.finished_at[k])) INTO state, started_at
            FROM millrace.completed c CROSS JOIN LATERAL array_position(c.ids, p_id) k
            WHERE c.blk = millrace.id_block(p_id) AND k IS NOT NULL
            HAVING count(*) > 0;
        END IF;
        RETURN;
    END IF;
    -- A completed job in a row of its block (version 11; an aggregate,
    -- never LIMIT 1: see final_state), else a final row of finished: two
    -- simple statements, as in final_state.
    EXECUTE format('SELECT 1::smallint, max(coalesce(c.started_at[k], c.finished_at[k])) FROM millrace.completed c'
                   ' CROSS JOIN LATERAL array_position(c.ids, $1) k'
                   ' WHERE c.bucket = ANY (%L::smallint[]) AND c.blk = millrace.id_block($1) AND k IS NOT NULL HAVING count(*) > 0',
                   ARRAY(SELECT b FROM unnest(v_b) b WHERE b < 36))
    INTO state, started_at USING p_id;
    IF state IS NULL THEN
        EXECUTE format('SELECT h.state, coalesce(h.started_at, h.finished_at) FROM millrace.finished h WHERE h.bucket = ANY (%L::smallint[])'
                       ' AND h.id = $1 AND h.state IN (1, 3, 4) LIMIT 1', v_b)
        INTO state, started_at USING p_id;
    END IF;
END $function$;
COMMENT ON FUNCTION millrace.final_attempt(p_id bigint, p_since timestamp with time zone, OUT state smallint, OUT started_at timestamp with time zone) IS
    'final_attempt(p_id, p_since) is final_state(p_id, p_since) and when that final attempt started (when it finished, for one that never started: a job cancelled before it ran), as millrace.history shows it; both NULL when history holds no final attempt. Only the buckets history_since lists are planned and read.';

CREATE OR REPLACE FUNCTION millrace.job_history(p_id bigint)
 RETURNS SETOF millrace.history
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
 SET jit TO 'off'
 SET plan_cache_mode TO 'auto'
AS $function$
-- The view filtered by id reads every row of millrace.completed (the
-- filter cannot reach the block index through the rows' arrays); this
-- reads the id index of finished and the block index of completed.
BEGIN
    RETURN QUERY
    SELECT h.id, h.attempt, (ARRAY['completed', 'failed', 'discarded', 'cancelled', 'snoozed'])[h.state], h.queue, h.kind,
           h.args, h.priority, h.max_attempts, h.created_at, h.started_at, h.finished_at, h.error, h.owner
    FROM millrace.finished h WHERE h.id = p_id
    UNION ALL
    SELECT p_id, millrace.pick(c.attempt, k), 'completed', c.queue, millrace.pick(c.kind, k), NULL::jsonb,
           millrace.pick(c.priority, k), millrace.pick(c.max_attempts, k), c.created_at[k], c.started_at[k], c.finished_at[k],
           NULL::text, c.owner
    FROM millrace.completed c CROSS JOIN LATERAL array_position(c.ids, p_id) k
    WHERE c.blk = millrace.id_block(p_id) AND k IS NOT NULL;
END $function$;
COMMENT ON FUNCTION millrace.job_history(p_id bigint) IS
    'job_history is job p_id''s rows of millrace.history (its finished attempts, while history keeps them), read by the job''s id: the view filtered by id reads every completed row.';

CREATE OR REPLACE FUNCTION millrace.completed_since(p_since timestamp with time zone)
 RETURNS TABLE(queue text, n bigint)
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
 SET jit TO 'off'
 SET plan_cache_mode TO 'auto'
AS $function$
-- By the time indexes, in the buckets the window can be in: the view
-- filtered by finished_at reads every completed row.
#variable_conflict use_column
DECLARE
    v_at timestamptz := clock_timestamp();
    v_b  smallint[] := millrace.history_buckets(least(p_since, v_at) - millrace.history_slack(), v_at + millrace.history_slack());
BEGIN
    RETURN QUERY
    SELECT x.queue, sum(x.n)::bigint FROM (
        SELECT h.queue, count(*) AS n FROM millrace.finished h
        WHERE h.bucket = ANY (v_b) AND h.state = 1 AND h.finished_at > p_since
        GROUP BY h.queue
        UNION ALL
        SELECT c.queue, sum((SELECT count(*) FROM unnest(c.finished_at) f WHERE f > p_since)) FROM millrace.completed c
        WHERE c.bucket = ANY (v_b) AND c.at > p_since
        GROUP BY c.queue) x
    GROUP BY x.queue;
END $function$;
COMMENT ON FUNCTION millrace.completed_since(p_since timestamp with time zone) IS
    'completed_since counts, by queue, the jobs that completed after p_since (server clock), from history.';

CREATE OR REPLACE FUNCTION millrace.live_since(p_id bigint)
 RETURNS timestamp with time zone
 LANGUAGE plpgsql
 SET search_path TO 'pg_catalog', 'pg_temp'
 SET jit TO 'off'
 SET plan_cache_mode TO 'auto'
AS $function$
-- PL/pgSQL for a plan cached for the session (see history_buckets).
BEGIN
    RETURN coalesce((SELECT j.created_at FROM millrace.job j WHERE j.id = p_id LIMIT 1),
                    (SELECT s.created_at FROM millrace.sched s WHERE s.id = p_id LIMIT 1));
END $function$;
COMMENT ON FUNCTION millrace.live_since(p_id bigint) IS
    'live_since is when live job p_id was created, from its newest job or schedule row; NULL when it has none (it finished, or never existed).';

CREATE OR REPLACE FUNCTION millrace.due_shown(p_at timestamp with time zone)
 RETURNS timestamp with time zone
 LANGUAGE sql
 IMMUTABLE
AS $function$
    SELECT CASE WHEN p_at < '0001-01-01 00:00:00+00'::timestamptz THEN '0001-01-01 00:00:00+00'::timestamptz
                WHEN p_at >= '10000-01-01 00:00:00+00'::timestamptz THEN '9999-12-31 23:59:59.999999+00'::timestamptz
                ELSE p_at END
$function$;
COMMENT ON FUNCTION millrace.due_shown(p_at timestamp with time zone) IS
    'due_shown is a due time as the read surface shows it: within years 1 to 9999, so that every client can scan it (a row written before version 7 with ''infinity'' made `millrace jobs list` fail). Inlined: no SET clause.';

CREATE OR REPLACE FUNCTION millrace.live_job(p_id bigint)
 RETURNS TABLE(queue text, kind text, args jsonb, priority smallint, attempt integer, max_attempts integer, created_at timestamp with time zone, run_at timestamp with time zone)
 LANGUAGE sql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
 SET jit TO 'off'
AS $function$
    SELECT x.queue, x.kind, x.args, x.priority, x.attempt, x.max_attempts, x.created_at, x.run_at FROM (
        (SELECT s.queue, s.kind, s.args, s.priority, s.attempt, s.max_attempts, s.created_at, millrace.due_shown(s.due_at) AS run_at, 1 AS o
         FROM (SELECT * FROM millrace.sched s WHERE s.id = p_id OFFSET 0) s  -- by id first (see cancel)
         WHERE millrace.job_state(p_id) = 'scheduled' ORDER BY s.due_at DESC LIMIT 1)
        UNION ALL
        (SELECT j.queue, j.kind, j.args, j.priority, j.attempt, j.max_attempts, j.created_at, NULL, 2
         FROM millrace.job j WHERE j.id = p_id ORDER BY j.ready_at DESC LIMIT 1)) x
    ORDER BY x.o LIMIT 1
$function$;
COMMENT ON FUNCTION millrace.live_job(p_id bigint) IS
    'live_job is the current row of live job p_id: its newest job row, or its schedule row (run_at set) when it waits in the schedule.';

CREATE OR REPLACE FUNCTION millrace.live_keys()
 RETURNS TABLE(id bigint, queue text, priority smallint, txid xid8, state text, created_at timestamp with time zone, run_at timestamp with time zone, tick_id bigint, owner integer)
 LANGUAGE plpgsql
 SET search_path TO 'pg_catalog', 'pg_temp'
 SET jit TO 'off'
 SET work_mem TO '64MB'
 SET plan_cache_mode TO 'auto'
AS $function$
-- PL/pgSQL for a plan cached for the session (the dashboard counts it
-- every second). Nothing here reads a payload: the counts need keys, and
-- live_jobs fetches the rows of the keys it lists.
--
-- VOLATILE, not STABLE: a STABLE function reads with its caller's
-- snapshot, taken before this statement locks the ring's partitions; a
-- reclaim that commits while the read waits for those locks has then
-- truncated rows the read looks for and copied them where its snapshot
-- cannot see them (the newest promote round went, and every job of the
-- schedule showed as scheduled). A VOLATILE function's statement takes its
-- snapshot after its locks (ring_unmoved checks the other isolation
-- levels).
#variable_conflict use_column
BEGIN
    RETURN QUERY
    -- Each lane with a job row (a skip scan of job_lane) and its newest
    -- tick (the lane's frontier). A job row the frontier has not claimed is
    -- either not visible in its snapshot (txid at or above its xmax, or one
    -- of its in-flight xids) or, when the frontier stopped at a cap (more),
    -- in its range above the key it stopped at. So the read is a range of
    -- keys above xmax (or above that key) plus one index probe per
    -- in-flight xid: proportional to what waits, not to the rows below a
    -- pinned horizon.
    WITH RECURSIVE lane AS (
        (SELECT j.queue, j.priority FROM millrace.job j ORDER BY j.queue, j.priority LIMIT 1)
        UNION ALL
        SELECT n.queue, n.priority FROM lane l CROSS JOIN LATERAL (
            SELECT j.queue, j.priority FROM millrace.job j
            WHERE (j.queue, j.priority) > (l.queue, l.priority)
            ORDER BY j.queue, j.priority LIMIT 1) n),
    f AS MATERIALIZED (
        SELECT l.queue, l.priority, t.prev_snap, t.snap, t.more, t.upto_txid, t.upto_id,
               CASE WHEN t.snap IS NULL THEN '0'::xid8 WHEN t.more THEN t.upto_txid
                    ELSE pg_snapshot_xmax(t.snap) END AS lo,
               CASE WHEN t.more THEN t.upto_id ELSE -9223372036854775808 END AS lo_id
        FROM lane l LEFT JOIN LATERAL (
            SELECT x.prev_snap, x.snap, x.more, x.upto_txid, x.upto_id FROM millrace.tick x
            WHERE x.queue = l.queue AND x.priority = l.priority ORDER BY x.tick_id DESC LIMIT 1) t ON true),
    running AS MATERIALIZED (
        SELECT b.id, o.queue, b.priority, b.txid,
               CASE WHEN o.owner = 0 THEN 'available' ELSE 'running' END AS state,  -- owner 0: released
               b.created_at, NULL::timestamptz AS run_at, o.tick_id, o.owner
        FROM millrace.open_batches() o CROSS JOIN LATERAL millrace.batch_keys(o.tick_id) b),
    waiting AS MATERIALIZED (
        SELECT w.id, f.queue, f.priority, w.txid, w.created_at FROM f CROSS JOIN LATERAL (
            SELECT j.id, j.txid, j.created_at FROM millrace.job j
            WHERE j.queue = f.queue AND j.priority = f.priority AND (j.txid, j.id) > (f.lo, f.lo_id)
              AND (f.snap IS NULL OR NOT pg_visible_in_snapshot(j.txid, f.snap)
                   OR (f.more AND NOT pg_visible_in_snapshot(j.txid, f.prev_snap)
                       AND (j.txid, j.id) > (f.upto_txid, f.upto_id)))
            UNION ALL
            SELECT j.id, j.txid, j.created_at FROM pg_snapshot_xip(f.snap) x(txid)
            CROSS JOIN LATERAL (SELECT j.id, j.txid, j.created_at FROM millrace.job j  -- a probe per xid
                                WHERE j.queue = f.queue AND j.priority = f.priority AND j.txid = x.txid
                                OFFSET 0) j  -- kept a subquery: not a hash join over the lane
            WHERE x.txid < f.lo) w),
    -- Cancellations, hashed once: one pass over a table that holds a
    -- ring's cancel requests, not four index probes per waiting job.
    cx AS MATERIALIZED (SELECT DISTINCT c.job_id FROM millrace.cancel c),
    lastp AS (SELECT p.upto, p.snap FROM millrace.promote p ORDER BY p.round DESC LIMIT 1)
    SELECT DISTINCT ON (w.id) w.id, w.queue, w.priority, w.txid, 'available', w.created_at,
           NULL::timestamptz, NULL::bigint, NULL::int
    FROM waiting w
    WHERE NOT EXISTS (SELECT 1 FROM running r WHERE r.id = w.id)
      AND NOT EXISTS (SELECT 1 FROM cx WHERE cx.job_id = w.id)  -- cancelled before it ran
    UNION ALL
    SELECT * FROM running
    UNION ALL
    SELECT s.id, s.queue, s.priority, s.txid, 'scheduled', s.created_at, millrace.due_shown(s.due_at), NULL, NULL
    FROM millrace.sched s LEFT JOIN lastp ON true
    WHERE NOT (coalesce(pg_visible_in_snapshot(s.txid, lastp.snap), false) AND s.due_at <= lastp.upto)
      AND NOT EXISTS (SELECT 1 FROM cx WHERE cx.job_id = s.id);
    PERFORM millrace.ring_unmoved();  -- after the locks of the statement above
END $function$;
COMMENT ON FUNCTION millrace.live_keys() IS
    'live_keys is the key of every job not yet finished and its state (available, running, scheduled): a job row''s (queue, priority, txid, id), a schedule row''s id, txid and due time. It reads no payload; live_jobs and the counts are built on it.';

CREATE OR REPLACE FUNCTION millrace.live_jobs()
 RETURNS TABLE(id bigint, queue text, kind text, args jsonb, priority smallint, attempt integer, max_attempts integer, created_at timestamp with time zone, state text, run_at timestamp with time zone, tick_id bigint, owner integer)
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
 SET jit TO 'off'
 SET plan_cache_mode TO 'auto'
AS $function$
-- PL/pgSQL for a plan cached for the session.
#variable_conflict use_column
BEGIN
    RETURN QUERY
    SELECT k.id, r.queue, r.kind, r.args, r.priority, r.attempt, r.max_attempts, r.created_at, k.state, k.run_at,
           k.tick_id, k.owner
    FROM millrace.live_keys() k CROSS JOIN LATERAL (
        (SELECT j.queue, j.kind, j.args, j.priority, j.attempt, j.max_attempts, j.created_at FROM millrace.job j
         WHERE k.state <> 'scheduled' AND j.queue = k.queue AND j.priority = k.priority AND j.txid = k.txid AND j.id = k.id
         LIMIT 1)
        UNION ALL
        (SELECT s.queue, s.kind, s.args, s.priority, s.attempt, s.max_attempts, s.created_at FROM millrace.sched s
         WHERE k.state = 'scheduled' AND s.id = k.id AND s.txid = k.txid AND millrace.due_shown(s.due_at) = k.run_at
         LIMIT 1)) r;
END $function$;
COMMENT ON FUNCTION millrace.live_jobs() IS
    'live_jobs lists every job not yet finished (live_keys), with its row: its newest job row, or its schedule row when it waits in the schedule.';

CREATE OR REPLACE FUNCTION millrace.live_state(p_id bigint)
 RETURNS text
 LANGUAGE plpgsql
 SET search_path TO 'pg_catalog', 'pg_temp'
 SET jit TO 'off'
 SET plan_cache_mode TO 'auto'
AS $function$
DECLARE
    v_j millrace.job;
    v_f record;
BEGIN
    IF EXISTS (SELECT 1 FROM millrace.sched s
               LEFT JOIN LATERAL (SELECT p.upto, p.snap FROM millrace.promote p ORDER BY p.round DESC LIMIT 1) lp ON true
               WHERE s.id = p_id AND NOT (coalesce(pg_visible_in_snapshot(s.txid, lp.snap), false) AND s.due_at <= lp.upto)) THEN
        PERFORM millrace.ring_unmoved();  -- the statement above locked a partition of every slot
        RETURN 'scheduled';
    END IF;
    PERFORM millrace.ring_unmoved();
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
END $function$;
COMMENT ON FUNCTION millrace.live_state(p_id bigint) IS
    'live_state is what the live rows of job p_id say, history aside: scheduled (a schedule row not yet promoted), available (its newest job row not yet claimed), running (claimed), or NULL (no live row). A finished job''s rows may still be live until their slot is reclaimed: job_state looks at history first.';

CREATE OR REPLACE FUNCTION millrace.job_state(p_id bigint)
 RETURNS text
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
 SET jit TO 'off'
 SET plan_cache_mode TO 'auto'
AS $function$
DECLARE
    -- A live job's job or schedule row says when it was created; a job with
    -- neither finished (or never existed), and every bucket is probed.
    v_s smallint := millrace.final_state(p_id, millrace.live_since(p_id));
BEGIN
    IF v_s IS NOT NULL THEN
        RETURN (ARRAY['completed', 'failed', 'discarded', 'cancelled', 'snoozed'])[v_s];
    END IF;
    RETURN millrace.live_state(p_id);
END $function$;
COMMENT ON FUNCTION millrace.job_state(p_id bigint) IS
    'job_state is where job p_id stands: ''completed'', ''discarded'' or ''cancelled'' (finished, while history holds it), ''scheduled'' (due later, or waiting for a retry or a snooze), ''available'' (ready, not yet claimed), ''running'' (claimed, no outcome yet), or NULL (unknown). It costs a few index probes.';

CREATE OR REPLACE FUNCTION millrace.live_counts()
 RETURNS TABLE(queue text, available bigint, running bigint, scheduled bigint, oldest_available timestamp with time zone, paused boolean)
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
 SET jit TO 'off'
 SET plan_cache_mode TO 'auto'
AS $function$
-- PL/pgSQL for a plan cached for the session: the dashboard reads it every
-- second.
#variable_conflict use_column
BEGIN
    RETURN QUERY
    WITH c AS (SELECT l.queue,
                      count(*) FILTER (WHERE l.state = 'available') AS available,
                      count(*) FILTER (WHERE l.state = 'running') AS running,
                      count(*) FILTER (WHERE l.state = 'scheduled') AS scheduled,
                      min(l.created_at) FILTER (WHERE l.state = 'available') AS oldest
               FROM millrace.live_keys() l GROUP BY l.queue),
    qs AS (SELECT c.queue FROM c UNION SELECT DISTINCT s.queue FROM millrace.queue_state s)
    SELECT q.queue, coalesce(c.available, 0), coalesce(c.running, 0), coalesce(c.scheduled, 0), c.oldest,
           millrace.queue_paused(q.queue)
    FROM qs q LEFT JOIN c ON c.queue = q.queue
    ORDER BY q.queue;
END $function$;
COMMENT ON FUNCTION millrace.live_counts() IS
    'live_counts is the number of live jobs per queue and state (available, running, scheduled; one read of live_keys, whose cost follows what waits and runs and which reads no payload), the creation time of the oldest available job, and whether the queue is paused: queue_counts without history''s counts, for a reader that polls (the dashboard reads it every second, and queue_counts every ten).';

CREATE OR REPLACE FUNCTION millrace.queue_counts()
 RETURNS TABLE(queue text, available bigint, running bigint, scheduled bigint, discarded bigint, paused boolean, completed bigint, oldest_available timestamp with time zone, cancelled bigint)
 LANGUAGE sql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
 SET jit TO 'off'
AS $function$
    WITH live AS MATERIALIZED (SELECT x.queue, x.available, x.running, x.scheduled, x.oldest_available FROM millrace.live_counts() x),
    lastr AS (SELECT r.snap FROM millrace.tally_round r ORDER BY r.round DESC LIMIT 1),
    counted AS (
        SELECT t.queue, t.state, t.n FROM millrace.tally t WHERE t.state IN (1, 3, 4)
        UNION ALL
        SELECT x.queue, x.state, x.n FROM lastr CROSS JOIN LATERAL millrace.history_new(lastr.snap, pg_current_snapshot()) x
        WHERE x.state IN (1, 3, 4)),
    hist AS MATERIALIZED (
        SELECT c.queue, coalesce(sum(c.n) FILTER (WHERE c.state = 3), 0)::bigint AS discarded,
               coalesce(sum(c.n) FILTER (WHERE c.state = 1), 0)::bigint AS completed,
               coalesce(sum(c.n) FILTER (WHERE c.state = 4), 0)::bigint AS cancelled
        FROM counted c GROUP BY c.queue),
    qs AS (SELECT l.queue FROM live l UNION SELECT h.queue FROM hist h)
    SELECT q.queue,
           coalesce((SELECT l.available FROM live l WHERE l.queue = q.queue), 0),
           coalesce((SELECT l.running FROM live l WHERE l.queue = q.queue), 0),
           coalesce((SELECT l.scheduled FROM live l WHERE l.queue = q.queue), 0),
           coalesce((SELECT h.discarded FROM hist h WHERE h.queue = q.queue), 0),
           millrace.queue_paused(q.queue),
           coalesce((SELECT h.completed FROM hist h WHERE h.queue = q.queue), 0),
           (SELECT l.oldest_available FROM live l WHERE l.queue = q.queue),
           coalesce((SELECT h.cancelled FROM hist h WHERE h.queue = q.queue), 0)
    FROM qs q ORDER BY q.queue
$function$;
COMMENT ON FUNCTION millrace.queue_counts() IS
    'queue_counts is the number of jobs per queue and state: live ones (live_counts), discarded, completed and cancelled ones still in history (the tally, plus the rows written since its newest round: the same read for the three), whether the queue is paused, and the creation time of its oldest available job. Nothing is counted in a row.';

CREATE OR REPLACE FUNCTION millrace.activity(p_since timestamp with time zone)
 RETURNS TABLE(at timestamp with time zone, since timestamp with time zone, completed bigint, failed bigint, discarded bigint, cancelled bigint, snoozed bigint, wait_p50_ms double precision, wait_p95_ms double precision, run_p50_ms double precision, run_p95_ms double precision)
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
 SET jit TO 'off'
 SET enable_sort TO 'off'
 SET plan_cache_mode TO 'auto'
AS $function$
-- The window's bounds are parameters, so the planner takes them for a
-- range (a narrow one) and reads the finished_at index: written with
-- clock_timestamp() in the query, each bound was guessed to keep a third
-- of the rows, and every bucket of history was read whole at each call
-- (the dashboard asks every second). enable_sort off: the newest 1,000
-- are read backwards along the index (1,000 rows, 2.8 ms), not all the
-- window's rows sorted for the top 1,000 (11,000 rows, 14.7 ms), which the
-- buckets' stale estimates made look cheaper.
#variable_conflict use_column
DECLARE
    v_at    timestamptz := clock_timestamp();
    v_since timestamptz := coalesce(p_since, v_at - interval '1 second');
    v_b     smallint[] := millrace.history_buckets(least(v_since, v_at) - millrace.history_slack(),
                                                   v_at + millrace.history_slack());
BEGIN
    RETURN QUERY
    WITH w AS MATERIALIZED (
        -- The newest completed jobs of the window in millrace.completed
        -- (version 11), from its newest 1,000 rows: a row is written after
        -- every job of it finished, so the rows written after the window
        -- began hold every job that finished in it, read by the rows' time
        -- index (newest first).
        SELECT u.f AS finished_at, u.st AS started_at, u.c AS created_at, millrace.pick(x.attempt, u.i) AS attempt
        FROM (SELECT c.attempt, c.finished_at, c.started_at, c.created_at FROM millrace.completed c
              WHERE c.bucket = ANY (v_b) AND c.at > v_since ORDER BY c.at DESC LIMIT 1000) x
        CROSS JOIN LATERAL unnest(x.finished_at, x.started_at, x.created_at) WITH ORDINALITY AS u(f, st, c, i)
        WHERE u.f > v_since AND u.f <= v_at)
    SELECT v_at, v_since,
           c.completed + coalesce((SELECT sum((SELECT count(*) FROM unnest(x.finished_at) f WHERE f > v_since AND f <= v_at))
                                   FROM millrace.completed x WHERE x.bucket = ANY (v_b) AND x.at > v_since), 0)::bigint,
           c.failed, c.discarded, c.cancelled, c.snoozed,
           coalesce(p.wait_p50, 0)::float8, coalesce(p.wait_p95, 0)::float8,
           coalesce(p.run_p50, 0)::float8, coalesce(p.run_p95, 0)::float8
    FROM (SELECT count(*) FILTER (WHERE h.state = 1) AS completed, count(*) FILTER (WHERE h.state = 2) AS failed,
                 count(*) FILTER (WHERE h.state = 3) AS discarded, count(*) FILTER (WHERE h.state = 4) AS cancelled,
                 count(*) FILTER (WHERE h.state = 5) AS snoozed
          FROM millrace.finished h
          WHERE h.bucket = ANY (v_b) AND h.finished_at > v_since AND h.finished_at <= v_at) c,
         -- The percentiles of the newest 1,000 attempts that completed or
         -- failed in the window (all of them, below that): at full speed
         -- sorting every attempt of the second four times was three
         -- quarters of the read.
         (SELECT percentile_cont(0.5) WITHIN GROUP (ORDER BY 1000 * extract(epoch FROM x.started_at - x.created_at))
                     FILTER (WHERE x.attempt <= 1) AS wait_p50,
                 percentile_cont(0.95) WITHIN GROUP (ORDER BY 1000 * extract(epoch FROM x.started_at - x.created_at))
                     FILTER (WHERE x.attempt <= 1) AS wait_p95,
                 percentile_cont(0.5) WITHIN GROUP (ORDER BY 1000 * extract(epoch FROM x.finished_at - x.started_at)) AS run_p50,
                 percentile_cont(0.95) WITHIN GROUP (ORDER BY 1000 * extract(epoch FROM x.finished_at - x.started_at)) AS run_p95
          FROM (SELECT y.* FROM (
                    (SELECT h.attempt, h.created_at, h.started_at, h.finished_at FROM millrace.finished h
                     WHERE h.bucket = ANY (v_b) AND h.finished_at > v_since AND h.finished_at <= v_at AND h.state IN (1, 2)
                     ORDER BY h.finished_at DESC LIMIT 1000)
                    UNION ALL
                    (SELECT w.attempt, w.created_at, w.started_at, w.finished_at FROM w ORDER BY w.finished_at DESC LIMIT 1000)) y
                ORDER BY y.finished_at DESC LIMIT 1000) x) p;
END $function$;
COMMENT ON FUNCTION millrace.activity(p_since timestamp with time zone) IS
    'activity is the attempts finished after p_since (NULL: in the last second) until now by the server''s clock, by outcome, with the percentiles of the first attempts'' wait (from creation to start) and of the run time of those that completed or failed (the newest 1,000 of them in the window): the dashboard''s sample. It reads the finished_at index of millrace.finished and the time index of millrace.completed, in the buckets the window can be in.';

CREATE OR REPLACE FUNCTION millrace.setting_value(p_name text)
 RETURNS text
 LANGUAGE sql
 STABLE
 SET search_path TO 'pg_catalog', 'pg_temp'
 SET jit TO 'off'
AS $function$
    SELECT s.value FROM millrace.setting s WHERE s.name = p_name ORDER BY s.id DESC LIMIT 1
$function$;
COMMENT ON FUNCTION millrace.setting_value(p_name text) IS
    'setting_value is the newest value of setting p_name (NULL when it was never set): settings are appended, the newest wins.';

CREATE OR REPLACE FUNCTION millrace.retention(OUT completed interval, OUT other interval)
 RETURNS record
 LANGUAGE sql
 STABLE SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
 SET jit TO 'off'
AS $function$
    SELECT coalesce(millrace.setting_value('retention.completed')::interval, interval '24 hours'),
           coalesce(millrace.setting_value('retention.other')::interval, interval '7 days')
$function$;
COMMENT ON FUNCTION millrace.retention(OUT completed interval, OUT other interval) IS
    'retention is how long history keeps completed jobs and every other finished attempt: the administrator''s setting (set_retention), else 24 hours and 7 days.';

CREATE OR REPLACE FUNCTION millrace.set_retention(p_completed interval, p_other interval, OUT completed interval, OUT other interval)
 RETURNS record
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
 SET jit TO 'off'
 SET plan_cache_mode TO 'auto'
AS $function$
DECLARE
    v_now record;
BEGIN
    IF p_completed IS NOT NULL AND (p_completed < interval '0' OR p_completed > interval '70 hours') THEN
        RAISE EXCEPTION 'millrace: completed retention must be 0 to 70 hours' USING ERRCODE = '22023';
    END IF;
    IF p_other IS NOT NULL AND (p_other < interval '0' OR p_other > interval '31 days') THEN
        RAISE EXCEPTION 'millrace: discarded retention must be 0 to 31 days' USING ERRCODE = '22023';
    END IF;
    PERFORM millrace.need_read_committed('set_retention(...)');
    -- Serialized, so that two concurrent calls never both append the same value.
    PERFORM pg_advisory_xact_lock(millrace.maint_space(), 1);
    v_now := millrace.retention();
    IF p_completed IS NOT NULL AND p_completed <> v_now.completed THEN
        INSERT INTO millrace.setting (name, value) VALUES ('retention.completed', p_completed::text);
    END IF;
    IF p_other IS NOT NULL AND p_other <> v_now.other THEN
        INSERT INTO millrace.setting (name, value) VALUES ('retention.other', p_other::text);
    END IF;
    SELECT r.completed, r.other INTO completed, other FROM millrace.retention() r;
END $function$;
COMMENT ON FUNCTION millrace.set_retention(p_completed interval, p_other interval, OUT completed interval, OUT other interval) IS
    'set_retention sets how long history keeps completed jobs (0 to 70 hours) and every other finished attempt (0 to 31 days); NULL keeps a value as it is. It appends a setting row only when a value changes, and returns the retention now. An administrator''s action (millrace_admin): a worker expires history by this setting, it cannot choose it.';

CREATE OR REPLACE FUNCTION millrace.expire_history(p_term bigint DEFAULT NULL::bigint)
 RETURNS integer
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
 SET jit TO 'off'
 SET lock_timeout TO '50ms'
 SET plan_cache_mode TO 'auto'
AS $function$
DECLARE
    v_max timestamptz;
    v_tables text;
    v_n int := 0;
    v_keep record := millrace.retention();
BEGIN
    PERFORM pg_advisory_xact_lock(millrace.maint_space(), 4);
    PERFORM millrace.fence_leader(p_term);
    FOR b IN 0 .. 67 LOOP
        -- A bucket of completed history (0-35) has its compact rows too
        -- (millrace.completed, version 11), written after their jobs ended.
        v_tables := format('millrace.%I, millrace.%I', 'finished_' || b, 'tally_' || b)
                    || CASE WHEN b < 36 THEN format(', millrace.%I', 'completed_' || b) ELSE '' END;
        EXECUTE format('SELECT max(finished_at) FROM millrace.%I', 'finished_' || b) INTO v_max;
        IF b < 36 THEN
            EXECUTE format('SELECT greatest($1, (SELECT max(at) FROM millrace.%I))', 'completed_' || b) INTO v_max USING v_max;
        END IF;
        CONTINUE WHEN v_max IS NULL OR v_max >= now() - CASE WHEN b < 36 THEN v_keep.completed ELSE v_keep.other END;
        BEGIN
            EXECUTE format('LOCK TABLE %s IN ACCESS EXCLUSIVE MODE NOWAIT', v_tables);
            EXECUTE format('TRUNCATE %s', v_tables);
            v_n := v_n + 1;
        EXCEPTION WHEN lock_not_available THEN
            NULL;
        END;
    END LOOP;
    -- A periodic job's newest slot is kept whatever its age: it is what
    -- says a monthly job ran this month (RunOnStart would run it again).
    DELETE FROM millrace.periodic p WHERE p.at < now() - interval '7 days'
      AND p.slot_at < (SELECT max(n.slot_at) FROM millrace.periodic n WHERE n.name = p.name);
    -- A retry's record is needed while its job's history may exist: at
    -- most 31 days of retention plus one daily bucket.
    DELETE FROM millrace.retried r WHERE r.at < now() - interval '33 days';
    RETURN v_n;
END $function$;
COMMENT ON FUNCTION millrace.expire_history(p_term bigint) IS
    'expire_history truncates the history buckets whose newest row is older than the retention of its kind (retention(): the administrator''s setting), each with its tally (and a bucket of completed history with its rows of millrace.completed), both under NOWAIT locks (a bucket being read is skipped until the next round), and forgets periodic slots older than a week (but the newest of each periodic job) and retry records older than 33 days (longer than any job''s history lives). It returns the buckets truncated. It takes no durations: whoever may run maintenance (the worker role) cannot shorten retention. Rounds run one at a time; p_term is the calling leader''s term (fence_leader).';
