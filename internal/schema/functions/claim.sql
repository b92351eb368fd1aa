-- millrace functions, claim: a capped batch of one queue's jobs by snapshot tick, lane by lane (priorities), and the lookups a claim makes.
--
-- The current definition of every function lives once, in internal/schema/functions/;
-- Migrate applies these files with CREATE OR REPLACE after the versioned migrations,
-- in file-name order, in the same transaction. A signature change needs a migration
-- that drops the old function (docs/contributing.md).

CREATE OR REPLACE FUNCTION millrace.holder(p_tick bigint, OUT token bigint, OUT owner integer)
 RETURNS record
 LANGUAGE plpgsql
 STABLE
 SET search_path TO 'pg_catalog', 'pg_temp'
 SET jit TO 'off'
 SET plan_cache_mode TO 'auto'
AS $function$
-- PL/pgSQL for a plan cached for the session: every flush and start mark
-- asks for each of its batches (see current_segment).
BEGIN
    SELECT h.token, h.owner INTO token, owner FROM (
        (SELECT l.token, l.owner FROM millrace.lease l WHERE l.tick_id = p_tick ORDER BY l.token DESC LIMIT 1)
        UNION ALL
        (SELECT t.tick_id, t.owner FROM millrace.tick t WHERE t.tick_id = p_tick AND NOT t.carried LIMIT 1)) h
    ORDER BY h.token DESC LIMIT 1;
END $function$;
COMMENT ON FUNCTION millrace.holder(p_tick bigint, OUT token bigint, OUT owner integer) IS
    'holder is the newest lease token of batch p_tick (its tick id if it was never re-leased) and its holder (0: released).';

CREATE OR REPLACE FUNCTION millrace.queue_paused(p_queue text)
 RETURNS boolean
 LANGUAGE plpgsql
 STABLE SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
 SET jit TO 'off'
 SET plan_cache_mode TO 'auto'
AS $function$
-- PL/pgSQL for a plan cached for the session: every claim asks.
BEGIN
    RETURN coalesce((SELECT s.paused FROM millrace.queue_state s WHERE s.queue = p_queue ORDER BY s.id DESC LIMIT 1), false);
END $function$;
COMMENT ON FUNCTION millrace.queue_paused(p_queue text) IS
    'queue_paused says queue p_queue is paused.';

CREATE OR REPLACE FUNCTION millrace.queues_with_work(p_queues text[])
 RETURNS SETOF text
 LANGUAGE plpgsql
 STABLE SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
 SET jit TO 'off'
 SET plan_cache_mode TO 'auto'
AS $function$
-- PL/pgSQL for a plan cached for the session: a process asks every second.
BEGIN
    RETURN QUERY
    SELECT q FROM unnest(p_queues) AS u(q)
    WHERE EXISTS (SELECT 1 FROM millrace.job j WHERE j.queue = u.q)
       OR EXISTS (SELECT 1 FROM millrace.lease l WHERE l.queue = u.q AND l.owner = 0);
END $function$;
COMMENT ON FUNCTION millrace.queues_with_work(p_queues text[]) IS
    'queues_with_work is the queues of p_queues that a claim might find work in: those with a job row (claimed or not) or a released batch, two index probes each. An idle process asks it for all its long-idle queues in one statement, instead of a claim per queue: a queue with neither has nothing to claim.';

CREATE OR REPLACE FUNCTION millrace.open_batches()
 RETURNS TABLE(queue text, tick_id bigint, token bigint, owner integer, leased_at timestamp with time zone)
 LANGUAGE plpgsql
 STABLE ROWS 10
 SET search_path TO 'pg_catalog', 'pg_temp'
 SET jit TO 'off'
 SET plan_cache_mode TO 'auto'
AS $function$
-- PL/pgSQL for a plan cached for the session: the leader asks every
-- round (rescue), and an SQL function with settings is planned at every
-- call.
#variable_conflict use_column
BEGIN
    RETURN QUERY
    SELECT t.queue, t.tick_id, h.token, h.owner, h.at
    FROM millrace.tick t
    CROSS JOIN LATERAL (
        SELECT token, owner, at FROM (
            (SELECT l.token, l.owner, l.at FROM millrace.lease l WHERE l.tick_id = t.tick_id ORDER BY l.token DESC LIMIT 1)
            UNION ALL SELECT t.tick_id, t.owner, t.at) x
        ORDER BY token DESC LIMIT 1) h
    WHERE NOT t.carried
      -- a hash anti-join over done (NOT IN's hashed subplan cost a third
      -- more: it probed and filtered every tick row itself)
      AND NOT EXISTS (SELECT 1 FROM millrace.done d WHERE d.tick_id = t.tick_id);
END $function$;
COMMENT ON FUNCTION millrace.open_batches() IS
    'open_batches lists the batches not yet finished, with their holder.';

CREATE OR REPLACE FUNCTION millrace.batch_jobs(p_tick bigint)
 RETURNS SETOF millrace.job
 LANGUAGE sql
 ROWS 100
 SET search_path TO 'pg_catalog', 'pg_temp'
 SET jit TO 'off'
AS $function$
    SELECT r.* FROM (SELECT * FROM millrace.tick t WHERE t.tick_id = p_tick AND NOT t.carried LIMIT 1) t
    CROSS JOIN LATERAL millrace.range_jobs(t.queue, t.priority, t.prev_snap, t.snap, t.after_txid, t.after_id,
                                           t.upto_txid, t.upto_id, 2147483647, 9223372036854775807) r
    -- a probe per job, not NOT EXISTS (an anti-join may hash every ack row)
    WHERE (SELECT count(*) FROM millrace.ack a WHERE a.tick_id = p_tick AND a.job_id = r.id) = 0
$function$;
COMMENT ON FUNCTION millrace.batch_jobs(p_tick bigint) IS
    'batch_jobs returns the jobs of batch p_tick that have no ack yet.';

CREATE OR REPLACE FUNCTION millrace.batch_keys(p_tick bigint)
 RETURNS TABLE(id bigint, priority smallint, txid xid8, created_at timestamp with time zone)
 LANGUAGE plpgsql
 STABLE ROWS 100
 SET search_path TO 'pg_catalog', 'pg_temp'
 SET jit TO 'off'
 SET plan_cache_mode TO 'auto'
AS $function$
-- PL/pgSQL for a plan cached for the session: the live counts ask for
-- every open batch at each read. The rows are range_jobs' (the batch's
-- in-flight transactions, then its txid range), without their args.
#variable_conflict use_column
BEGIN
    RETURN QUERY
    SELECT k.id, k.priority, k.txid, k.created_at
    FROM (SELECT * FROM millrace.tick t WHERE t.tick_id = p_tick AND NOT t.carried LIMIT 1) t
    CROSS JOIN LATERAL (
        SELECT j.id, j.priority, j.txid, j.created_at FROM millrace.job j
        WHERE j.queue = t.queue AND j.priority = t.priority
          AND j.txid >= greatest(pg_snapshot_xmax(t.prev_snap), t.after_txid) AND j.txid < pg_snapshot_xmax(t.snap)
          AND j.txid <= coalesce(t.upto_txid, pg_snapshot_xmax(t.snap))  -- a capped batch ends at its cap
          AND pg_visible_in_snapshot(j.txid, t.snap)
        UNION ALL
        SELECT j.id, j.priority, j.txid, j.created_at FROM pg_snapshot_xip(t.prev_snap) x(txid)
        CROSS JOIN LATERAL (SELECT j.id, j.priority, j.txid, j.created_at FROM millrace.job j  -- a probe per xid
                            WHERE j.queue = t.queue AND j.priority = t.priority AND j.txid = x.txid
                            OFFSET 0) j  -- kept a subquery: not a hash join over the lane
        WHERE pg_visible_in_snapshot(x.txid, t.snap)) k
    WHERE (t.after_txid IS NULL OR (k.txid, k.id) > (t.after_txid, t.after_id))
      AND (t.upto_txid IS NULL OR (k.txid, k.id) <= (t.upto_txid, t.upto_id))
      AND k.id NOT IN (SELECT a.job_id FROM millrace.ack a WHERE a.tick_id = p_tick);  -- the batch's acks, hashed once
END $function$;
COMMENT ON FUNCTION millrace.batch_keys(p_tick bigint) IS
    'batch_keys is batch_jobs without the payload: the key and creation time of each job of batch p_tick that has no ack yet, read from the lane index and the job rows, args untouched.';

CREATE OR REPLACE FUNCTION millrace.cancelled(p_ids bigint[])
 RETURNS SETOF bigint
 LANGUAGE sql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
 SET jit TO 'off'
AS $function$
    SELECT DISTINCT c.job_id FROM millrace.cancel c WHERE c.job_id = ANY (p_ids)
$function$;
COMMENT ON FUNCTION millrace.cancelled(p_ids bigint[]) IS
    'cancelled returns those of p_ids that have a cancellation request (a process polls it for the jobs it runs, in case a NOTIFY was missed).';

CREATE OR REPLACE FUNCTION millrace.range_jobs(p_queue text, p_priority smallint, p_prev pg_snapshot, p_snap pg_snapshot, p_after_txid xid8, p_after_id bigint, p_upto_txid xid8, p_upto_id bigint, p_max_jobs integer, p_max_bytes bigint)
 RETURNS SETOF millrace.job
 LANGUAGE plpgsql
 SET search_path TO 'pg_catalog', 'pg_temp'
 SET jit TO 'off'
 SET plan_cache_mode TO 'auto'
AS $function$
-- Each shape of range (bounded below, above, both or neither) is its own
-- static statement, so that the session's cached plan has every bound as
-- an index condition: planning a claim's statements over the partitioned
-- job table at every call cost more than running them.
DECLARE
    v_x     xid8;
    v_r     millrace.job;
    v_n     int := 0;
    v_bytes bigint := 0;
    v_lo    xid8 := pg_snapshot_xmax(p_prev);
    v_hi    xid8 := pg_snapshot_xmax(p_snap);
    v_c     refcursor;
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
            v_bytes := v_bytes + octet_length(v_r.args::text);
            IF v_n >= p_max_jobs OR v_bytes >= p_max_bytes THEN
                RETURN;
            END IF;
        END LOOP;
    END LOOP;
    IF p_after_txid IS NOT NULL AND p_after_txid > v_lo THEN
        v_lo := p_after_txid;
    END IF;
    IF p_after_txid IS NULL AND p_upto_txid IS NULL THEN
        OPEN v_c FOR SELECT * FROM millrace.job j
                     WHERE j.queue = p_queue AND j.priority = p_priority AND j.txid >= v_lo AND j.txid < v_hi
                       AND pg_visible_in_snapshot(j.txid, p_snap)
                     ORDER BY j.txid, j.id;
    ELSIF p_upto_txid IS NULL THEN
        OPEN v_c FOR SELECT * FROM millrace.job j
                     WHERE j.queue = p_queue AND j.priority = p_priority AND j.txid >= v_lo AND j.txid < v_hi
                       AND (j.txid, j.id) > (p_after_txid, p_after_id)
                       AND pg_visible_in_snapshot(j.txid, p_snap)
                     ORDER BY j.txid, j.id;
    ELSIF p_after_txid IS NULL THEN
        OPEN v_c FOR SELECT * FROM millrace.job j
                     WHERE j.queue = p_queue AND j.priority = p_priority AND j.txid >= v_lo AND j.txid < v_hi
                       AND (j.txid, j.id) <= (p_upto_txid, p_upto_id)
                       AND pg_visible_in_snapshot(j.txid, p_snap)
                     ORDER BY j.txid, j.id;
    ELSE
        OPEN v_c FOR SELECT * FROM millrace.job j
                     WHERE j.queue = p_queue AND j.priority = p_priority AND j.txid >= v_lo AND j.txid < v_hi
                       AND (j.txid, j.id) > (p_after_txid, p_after_id)
                       AND (j.txid, j.id) <= (p_upto_txid, p_upto_id)
                       AND pg_visible_in_snapshot(j.txid, p_snap)
                     ORDER BY j.txid, j.id;
    END IF;
    LOOP
        FETCH v_c INTO v_r;
        EXIT WHEN NOT FOUND;
        RETURN NEXT v_r;
        v_n := v_n + 1;
        v_bytes := v_bytes + octet_length(v_r.args::text);
        EXIT WHEN v_n >= p_max_jobs OR v_bytes >= p_max_bytes;
    END LOOP;
    CLOSE v_c;
END $function$;
COMMENT ON FUNCTION millrace.range_jobs(p_queue text, p_priority smallint, p_prev pg_snapshot, p_snap pg_snapshot, p_after_txid xid8, p_after_id bigint, p_upto_txid xid8, p_upto_id bigint, p_max_jobs integer, p_max_bytes bigint) IS
    'range_jobs returns the jobs of lane (p_queue, p_priority) visible in p_snap and not in p_prev with key (txid, id) above p_after and at most p_upto (NULL: unbounded), in key order, stopping after p_max_jobs jobs or once p_max_bytes of args are reached (at least one job). Args are counted as the worker receives them, their text (octet_length(args::text)), not as stored: a compressed value of 10 KB can be 1 MB in the worker.';

CREATE OR REPLACE FUNCTION millrace.lane_take(p_queue text, p_priority smallint, p_snap pg_snapshot, p_tick bigint, p_owner integer, p_req bigint, p_max_jobs integer, p_max_bytes bigint, p_peek boolean, p_started boolean)
 RETURNS SETOF millrace.job
 LANGUAGE plpgsql
 SET search_path TO 'pg_catalog', 'pg_temp'
 SET jit TO 'off'
 SET plan_cache_mode TO 'auto'
AS $function$
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
            v_bytes := v_bytes + octet_length(v_r.args::text);
            v_upto_txid := v_r.txid;
            v_upto_id := v_r.id;
            RETURN NEXT v_r;
        END LOOP;
        IF v_n > 0 THEN
            IF NOT p_peek THEN
                INSERT INTO millrace.tick (slot, queue, priority, tick_id, prev_snap, snap, after_txid, after_id, upto_txid, upto_id,
                                           more, owner, req, njobs, started)
                VALUES (millrace.current_segment(), p_queue, p_priority, p_tick, v_prev, v_snap, v_after_txid, v_after_id,
                        v_upto_txid, v_upto_id, v_n >= p_max_jobs OR v_bytes >= p_max_bytes, p_owner, p_req, v_n, p_started);
            END IF;
            RETURN;
        END IF;
    END LOOP;
END $function$;
COMMENT ON FUNCTION millrace.lane_take(p_queue text, p_priority smallint, p_snap pg_snapshot, p_tick bigint, p_owner integer, p_req bigint, p_max_jobs integer, p_max_bytes bigint, p_peek boolean, p_started boolean) IS
    'lane_take returns the next jobs of lane (p_queue, p_priority): the rest of the range its newest tick stopped in at its cap, or else those committed since that tick and visible in p_snap; at most p_max_jobs jobs and p_max_bytes bytes. Unless p_peek, it records them as batch p_tick of process p_owner (claim request p_req), marked started as a whole when p_started.';

CREATE OR REPLACE FUNCTION millrace.lanes_waiting(p_queue text, p_snap pg_snapshot, p_from smallint, p_examine integer, p_want integer)
 RETURNS TABLE(priority smallint, ready_at timestamp with time zone, served_at timestamp with time zone)
 LANGUAGE plpgsql
 SET search_path TO 'pg_catalog', 'pg_temp'
 SET jit TO 'off'
 SET plan_cache_mode TO 'force_generic_plan'
AS $function$
-- PL/pgSQL for its plan cache, and one generic plan: planning this
-- statement costs more than running it on a few lanes (an SQL function
-- plans it at every call, and a custom plan would be made at every call
-- too), and no parameter decides a partition.
-- Each lane looked at (w): the ready time of the first job lane_take
-- would take from it in p_snap, by a few index probes, and the time of
-- its newest tick. The jobs of the xids in flight at the newest tick are
-- found by a probe per xid: written as txid = ANY (...) with ORDER BY
-- txid, id, the generic plan kept the order and read the whole lane
-- with the xids as a filter (81 ms on a lane of 260,000 waiting jobs, at
-- every claim of a queue with several lanes). Written out twice (no
-- function per lane: a call per lane cost ten times the probes).
#variable_conflict use_column
BEGIN
    RETURN QUERY
    WITH RECURSIVE l AS (
        SELECT x.priority, w.ready_at, w.served_at, 1 AS n, (w.ready_at IS NOT NULL)::int AS k
        FROM (SELECT j.priority FROM millrace.job j WHERE j.queue = p_queue AND j.priority >= p_from
              ORDER BY j.priority LIMIT 1) x
        CROSS JOIN LATERAL (SELECT CASE
                    WHEN t.tick_id IS NULL THEN  -- a fresh lane: its first job visible in p_snap
                        (SELECT j.ready_at FROM millrace.job j WHERE j.queue = p_queue AND j.priority = x.priority
                           AND pg_visible_in_snapshot(j.txid, p_snap) ORDER BY j.txid, j.id LIMIT 1)
                    WHEN t.more THEN  -- the rest of a capped range first (rare): as lane_take finds it
                        (SELECT k.ready_at FROM millrace.lane_take(p_queue, x.priority, p_snap, 0, 0, 0, 1, 9223372036854775807, true, false) k
                         LIMIT 1)
                    ELSE coalesce(  -- in progress at the newest tick, then newer; visible in p_snap
                        (SELECT f.ready_at FROM pg_snapshot_xip(t.snap) xp(txid)
                         CROSS JOIN LATERAL (SELECT j.ready_at, j.id FROM millrace.job j  -- a probe per xid
                                             WHERE j.queue = p_queue AND j.priority = x.priority AND j.txid = xp.txid
                                             ORDER BY j.id LIMIT 1) f
                         WHERE pg_visible_in_snapshot(xp.txid, p_snap)
                         ORDER BY xp.txid LIMIT 1),
                        (SELECT j.ready_at FROM millrace.job j WHERE j.queue = p_queue AND j.priority = x.priority
                           AND j.txid >= pg_snapshot_xmax(t.snap) AND j.txid < pg_snapshot_xmax(p_snap)
                           AND pg_visible_in_snapshot(j.txid, p_snap)
                         ORDER BY j.txid, j.id LIMIT 1)) END AS ready_at,
                t.at AS served_at
         FROM (SELECT 1) one
         LEFT JOIN LATERAL (SELECT y.tick_id, y.more, y.snap, y.at FROM millrace.tick y WHERE y.queue = p_queue AND y.priority = x.priority
                            ORDER BY y.tick_id DESC LIMIT 1) t ON true) w
        UNION ALL
        SELECT x.priority, w.ready_at, w.served_at, l.n + 1, l.k + (w.ready_at IS NOT NULL)::int
        FROM l
        CROSS JOIN LATERAL (SELECT j.priority FROM millrace.job j WHERE j.queue = p_queue AND j.priority > l.priority
                            ORDER BY j.priority LIMIT 1) x
        CROSS JOIN LATERAL (SELECT CASE
                    WHEN t.tick_id IS NULL THEN  -- a fresh lane: its first job visible in p_snap
                        (SELECT j.ready_at FROM millrace.job j WHERE j.queue = p_queue AND j.priority = x.priority
                           AND pg_visible_in_snapshot(j.txid, p_snap) ORDER BY j.txid, j.id LIMIT 1)
                    WHEN t.more THEN  -- the rest of a capped range first (rare): as lane_take finds it
                        (SELECT k.ready_at FROM millrace.lane_take(p_queue, x.priority, p_snap, 0, 0, 0, 1, 9223372036854775807, true, false) k
                         LIMIT 1)
                    ELSE coalesce(  -- in progress at the newest tick, then newer; visible in p_snap
                        (SELECT f.ready_at FROM pg_snapshot_xip(t.snap) xp(txid)
                         CROSS JOIN LATERAL (SELECT j.ready_at, j.id FROM millrace.job j  -- a probe per xid
                                             WHERE j.queue = p_queue AND j.priority = x.priority AND j.txid = xp.txid
                                             ORDER BY j.id LIMIT 1) f
                         WHERE pg_visible_in_snapshot(xp.txid, p_snap)
                         ORDER BY xp.txid LIMIT 1),
                        (SELECT j.ready_at FROM millrace.job j WHERE j.queue = p_queue AND j.priority = x.priority
                           AND j.txid >= pg_snapshot_xmax(t.snap) AND j.txid < pg_snapshot_xmax(p_snap)
                           AND pg_visible_in_snapshot(j.txid, p_snap)
                         ORDER BY j.txid, j.id LIMIT 1)) END AS ready_at,
                t.at AS served_at
         FROM (SELECT 1) one
         LEFT JOIN LATERAL (SELECT y.tick_id, y.more, y.snap, y.at FROM millrace.tick y WHERE y.queue = p_queue AND y.priority = x.priority
                            ORDER BY y.tick_id DESC LIMIT 1) t ON true) w
        WHERE l.n < p_examine AND l.k < p_want)
    SELECT l.priority, l.ready_at, l.served_at FROM l;
END $function$;
COMMENT ON FUNCTION millrace.lanes_waiting(p_queue text, p_snap pg_snapshot, p_from smallint, p_examine integer, p_want integer) IS
    'lanes_waiting looks at the lanes of p_queue from priority p_from on, in order (a skip scan of job_lane), at most p_examine of them, and stops once p_want have a job waiting in snapshot p_snap. It returns every lane it looked at with the ready time of the first job lane_take would take from it (NULL: none; found by a few index probes) and when it was last served (its newest tick''s time).';

CREATE OR REPLACE FUNCTION millrace.claim_peek(p_queue text)
 RETURNS integer
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
 SET jit TO 'off'
 SET plan_cache_mode TO 'auto'
AS $function$
-- PL/pgSQL for a plan cached for the session; VOLATILE, as claim: each
-- statement takes its snapshot after its locks, later than v_asked.
DECLARE
    v_asked pg_snapshot := pg_current_snapshot();
    v_lane  smallint;
    v_lsnap pg_snapshot;
    v_lmore boolean;
    v_lowner integer;
BEGIN
    -- The caller sends it alone, outside a transaction of its own: at a
    -- stricter default isolation its statements would read with the
    -- snapshot of the first, taken before their locks (see ring_unmoved),
    -- and a slot reclaimed meanwhile would hide a job. Then a claim decides.
    IF current_setting('transaction_isolation') <> 'read committed' THEN
        RETURN 0;
    END IF;
    -- A released batch waits for a claim to adopt it. Most queues have
    -- no released lease at all: the probe of the lease_released index
    -- alone decides, and only a queue with one sets up the check of its
    -- newer leases and done rows (see claim).
    PERFORM 1 FROM millrace.lease l WHERE l.queue = p_queue AND l.owner = 0 LIMIT 1;
    IF FOUND AND EXISTS (SELECT 1 FROM millrace.lease l
               WHERE l.queue = p_queue AND l.owner = 0
                 AND NOT EXISTS (SELECT 1 FROM millrace.lease n WHERE n.tick_id = l.tick_id AND n.token > l.token)
                 AND NOT EXISTS (SELECT 1 FROM millrace.done d WHERE d.tick_id = l.tick_id)) THEN
        RETURN 0;
    END IF;
    -- The claim's short cut, with the same probes (see claim): a one-lane
    -- queue whose newest batch was not cut at a cap and has no job that
    -- v_asked sees past it.
    SELECT j.priority INTO v_lane FROM millrace.job j WHERE j.queue = p_queue ORDER BY j.priority LIMIT 1;
    IF NOT FOUND OR EXISTS (SELECT 1 FROM millrace.job j WHERE j.queue = p_queue AND j.priority > v_lane) THEN
        RETURN 0;
    END IF;
    SELECT t.snap, t.more, t.owner INTO v_lsnap, v_lmore, v_lowner
    FROM millrace.tick t WHERE t.queue = p_queue AND t.priority = v_lane ORDER BY t.tick_id DESC LIMIT 1;
    IF FOUND AND NOT v_lmore
       AND (SELECT j.id FROM millrace.job j WHERE j.queue = p_queue AND j.priority = v_lane
              AND j.txid >= pg_snapshot_xmax(v_lsnap) AND j.txid < pg_snapshot_xmax(v_asked)
              AND pg_visible_in_snapshot(j.txid, v_asked)
            ORDER BY j.txid, j.id LIMIT 1) IS NULL
       AND (SELECT f.id FROM pg_snapshot_xip(v_lsnap) xp(txid)
            CROSS JOIN LATERAL (SELECT j.id FROM millrace.job j
                                WHERE j.queue = p_queue AND j.priority = v_lane AND j.txid = xp.txid
                                ORDER BY j.id LIMIT 1) f
            WHERE pg_visible_in_snapshot(xp.txid, v_asked)
            LIMIT 1) IS NULL THEN
        RETURN coalesce(v_lowner, 0);
    END IF;
    RETURN 0;
END $function$;
COMMENT ON FUNCTION millrace.claim_peek(p_queue text) IS
    'claim_peek says, without a claim''s lock or writes, whether a claim of p_queue would return nothing at once by its short cut: the process that took the queue''s newest batch when that batch already holds every job committed before the call (and no released batch waits), else 0 (a claim may find work: claim). A claimer that keeps losing announcements to another process asks it before it claims: most of its claims found nothing. It answers 0 outside READ COMMITTED (its statements must take their snapshots after their locks).';

CREATE OR REPLACE FUNCTION millrace.key_defer(p_queue text, p_owner integer, p_tick bigint, p_token bigint, p_jobs millrace.job[], p_per_key integer, p_rate integer, p_rate_per interval, p_by text[], p_live integer[], p_pace interval, p_now timestamp with time zone, INOUT p_taken jsonb, INOUT p_until jsonb, INOUT p_slots jsonb, OUT deferred bigint[], OUT waiting bigint[])
 RETURNS record
 LANGUAGE plpgsql
 SET search_path TO 'pg_catalog', 'pg_temp'
 SET jit TO 'off'
 SET plan_cache_mode TO 'force_generic_plan'
AS $function$
-- PL/pgSQL for a plan cached for the session: a claim of a queue with a
-- per-key limit calls it for each batch it takes. One generic plan per
-- statement (plan_cache_mode): see claim.
DECLARE
    v_now  timestamptz := coalesce(p_now, clock_timestamp());
    v_dues timestamptz[];  -- when each deferred job is due
    v_ends jsonb;          -- where each key's deferred jobs end
    v_pace interval := least(greatest(coalesce(p_pace, interval '10 ms'), interval '1 ms'), interval '10 s');
    v_window interval := millrace.rate_window(p_rate_per);  -- NULL: no per-key rate
    -- The call's claims count at its end (keyrate.at): when its jobs
    -- start. Its rounds stop after this long (claim).
    v_late interval := least(interval '50 ms', (millrace.rate_window(p_rate_per) - p_rate_per) / 2);
    v_rkeys    text[];         -- under a per-key rate, the batch's keys,
    v_rstarted bigint[];       -- what the claims of each one's window started,
    v_runtil   timestamptz[];  -- where its deferred jobs end,
    v_rfirst   timestamptz[];  -- and when the window's oldest claim leaves it
    -- A small batch under a per-key limit alone, worked out in variables:
    v_jk     text[];           -- each job's key,
    v_dk     text[];           -- the batch's keys: each one,
    v_dn     int[];            -- its jobs in the batch,
    v_dafter timestamptz[];    -- where its deferred jobs end,
    v_dslots bigint[];         -- the caller's slots of it after the batch,
    v_drun   bigint[];         -- its jobs that may run at once,
    v_dbuf   bigint[];         -- and wait in the caller,
    v_drk    int[];            -- its jobs placed so far,
    v_dtook  int[];            -- and taken,
    v_dpos   int[];            -- its deferred jobs so far, from the schedule
    v_dposn  int[];            -- and not
    v_tk     text[];           -- what the other live processes count: keys,
    v_to     bigint[];         -- counts,
    v_tu     timestamptz[];    -- and ends
    v_own    record;           -- this process's newest map
    v_i      int;
    v_at     int;
    v_inhand bigint;
    v_s      bigint;
    v_again  boolean;
    v_pos    int;
    v_full   text[] := '{}';   -- the keys whose slots the batch left all held
BEGIN
    deferred := '{}';
    waiting := '{}';
    IF p_rate IS NULL AND p_per_key IS NOT NULL AND cardinality(p_jobs) <= 8 THEN
        -- A batch of up to eight jobs under a per-key limit alone (at a
        -- steady rate most claims take one to a few): the statement below
        -- worked out in variables, with the same probes and the same
        -- arithmetic. Its set-up (its CTEs, sorts and window) cost 0.195
        -- ms a call of one job, against 0.09 here.
        v_jk := '{}';
        v_dk := '{}';
        FOR v_at IN 1 .. cardinality(p_jobs) LOOP
            v_jk[v_at] := millrace.job_key(p_jobs[v_at].kind, p_jobs[v_at].args, p_by);
            IF NOT v_jk[v_at] = ANY (v_dk) THEN
                v_dk := v_dk || v_jk[v_at];
            END IF;
        END LOOP;
        -- What the other live processes count of each key, and where
        -- their deferred jobs end (each process's newest map, one probe).
        SELECT coalesce(array_agg(y.k), '{}'), coalesce(array_agg(y.o), '{}'), coalesce(array_agg(y.u), '{}')
        INTO v_tk, v_to, v_tu
        FROM (SELECT x.k, sum(least(coalesce(x.s, x.n), x.n)) AS o, max(x.u) AS u
              FROM unnest(p_live) l(id)
              CROSS JOIN LATERAL (SELECT h.keys, h.n, h.slots, h.until FROM millrace.keyhold h
                                  WHERE h.queue = p_queue AND h.owner = l.id
                                  ORDER BY h.id DESC LIMIT 1) h
              CROSS JOIN LATERAL unnest(h.keys, h.n, h.slots, h.until) x(k, n, s, u)
              WHERE x.k = ANY (v_dk)
              GROUP BY x.k) y;
        SELECT h.keys, h.n, h.slots, h.until INTO v_own FROM millrace.keyhold h
        WHERE h.queue = p_queue AND h.owner = p_owner ORDER BY h.id DESC LIMIT 1;
        -- Each key: the slots the caller keeps (what this claim gave it,
        -- else the least of its slots and jobs), and gets up to the limit
        -- less what the others count; its jobs that run at once, and the
        -- buffer that waits in the caller (eight a slot).
        FOR v_i IN 1 .. cardinality(v_dk) LOOP
            v_dn[v_i] := cardinality(array_positions(v_jk, v_dk[v_i]));
            v_at := CASE WHEN v_own.keys IS NOT NULL THEN array_position(v_own.keys, v_dk[v_i]) END;
            v_inhand := coalesce(v_own.n[v_at], 0) + coalesce((p_taken ->> v_dk[v_i])::int, 0);
            v_dafter[v_i] := greatest(v_tu[array_position(v_tk, v_dk[v_i])], v_own.until[v_at],
                                      (p_until ->> v_dk[v_i])::timestamptz, v_now);
            v_s := coalesce((p_slots ->> v_dk[v_i])::int,
                            CASE WHEN v_at IS NOT NULL THEN least(coalesce(v_own.slots[v_at], p_per_key), v_own.n[v_at]) END, 0);
            v_dslots[v_i] := v_s + least(greatest(p_per_key - coalesce(v_to[array_position(v_tk, v_dk[v_i])], 0) - v_s, 0),
                                         v_dn[v_i] + greatest(v_inhand - v_s, 0));
            v_drun[v_i] := greatest(v_dslots[v_i] - v_inhand, 0);
            v_dbuf[v_i] := CASE WHEN v_dslots[v_i] > 0
                                THEN greatest(9 * v_dslots[v_i] - v_inhand - greatest(v_dslots[v_i] - v_inhand, 0), 0) ELSE 0 END;
            v_drk[v_i] := 0;
            v_dtook[v_i] := 0;
            v_dpos[v_i] := 0;
            v_dposn[v_i] := 0;
            p_slots := p_slots || jsonb_build_object(v_dk[v_i], v_dslots[v_i]);
            IF coalesce(v_to[array_position(v_tk, v_dk[v_i])], 0) + v_dslots[v_i] >= p_per_key THEN
                v_full := v_full || v_dk[v_i];
            END IF;
        END LOOP;
        -- Each job in the batch's order: it runs, waits in the caller, or
        -- is deferred (the pos-th of its key's from the schedule, or not).
        v_dues := '{}';
        FOR v_at IN 1 .. cardinality(p_jobs) LOOP
            v_i := array_position(v_dk, v_jk[v_at]);
            v_drk[v_i] := v_drk[v_i] + 1;
            IF v_drk[v_i] <= v_drun[v_i] + v_dbuf[v_i] THEN
                v_dtook[v_i] := v_dtook[v_i] + 1;
                IF v_drk[v_i] > v_drun[v_i] THEN
                    waiting := waiting || p_jobs[v_at].id;
                END IF;
                CONTINUE;
            END IF;
            v_again := p_jobs[v_at].ready_at > p_jobs[v_at].created_at;
            IF v_again THEN
                v_dpos[v_i] := v_dpos[v_i] + 1;
                v_pos := v_dpos[v_i];
            ELSE
                v_dposn[v_i] := v_dposn[v_i] + 1;
                v_pos := v_dposn[v_i];
            END IF;
            deferred := deferred || p_jobs[v_at].id;
            v_dues := v_dues || CASE WHEN v_again THEN v_now + v_pace * v_pos / p_per_key
                                     ELSE v_dafter[v_i] + v_pace * ceil(v_pos::numeric / p_per_key) END;
        END LOOP;
        v_ends := '{}';
        FOR v_i IN 1 .. cardinality(v_dk) LOOP
            IF v_dtook[v_i] > 0 THEN
                p_taken := p_taken || jsonb_build_object(v_dk[v_i], coalesce((p_taken ->> v_dk[v_i])::int, 0) + v_dtook[v_i]);
            END IF;
            IF v_dposn[v_i] > 0 THEN
                v_ends := v_ends || jsonb_build_object(v_dk[v_i], v_dafter[v_i] + v_pace * ceil(v_dposn[v_i]::numeric / p_per_key));
            END IF;
        END LOOP;
    ELSE
    IF p_rate IS NOT NULL THEN
        -- Under a per-key rate, each key's window: its newest total, less
        -- the total before the window's oldest row (none: nothing started
        -- in it); and when that row leaves it (this call's own claims of
        -- the key, if none: they count from the call's end, at most
        -- v_late from now). A statement of its own: in the one below, its
        -- probes of keyrate's partitions cost a per-key limit alone their
        -- locks and executor set-up at every call (0.26 of its 0.31 ms a
        -- call of one job), though they never ran.
        SELECT coalesce(array_agg(d.k), '{}'), coalesce(array_agg(coalesce(r.total - coalesce(w.before, r.total), 0)), '{}'),
               coalesce(array_agg(r.until), '{}'), coalesce(array_agg(coalesce(w.at, v_now + v_late)), '{}')
        INTO v_rkeys, v_rstarted, v_runtil, v_rfirst
        FROM (SELECT DISTINCT millrace.job_key(x.kind, x.args, p_by) AS k FROM unnest(p_jobs) x) d
        LEFT JOIN LATERAL (SELECT x.total, x.until FROM millrace.keyrate x
                           WHERE x.queue = p_queue AND x.key = d.k
                           ORDER BY x.at DESC LIMIT 1) r ON true
        LEFT JOIN LATERAL (SELECT y.total - y.took AS before, y.at FROM millrace.keyrate y
                           WHERE y.queue = p_queue AND y.key = d.k AND y.at > v_now - v_window
                           ORDER BY y.at LIMIT 1) w ON true;
    END IF;
    -- Each key of the batch. Under a per-key limit, what a process holds
    -- of it is in its newest map (keyhold); it counts as the least of
    -- that and its slots (it runs no more than its slots at once). This process keeps the slots it holds jobs for (or
    -- what this claim gave it already, p_slots), and gets at most the
    -- limit less what the others count, for the batch's jobs of the key
    -- and those it holds beyond its slots. Under a per-key rate, the
    -- claims of the key's window took the newest running total less the
    -- one before the window's oldest row (keyrate), and this call what
    -- p_taken says: the key's jobs may start up to the rate less those.
    -- Of the batch's jobs of the key, in order: those both allow run at
    -- once; then, while it has a slot of the key and no rate counts it,
    -- a buffer of up to eight per slot waits in it for one of its own
    -- slots (no claim, no schedule: a job of the key that ends here
    -- starts the next); the others wait in the schedule.
    WITH j AS MATERIALIZED (
            SELECT x.id, x.ord, millrace.job_key(x.kind, x.args, p_by) AS k, x.ready_at > x.created_at AS again
            FROM unnest(p_jobs) WITH ORDINALITY AS x(slot, id, queue, kind, args, priority, attempt, max_attempts, created_at, txid, ready_at, timeout_ms, ord)),
        -- The maps of the other live processes and of this one (keyhold:
        -- a process's newest row, one probe each), for the batch's keys.
        -- Another process counts the least of its jobs of a key and its
        -- slots of it.
        t AS MATERIALIZED (
            SELECT x.k, sum(least(coalesce(x.s, x.n), x.n)) AS others, max(x.u) AS until
            FROM unnest(p_live) l(id)
            CROSS JOIN LATERAL (SELECT h.keys, h.n, h.slots, h.until FROM millrace.keyhold h
                                WHERE h.queue = p_queue AND h.owner = l.id AND p_per_key IS NOT NULL
                                ORDER BY h.id DESC LIMIT 1) h
            CROSS JOIN LATERAL unnest(h.keys, h.n, h.slots, h.until) x(k, n, s, u)
            WHERE x.k IN (SELECT j.k FROM j)
            GROUP BY x.k),
        o AS MATERIALIZED (
            SELECT x.k, least(coalesce(x.s, p_per_key), x.n) AS keep, x.n AS held, x.u AS until
            FROM (SELECT h.keys, h.n, h.slots, h.until FROM millrace.keyhold h
                  WHERE h.queue = p_queue AND h.owner = p_owner AND p_per_key IS NOT NULL
                  ORDER BY h.id DESC LIMIT 1) h
            CROSS JOIN LATERAL unnest(h.keys, h.n, h.slots, h.until) x(k, n, s, u)
            WHERE x.k IN (SELECT j.k FROM j)),
        c AS MATERIALIZED (
            SELECT d.k, d.n, coalesce(t.others, 0) AS others, coalesce(o.keep, 0) AS keep,
                   coalesce(o.held, 0) + coalesce((p_taken ->> d.k)::int, 0) AS inhand,
                   CASE WHEN p_rate IS NOT NULL THEN greatest(p_rate - coalesce(q.started, 0) - coalesce((p_taken ->> d.k)::int, 0), 0) END AS rroom,
                   greatest(t.until, o.until, q.until, q.first + v_window, (p_until ->> d.k)::timestamptz, v_now) AS after
            FROM (SELECT j.k, count(*) AS n FROM j GROUP BY j.k) d
            LEFT JOIN t ON t.k = d.k
            LEFT JOIN o ON o.k = d.k
            LEFT JOIN unnest(v_rkeys, v_rstarted, v_runtil, v_rfirst) q(k, started, until, first) ON q.k = d.k),
        s AS (
            SELECT c.k, c.n, c.inhand, c.after, c.rroom, c.others,
                   CASE WHEN p_per_key IS NOT NULL THEN
                        b.s + least(greatest(p_per_key - c.others - b.s, 0), c.n + greatest(c.inhand - b.s, 0)) END AS slots
            FROM c CROSS JOIN LATERAL (SELECT coalesce((p_slots ->> c.k)::int, c.keep) AS s) b),
        f AS (
            -- least ignores NULL: no rate.
            SELECT s.k, s.after, s.slots, least(CASE WHEN s.slots IS NULL THEN s.n ELSE greatest(s.slots - s.inhand, 0) END, s.rroom) AS run,
                   CASE WHEN s.slots > 0 AND p_rate IS NULL THEN greatest(9 * s.slots - s.inhand - greatest(s.slots - s.inhand, 0), 0) ELSE 0 END AS buf
            FROM s),
        -- Each job, its place among its key's (rk), and what becomes of
        -- it: 0 it runs at once, 1 it waits in the caller for one of its
        -- slots, 2 it is deferred, the pos-th of its key's deferred jobs
        -- that came from the schedule (again) or not.
        x AS MATERIALIZED (
            SELECT r.id, r.k, r.again, f.after,
                   CASE WHEN r.rk <= f.run THEN 0 WHEN r.rk <= f.run + f.buf THEN 1 ELSE 2 END AS cls,
                   row_number() OVER (PARTITION BY r.k, r.again, r.rk > f.run + f.buf ORDER BY r.rk) AS pos
            FROM (SELECT j.id, j.k, j.again AND p_rate IS NULL AS again, row_number() OVER (PARTITION BY j.k ORDER BY j.ord) AS rk
                  FROM j) r
            JOIN f ON f.k = r.k),
        -- The jobs past what their key allows wait in the schedule. Under a
        -- per-key limit alone, those that come from it (they waited their
        -- turn, or were due later) try again soon: the i-th after i slots
        -- of the key may have freed, one every p_pace / p_per_key. The
        -- others queue after the key's deferred jobs, the i-th one per
        -- slot every p_pace (the time a job of the key holds its slot in
        -- the caller); under a per-key rate (all of them), from when the
        -- window's oldest claim leaves it, one every window / rate (the
        -- rate, spread): none comes back long before the key has room for
        -- it, and none is held back much longer.
        d AS MATERIALIZED (
            SELECT x.id, x.k, x.again, x.after,
                   CASE WHEN x.again THEN v_now + v_pace * x.pos / p_per_key
                        ELSE x.after + greatest(v_pace * ceil(x.pos::numeric / p_per_key), v_window * (x.pos - 1) / p_rate) END AS due
            FROM x WHERE x.cls = 2)
    -- The maps, the waiting jobs and the deferred ones in one pass, each
    -- aggregate once for the batch (an ordered aggregate per key sorted
    -- for each key; a statement per key cost more than the key's probes).
    SELECT p_slots || coalesce((SELECT jsonb_object_agg(f.k, f.slots) FROM f), '{}'),
           p_taken || coalesce((SELECT jsonb_object_agg(y.k, coalesce((p_taken ->> y.k)::int, 0) + y.took)
                                FROM (SELECT x.k, count(*) AS took FROM x WHERE x.cls < 2 GROUP BY x.k) y), '{}'),
           coalesce((SELECT array_agg(x.id) FROM x WHERE x.cls = 1), '{}'),
           coalesce(dd.ids, '{}'), dd.dues,
           coalesce((SELECT jsonb_object_agg(z.k, z.after + greatest(v_pace * ceil(z.n::numeric / p_per_key), v_window * z.n / p_rate))
                     FROM (SELECT d.k, d.after, count(*) AS n FROM d WHERE NOT d.again GROUP BY d.k, d.after) z), '{}'),
           coalesce((SELECT array_agg(s.k) FROM s WHERE s.others + s.slots >= p_per_key), '{}')
    INTO p_slots, p_taken, waiting, deferred, v_dues, v_ends, v_full
    FROM (SELECT array_agg(d.id) AS ids, array_agg(d.due) AS dues FROM d) dd;
    END IF;
    IF cardinality(v_full) > 0 THEN
        -- The keys whose slots this batch left all held (the other live
        -- processes and the caller hold the limit): the ends of their
        -- jobs are worth a flush soon, for the other processes wait for
        -- those slots; a key with room waits for the caller's next flush
        -- (internal/pool: KeyFlushDelay against FlushDelay). For the
        -- rest of the transaction, added to: millrace.full_keys.
        PERFORM set_config('millrace.full_keys',
            (coalesce(nullif(current_setting('millrace.full_keys', true), ''), '{}')::text[] || v_full)::text, true);
    END IF;
    IF cardinality(deferred) = 0 THEN
        RETURN;  -- nothing to defer (the common case): no statement more
    END IF;
    -- They keep their attempt (as a snooze).
    INSERT INTO millrace.sched (gen, id, queue, kind, args, priority, attempt, max_attempts, created_at, due_at, last_error, timeout_ms)
    SELECT millrace.current_gen(), x.id, x.queue, x.kind, x.args, x.priority, x.attempt, x.max_attempts, least(x.created_at, now()),
           d.due, 'deferred by its key''s limit', x.timeout_ms
    FROM unnest(deferred, v_dues) d(id, due) JOIN unnest(p_jobs) x ON x.id = d.id;
    INSERT INTO millrace.ack (slot, job_id, tick_id, token, state, attempt)
    SELECT millrace.current_segment(), x.id, p_tick, p_token, 5, x.attempt + 1
    FROM unnest(p_jobs) x WHERE x.id = ANY (deferred);
    -- Where each key's deferred jobs (those not from the schedule) end.
    p_until := p_until || v_ends;
END $function$;
COMMENT ON FUNCTION millrace.key_defer(p_queue text, p_owner integer, p_tick bigint, p_token bigint, p_jobs millrace.job[], p_per_key integer, p_rate integer, p_rate_per interval, p_by text[], p_live integer[], p_pace interval, p_now timestamp with time zone, INOUT p_taken jsonb, INOUT p_until jsonb, INOUT p_slots jsonb, OUT deferred bigint[], OUT waiting bigint[]) IS
    'key_defer splits batch p_tick (lease p_token) of a queue with a per-key limit of p_per_key and/or a per-key rate of p_rate starts per p_rate_per, keyed by p_by (NULL: none of it). Under the limit a process''s count of a key is the least of its slots and what it holds (its newest map, keyhold); for each key of the batch, p_owner keeps the slots it holds jobs for (or those this claim gave it, p_slots) and gets at most the limit less what the other live processes p_live count. Under the rate, the key may start the rate less what the claims of its window took (keyrate''s running totals, at p_now; and p_taken, this call''s). Of the key''s jobs, in order, those both allow run at once, then (without a rate) up to eight per slot wait in the caller for one of its slots (waiting: not to be marked started at the claim), and the others are deferred: acked as snoozed (state 5, no history) and written to the schedule after the key''s deferred jobs (p_until, keyhold''s and keyrate''s until), one per slot every p_pace (10 ms when NULL; 1 ms to 10 s) and, under the rate, from when the window''s oldest claim leaves it, one every rate_window(p_rate_per) / p_rate, or, under the limit alone, for a job that comes from the schedule (ready after its creation), the i-th one i slots'' time (p_pace / p_per_key) from now. It returns the deferred and the waiting ids, and p_taken, p_until and p_slots with this batch''s keys.';

CREATE OR REPLACE FUNCTION millrace.claim(p_queue text, p_owner integer, p_req bigint, p_retry boolean DEFAULT false, p_max_jobs integer DEFAULT 1000, p_max_bytes bigint DEFAULT 8388608, p_starve interval DEFAULT '00:00:05'::interval, p_start_all boolean DEFAULT false, p_held integer DEFAULT NULL::integer, p_buffer integer DEFAULT 0, p_pace interval DEFAULT NULL::interval)
 RETURNS TABLE(tick_id bigint, token bigint, id bigint, kind text, args jsonb, priority smallint, attempt integer, max_attempts integer, created_at timestamp with time zone, ready_at timestamp with time zone, timeout_ms integer, cancelled boolean, key text, key_slots integer, waits boolean)
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
 SET jit TO 'off'
 SET plan_cache_mode TO 'force_generic_plan'
AS $function$
#variable_conflict use_column
DECLARE
    -- One generic plan per statement, cached for the session (plan_cache_mode):
    -- with custom plans Postgres planned most statements anew at each call,
    -- and the planning cost as much as running them.
    v_tick  bigint;
    v_token bigint;
    v_h     record;
    v_found boolean := false;
    v_snap  pg_snapshot;
    v_left  int := p_max_jobs;
    v_bytes bigint := p_max_bytes;
    v_lanes smallint[];
    v_lane  smallint;
    v_n     int;
    v_examine constant int := 256;  -- lanes looked at, at most, from each starting point
    v_want    int := least(p_max_jobs, 256);  -- lanes with a job waiting enough to stop looking
    v_lp    smallint[];             -- the lanes looked at: priority,
    v_lr    timestamptz[];          -- ready time of the first job waiting (NULL: none),
    v_ls    timestamptz[];          -- and when it was last served
    v_key   text;
    v_cursor text;
    v_from  int;
    v_to    int;
    v_asked pg_snapshot := pg_current_snapshot();  -- before the lock: what the caller can have been told of
    v_lsnap pg_snapshot;            -- the lane's newest tick: its snapshot,
    v_lmore boolean;                -- whether it stopped at a cap,
    v_lowner integer;               -- and the process that took it
    v_lread  boolean := false;      -- read here, it ends a range (not cut at a cap) or there is none
    v_paused boolean;
    v_limit  int;                   -- the queue's concurrency limit (NULL: none)
    v_held   int;                   -- the jobs of the queue this process has in hand (limited queues)
    v_own    int;                   -- its newest count in millrace.hold: its slots of a running limit
    v_keep   int;                   -- the slots it keeps: no more than it has jobs for
    v_free   int;                   -- the limit less what the live processes hold
    v_room   int;                   -- the jobs it may take: slots it gets, and its buffer
    v_slots  int;                   -- the slots it holds after this call
    v_replay boolean := false;      -- the replay of a call whose reply was lost
    v_rate   int;                   -- the queue's rate limit: starts (claimed jobs)
    v_per    interval;              -- per this period (NULL: none)
    v_first  timestamptz;           -- the oldest claim of the rate's window
    v_total  bigint;                -- what the queue's claims took, in all, at its newest
    v_before bigint;                -- and before the window's oldest claim
    v_since  timestamptz;           -- when the rate's window began
    v_rleft  int;                   -- the rate less what the window's claims took
    v_batch  int;
    v_taken  int := 0;              -- jobs this call returns
    v_per_key int;                  -- the queue's per-key limit (NULL: none),
    v_by     text[];                -- keyed by these parts (job_key)
    v_live   int[];                 -- the other live processes (running and per-key limits)
    v_others bigint;                -- what they hold of a running limit
    v_jobs   millrace.job[];        -- a batch's jobs, before the per-key split
    v_def    bigint[];              -- and those it deferred
    v_ktaken jsonb := '{}';         -- jobs this call took, per key (its new taken totals less the old)
    v_kuntil jsonb := '{}';         -- where each key's deferred jobs end
    v_kslots jsonb := '{}';         -- the caller's slots of each key of this call's batches
    v_wait   bigint[] := '{}';      -- the jobs that wait in the caller for a slot of their key
    v_whole  boolean := p_start_all; -- new batches are marked started on their ticks
    v_krate  int;                   -- the queue's per-key rate: starts of a key
    v_kper   interval;              -- per this period (NULL: none)
    v_kat    timestamptz;           -- this call's start, for the per-key rate's windows
    v_rounds int;                   -- batches of the lane this call took
    v_req    int;                   -- the jobs it asked of the lane's last one
    v_released boolean;             -- the queue has a released lease (maybe adopted since)
    v_untick boolean := false;      -- a batch's range is read, its tick not yet written
    v_bwait  bigint[];              -- the jobs of the batch that wait in the caller
    v_marked boolean;               -- the batch's tick marks it started as a whole
BEGIN
    IF p_max_jobs IS NULL OR p_max_jobs < 1 OR p_max_bytes IS NULL OR p_max_bytes < 1 THEN
        RAISE EXCEPTION 'millrace: claim limits must be positive' USING ERRCODE = '22023';
    END IF;
    PERFORM pg_advisory_xact_lock(millrace.claim_space(), hashtext(p_queue));
    -- The snapshot of new jobs is taken before the pause is checked: a job
    -- committed after a pause is never claimed until the queue resumes.
    v_snap := pg_current_snapshot();

    -- The pause and the limits: the queue's newest state row (inline, not
    -- queue_paused: a call with settings costs more than the probe).
    SELECT s.paused, s.running, s.rate, s.rate_per, s.per_key, s.per_key_by, s.key_rate, s.key_rate_per
    INTO v_paused, v_limit, v_rate, v_per, v_per_key, v_by, v_krate, v_kper
    FROM millrace.queue_state s WHERE s.queue = p_queue ORDER BY s.id DESC LIMIT 1;
    IF v_per_key IS NOT NULL OR v_krate IS NOT NULL THEN
        -- A job that waits in the caller for its key's slot, or that its
        -- key's limits defer, is not started at its claim: no new batch
        -- is marked started as a whole; with p_start_all the jobs that
        -- start get a start row.
        v_whole := false;
        v_kat := clock_timestamp();
    ELSE
        v_by := NULL;
    END IF;
    IF v_limit IS NOT NULL THEN
        -- A running limit: the other live processes (their leases run
        -- past now: a probe of each one's newest heartbeat), this
        -- process's newest count and what the others hold (a probe of
        -- each one's newest hold row), in one statement, read once for
        -- both limits. Three statements cost a limited claim 0.2 of
        -- insert_many's time; see v_free below.
        SELECT coalesce(array_agg(p.id) FILTER (WHERE p.id <> p_owner), '{}'),
               max(h.n) FILTER (WHERE p.id = p_owner),
               coalesce(sum(h.n) FILTER (WHERE p.id <> p_owner), 0)
        INTO v_live, v_own, v_others
        FROM (SELECT p_owner AS id
              UNION ALL
              SELECT p.id FROM millrace.process p
              WHERE p.id <> p_owner
                AND (SELECT b.until FROM millrace.heartbeat b WHERE b.process = p.id ORDER BY b.id DESC LIMIT 1) > clock_timestamp()) p
        LEFT JOIN LATERAL (SELECT x.n FROM millrace.hold x WHERE x.queue = p_queue AND x.owner = p.id
                           ORDER BY x.id DESC LIMIT 1) h ON true;
    ELSE
        IF v_per_key IS NOT NULL THEN
            -- The other live processes, for the per-key limit.
            v_live := ARRAY(SELECT p.id FROM millrace.process p
                            WHERE p.id <> p_owner
                              AND (SELECT b.until FROM millrace.heartbeat b WHERE b.process = p.id ORDER BY b.id DESC LIMIT 1) > clock_timestamp());
        END IF;
        IF v_rate IS NOT NULL THEN
            SELECT x.n INTO v_own FROM millrace.hold x WHERE x.queue = p_queue AND x.owner = p_owner ORDER BY x.id DESC LIMIT 1;
        END IF;
    END IF;

    <<body>>
    BEGIN
    IF p_retry THEN
        -- The batches an earlier call with this request id took: new ticks,
        -- or an adopted one (a lease with this owner and request id). The
        -- ticks are found among the queue's (no index on owner and request:
        -- an entry per claim for a rare path).
        FOR v_tick, v_token IN
            SELECT t.tick_id, t.tick_id FROM millrace.tick t
            WHERE t.owner = p_owner AND t.req = p_req AND t.queue = p_queue AND NOT t.carried
            UNION ALL
            SELECT l.tick_id, l.token FROM millrace.lease l
            WHERE l.owner = p_owner AND l.req = p_req AND l.queue = p_queue AND l.owner <> 0
        LOOP
            SELECT h.token, h.owner INTO v_h FROM millrace.holder(v_tick) h;
            CONTINUE WHEN v_h.token <> v_token OR v_h.owner <> p_owner
                OR (SELECT count(*) FROM millrace.done d WHERE d.tick_id = v_tick) > 0;
            v_found := true;
            RETURN QUERY SELECT v_tick, v_token, b.id, b.kind, b.args, b.priority, b.attempt, b.max_attempts, b.created_at,
                                b.ready_at, b.timeout_ms, (SELECT count(*) FROM millrace.cancel c WHERE c.job_id = b.id) > 0,
                                CASE WHEN v_per_key IS NOT NULL THEN millrace.job_key(b.kind, b.args, v_by) END,
                                -- the caller's slots of the key, and every job
                                -- waiting for one (which ran at once is not known)
                                (SELECT y.s FROM (SELECT h.keys, h.slots FROM millrace.keyhold h
                                                  WHERE h.queue = p_queue AND h.owner = p_owner AND v_per_key IS NOT NULL
                                                  ORDER BY h.id DESC LIMIT 1) h
                                 CROSS JOIN LATERAL unnest(h.keys, h.slots) y(k, s)
                                 WHERE y.k = millrace.job_key(b.kind, b.args, v_by)),
                                v_per_key IS NOT NULL
                         FROM millrace.batch_jobs(v_tick) b;
            GET DIAGNOSTICS v_n = ROW_COUNT;
            v_taken := v_taken + v_n;
        END LOOP;
        IF v_found THEN
            v_replay := true;  -- the first call wrote what it holds
            EXIT body;
        END IF;
    END IF;

    IF v_limit IS NOT NULL OR v_rate IS NOT NULL THEN
        -- What this process has in hand: jobs it claimed that have not
        -- ended in it (sent with the call; else its newest count stands).
        v_held := coalesce(p_held, v_own, 0);
        v_keep := least(coalesce(v_own, 0), v_held);
    END IF;
    IF v_limit IS NOT NULL THEN
        -- A running limit: each live process holds slots (its newest
        -- count) and runs at most that many of the queue's jobs at once.
        -- This one keeps the slots it has jobs in hand for, and gets at
        -- most the limit less what every live process holds. Counts only
        -- fall between a process's claims, so the sum never understates
        -- what runs. A process whose lease ran out holds nothing: its
        -- batches go to whoever adopts them, and count there.
        -- (What the others hold was read above, under the claim lock:
        -- their counts change only at their own claims, which wait for
        -- it, and at a release, which only lowers them.)
        v_free := v_limit - v_keep - v_others;
        -- It takes jobs for those slots, and a buffer more, up to p_buffer
        -- and eight per slot (none under a rate limit, which counts a job
        -- as started at its claim): jobs that wait in the process for one
        -- of its own slots, so that a freed slot starts the next job
        -- without a claim (one per slot cost 15% of the rate at full
        -- speed against eight). Over the limit (lowered since), it takes
        -- nothing.
        v_room := CASE WHEN v_free < 0 THEN 0
                       ELSE v_keep + v_free - v_held
                            + CASE WHEN v_rate IS NULL THEN least(greatest(coalesce(p_buffer, 0), 0), 8 * (v_keep + v_free)) ELSE 0 END END;
        v_left := least(v_left, v_room);
    END IF;
    IF v_rate IS NOT NULL THEN
        -- A rate limit: at most v_rate jobs claimed in any window of
        -- rate_window(v_per) (the period and a slack for the time a job
        -- takes from its claim to its start in a process), on the
        -- server's clock: this call takes the rate less what the claims
        -- of the window before it took. Claims of the queue take turns
        -- (the claim lock), so every earlier one has committed. Each
        -- claim's row carries the queue's running total of what its
        -- claims took: the window's sum is the newest total less the one
        -- before the window's oldest claim (two probes, not a scan).
        PERFORM set_config('millrace.rate', v_rate::text, true);
        SELECT h.total INTO v_total FROM millrace.hold h
        WHERE h.queue = p_queue AND h.took > 0 ORDER BY h.at DESC LIMIT 1;
        -- The window's start is computed first: a volatile expression
        -- (clock_timestamp) in the condition is no index bound, and the
        -- probe read every claim of the queue (1.2 ms a claim).
        v_since := clock_timestamp() - millrace.rate_window(v_per);
        SELECT h.total - h.took, h.at INTO v_before, v_first FROM millrace.hold h
        WHERE h.queue = p_queue AND h.took > 0 AND h.at > v_since
        ORDER BY h.at LIMIT 1;
        v_rleft := v_rate - coalesce(v_total - v_before, 0);
        v_left := least(v_left, v_rleft);
        IF v_left <= 0 THEN
            -- When the oldest claim of the window leaves it.
            PERFORM set_config('millrace.retry_in',
                greatest(ceil(extract(epoch FROM v_first + millrace.rate_window(v_per) - clock_timestamp()) * 1000), 1)::text, true);
        END IF;
    END IF;
    IF coalesce(v_paused, false) THEN
        EXIT body;
    END IF;
    IF v_left <= 0 THEN
        EXIT body;  -- held back by a limit
    END IF;

    -- Adopt released batches; close any that turn out to be fully acked.
    -- Most queues have no released lease at all (a leader released none
    -- since the slot's last reclaim): one probe of the lease_released
    -- index says so. The probe below, with its two nested probes of
    -- newer leases and done rows, cost 21 us a call set up (8 us alone).
    PERFORM 1 FROM millrace.lease l WHERE l.queue = p_queue AND l.owner = 0 LIMIT 1;
    v_released := FOUND;
    WHILE v_released LOOP
        SELECT l.tick_id INTO v_tick FROM millrace.lease l
        WHERE l.queue = p_queue AND l.owner = 0
          AND NOT EXISTS (SELECT 1 FROM millrace.lease n WHERE n.tick_id = l.tick_id AND n.token > l.token)
          AND NOT EXISTS (SELECT 1 FROM millrace.done d WHERE d.tick_id = l.tick_id)
        ORDER BY l.tick_id LIMIT 1;
        EXIT WHEN NOT FOUND;
        -- Under a limit a released batch is adopted whole or not at all:
        -- when it does not fit, nothing is taken until it does (or, for a
        -- batch larger than a limit lowered since, until nothing runs).
        IF v_limit IS NOT NULL OR v_rate IS NOT NULL THEN
            v_batch := (SELECT count(*) FROM millrace.batch_jobs(v_tick));
            IF (v_limit IS NOT NULL AND v_free < v_limit AND v_batch > v_room)
               OR (v_rate IS NOT NULL AND v_rleft < v_rate AND v_batch > v_rleft) THEN
                EXIT body;
            END IF;
        END IF;
        PERFORM pg_advisory_xact_lock(millrace.fence_space(), (v_tick % 2147483647)::int);
        INSERT INTO millrace.lease (slot, queue, tick_id, token, owner, req)
        VALUES (millrace.current_segment(), p_queue, v_tick, nextval('millrace.tick_id_seq'), p_owner, p_req)
        RETURNING lease.token INTO v_token;
        IF v_by IS NOT NULL THEN
            -- Its jobs past what their keys allow are deferred (their
            -- holder is gone: its slots no longer count).
            v_jobs := ARRAY(SELECT b FROM millrace.batch_jobs(v_tick) b);
            SELECT d.p_taken, d.p_until, d.p_slots, d.deferred, v_wait || d.waiting INTO v_ktaken, v_kuntil, v_kslots, v_def, v_wait
            FROM millrace.key_defer(p_queue, p_owner, v_tick, v_token, v_jobs, v_per_key, v_krate, v_kper, v_by, v_live, p_pace, v_kat,
                                    v_ktaken, v_kuntil, v_kslots) d;
            IF cardinality(v_def) > 0 THEN
                PERFORM set_config('millrace.deferred', '1', true);
            END IF;
        END IF;
        -- With p_start_all every job goes to an idle worker: the adopted
        -- batch's start row (it has a tick of another claim, which its
        -- flag does not speak for) is written here, from the same rows.
        RETURN QUERY
        WITH b AS MATERIALIZED (
            SELECT b.id, b.kind, b.args, b.priority, b.attempt, b.max_attempts, b.created_at, b.ready_at, b.timeout_ms,
                   (SELECT count(*) FROM millrace.cancel c WHERE c.job_id = b.id) > 0 AS cancelled
            FROM millrace.batch_jobs(v_tick) b),
        marked AS (
            INSERT INTO millrace.start (slot, tick_id, token, jobs)
            SELECT millrace.current_segment(), v_tick, v_token, array_agg(b.id ORDER BY b.id)
            FROM b WHERE p_start_all AND NOT b.cancelled AND b.id <> ALL (v_wait)
            HAVING count(*) > 0)
        SELECT v_tick, v_token, b.id, b.kind, b.args, b.priority, b.attempt, b.max_attempts, b.created_at,
               b.ready_at, b.timeout_ms, b.cancelled, CASE WHEN v_per_key IS NOT NULL THEN b.k END, (v_kslots ->> b.k)::int, b.id = ANY (v_wait)
        FROM (SELECT b.*, millrace.job_key(b.kind, b.args, v_by) AS k FROM b) b;
        GET DIAGNOSTICS v_n = ROW_COUNT;
        IF v_n > 0 THEN
            v_taken := v_taken + v_n;
            EXIT body;
        END IF;
        INSERT INTO millrace.done (slot, queue, tick_id) VALUES (millrace.current_segment(), p_queue, v_tick);
    END LOOP;

    -- The queue's lanes with a job waiting: its distinct priorities (a
    -- skip scan of job_lane), each looked at with a few index probes
    -- (lane_first). A claim's cost grows with the lanes it looks at, so it
    -- looks at a bounded number whatever the number of lanes (5,000 lanes
    -- of one job each made a claim of 10 take a second): in priority
    -- order until v_want have a job waiting (as many as the claim may take
    -- jobs, at most v_examine) or v_examine were looked at;
    -- and, if that did not reach the last lane, as many again in the
    -- lanes past them, a window at a time, so that every lane is looked
    -- at now and then and the starvation rule below reaches it.
    -- One lane (the common case): no need to look at it first.
    SELECT j.priority INTO v_lane FROM millrace.job j WHERE j.queue = p_queue ORDER BY j.priority LIMIT 1;
    IF NOT FOUND THEN
        EXIT body;
    END IF;
    IF NOT EXISTS (SELECT 1 FROM millrace.job j WHERE j.queue = p_queue AND j.priority > v_lane) THEN
        -- An empty claim's short cut (most claims of a queue that several
        -- processes work are woken by a job another claim took): the
        -- lane's newest tick was not cut at a cap, and no job of the lane
        -- that v_asked sees is past it (committed after its snapshot, or
        -- in flight then): every job committed before this call began is
        -- in a batch. Jobs committed since come with their own wake (a
        -- notification, or the local insert's), so the claim returns
        -- nothing, by the same index probes lane_take would make, without
        -- lane_take's calls and a tick id. Written as ordered LIMIT 1
        -- probes, as lanes_waiting's: an EXISTS may be planned as a scan.
        SELECT t.snap, t.more, t.owner INTO v_lsnap, v_lmore, v_lowner
        FROM millrace.tick t WHERE t.queue = p_queue AND t.priority = v_lane ORDER BY t.tick_id DESC LIMIT 1;
        -- Read under the claim lock, it is the lane's newest tick when the
        -- lane is taken below: a range not cut at a cap (or none) lets the
        -- take go without lane_take, which would read it again.
        v_lread := NOT coalesce(v_lmore, false);
        IF FOUND AND NOT v_lmore
           AND (SELECT j.id FROM millrace.job j WHERE j.queue = p_queue AND j.priority = v_lane
                  AND j.txid >= pg_snapshot_xmax(v_lsnap) AND j.txid < pg_snapshot_xmax(v_asked)
                  AND pg_visible_in_snapshot(j.txid, v_asked)
                ORDER BY j.txid, j.id LIMIT 1) IS NULL
           AND (SELECT f.id FROM pg_snapshot_xip(v_lsnap) xp(txid)
                CROSS JOIN LATERAL (SELECT j.id FROM millrace.job j  -- a probe per xid
                                    WHERE j.queue = p_queue AND j.priority = v_lane AND j.txid = xp.txid
                                    ORDER BY j.id LIMIT 1) f
                WHERE pg_visible_in_snapshot(xp.txid, v_asked)
                LIMIT 1) IS NULL THEN
            -- Which process took the newest batch, for the caller to read
            -- in this transaction (millrace.claimed_by): a claimer that
            -- keeps finding another's batch there answers announcements
            -- later (internal/pool, the yield).
            PERFORM set_config('millrace.claimed_by', v_lowner::text, true);
            EXIT body;
        END IF;
        v_lanes := ARRAY[v_lane];
    ELSE
        SELECT coalesce(array_agg(w.priority ORDER BY w.priority), '{}'), coalesce(array_agg(w.ready_at ORDER BY w.priority), '{}'), coalesce(array_agg(w.served_at ORDER BY w.priority), '{}')
        INTO v_lp, v_lr, v_ls FROM millrace.lanes_waiting(p_queue, v_snap, 0::smallint, v_examine, v_want) w;
        IF cardinality(v_lp) >= v_examine OR cardinality(array_remove(v_lr, NULL)) >= v_want THEN
            v_lane := v_lp[cardinality(v_lp)];
            SELECT j.priority INTO v_n FROM millrace.job j WHERE j.queue = p_queue ORDER BY j.priority DESC LIMIT 1;
            IF v_n > v_lane THEN
                -- The rest of the lanes is swept a window at a time, from where
                -- this session's previous window of the queue ended (a random
                -- priority the first time): every lane is looked at within
                -- (lanes / v_examine) claims of a session. The position is a
                -- session setting, so no row is written; any value is only a
                -- starting point.
                v_key := hashtext(p_queue)::text || ':';
                v_cursor := coalesce(current_setting('millrace.lanes', true), '');
                SELECT substr(e, length(v_key) + 1)::int INTO v_from
                FROM unnest(string_to_array(v_cursor, ',')) e WHERE starts_with(e, v_key) LIMIT 1;
                IF v_from IS NULL THEN
                    v_from := v_lane + 1 + floor(random() * (v_n - v_lane))::int;
                ELSIF v_from <= v_lane OR v_from > v_n THEN
                    v_from := v_lane + 1;
                END IF;
                SELECT v_lp || coalesce(array_agg(w.priority ORDER BY w.priority), '{}'),
                       v_lr || coalesce(array_agg(w.ready_at ORDER BY w.priority), '{}'),
                       v_ls || coalesce(array_agg(w.served_at ORDER BY w.priority), '{}'), count(*), max(w.priority)
                INTO v_lp, v_lr, v_ls, v_n, v_to
                FROM millrace.lanes_waiting(p_queue, v_snap, v_from::smallint, v_examine, v_want) w;
                IF v_n < v_examine AND (v_to IS NULL OR NOT EXISTS (SELECT 1 FROM millrace.job j WHERE j.queue = p_queue AND j.priority > v_to)) THEN
                    -- The window reached the last lane: go on from the first past the top ones.
                    SELECT v_lp || coalesce(array_agg(w.priority ORDER BY w.priority), '{}'),
                           v_lr || coalesce(array_agg(w.ready_at ORDER BY w.priority), '{}'),
                           v_ls || coalesce(array_agg(w.served_at ORDER BY w.priority), '{}'), max(w.priority)
                    INTO v_lp, v_lr, v_ls, v_to
                    FROM millrace.lanes_waiting(p_queue, v_snap, (v_lane + 1)::smallint, v_examine - v_n, v_want) w
                    WHERE w.priority < v_from;
                END IF;
                PERFORM set_config('millrace.lanes', array_to_string(ARRAY(
                    SELECT x FROM (SELECT v_key || (coalesce(v_to, v_lane) + 1) AS x, 0 AS o
                                   UNION ALL
                                   SELECT e, o FROM unnest(string_to_array(v_cursor, ',')) WITH ORDINALITY AS u(e, o)
                                   WHERE NOT starts_with(e, v_key)) c
                    ORDER BY c.o LIMIT 16), ','), false);
            END IF;
        END IF;
        -- A lane is starving when it has a job waiting and has not been
        -- served for p_starve (or its first job has waited that long and it
        -- was never served): starving lanes first, the longest unserved
        -- first; then by priority. A starving lane is served one batch, which
        -- makes it not starving for another p_starve.
        SELECT coalesce(array_agg(x.p ORDER BY x.starving DESC, CASE WHEN x.starving THEN x.since END, x.p), '{}') INTO v_lanes
        FROM (SELECT DISTINCT w.priority AS p, greatest(w.ready_at, w.served_at) AS since,
                     coalesce(greatest(w.ready_at, w.served_at) < clock_timestamp() - p_starve, false) AS starving
              FROM unnest(v_lp, v_lr, v_ls) AS w(priority, ready_at, served_at) WHERE w.ready_at IS NOT NULL) x;
    END IF;
    FOREACH v_lane IN ARRAY v_lanes LOOP
        EXIT WHEN v_left <= 0 OR v_bytes <= 0;
        v_rounds := 0;
        <<lane>>
        LOOP
            v_tick := nextval('millrace.tick_id_seq');
            IF cardinality(v_lanes) = 1 AND v_by IS NULL THEN
                -- One lane (the common case): its jobs go out as lane_take
                -- returns them, in one statement, rather than copied a column
                -- at a time (twelve assignments a job, most of a large claim's
                -- own time). Their cancellations are looked up in one index
                -- scan for all of them (a probe per job was a third of a
                -- 500-job claim's time), and matched in a hash of the few
                -- found.
                IF v_lread THEN
                    -- The lane's newest tick was read above and ends a range
                    -- (or there is none): lane_take's second pass, inline.
                    -- The jobs committed since that tick and visible in
                    -- v_snap, and their tick, in this one statement: no
                    -- call of lane_take (its SET clauses, a copy of each
                    -- row) and no second read of the tick.
                    RETURN QUERY
                    WITH r AS MATERIALIZED (
                        SELECT * FROM millrace.range_jobs(p_queue, v_lane, coalesce(v_lsnap, '1:1:'::pg_snapshot), v_snap,
                                                          NULL, NULL, NULL, NULL, v_left, v_bytes) WITH ORDINALITY AS r),
                    t AS (
                        INSERT INTO millrace.tick (slot, queue, priority, tick_id, prev_snap, snap, after_txid, after_id, upto_txid, upto_id,
                                                   more, owner, req, njobs, started)
                        SELECT millrace.current_segment(), p_queue, v_lane, v_tick, coalesce(v_lsnap, '1:1:'::pg_snapshot), v_snap, NULL, NULL,
                               l.txid, l.id, s.n >= v_left OR s.b >= v_bytes, p_owner, p_req, s.n, v_whole
                        FROM (SELECT count(*)::int AS n, sum(octet_length(r.args::text)) AS b FROM r) s,
                             (SELECT r.txid, r.id FROM r ORDER BY r.ordinality DESC LIMIT 1) l),
                    x AS MATERIALIZED (
                        SELECT c.job_id FROM millrace.cancel c WHERE c.job_id = ANY (ARRAY(SELECT r.id FROM r)))
                    SELECT v_tick, v_tick, r.id, r.kind, r.args, r.priority, r.attempt, r.max_attempts, r.created_at,
                           r.ready_at, r.timeout_ms, r.id IN (SELECT x.job_id FROM x), NULL::text, NULL::int, false
                    FROM r ORDER BY r.ordinality;
                ELSE
                    RETURN QUERY
                    WITH r AS MATERIALIZED (
                        SELECT * FROM millrace.lane_take(p_queue, v_lane, v_snap, v_tick, p_owner, p_req, v_left, v_bytes, false, v_whole)
                                      WITH ORDINALITY AS r),
                    x AS MATERIALIZED (
                        SELECT c.job_id FROM millrace.cancel c WHERE c.job_id = ANY (ARRAY(SELECT r.id FROM r)))
                    SELECT v_tick, v_tick, r.id, r.kind, r.args, r.priority, r.attempt, r.max_attempts, r.created_at,
                           r.ready_at, r.timeout_ms, r.id IN (SELECT x.job_id FROM x), NULL::text, NULL::int, false
                    FROM r ORDER BY r.ordinality;
                END IF;
                GET DIAGNOSTICS v_n = ROW_COUNT;
                v_taken := v_taken + v_n;
                EXIT body;
            END IF;
            v_n := 0;
            v_def := '{}';
            v_req := v_left;
            IF v_lread THEN
                -- The lane's newest tick was read above and ends a range
                -- (or there is none; a queue of one lane, here under a
                -- per-key limit or rate: without one the path above takes
                -- the batch): its jobs since then, without lane_take's
                -- call and second read of the tick. Their tick is written
                -- below, after key_defer, which decides whether a job
                -- waits. The call's next rounds follow this tick
                -- (lane_take).
                v_lread := false;
                v_jobs := ARRAY(SELECT ROW(r.slot, r.id, r.queue, r.kind, r.args, r.priority, r.attempt, r.max_attempts, r.created_at,
                                           r.txid, r.ready_at, r.timeout_ms)::millrace.job
                                FROM millrace.range_jobs(p_queue, v_lane, coalesce(v_lsnap, '1:1:'::pg_snapshot), v_snap,
                                                         NULL, NULL, NULL, NULL, v_left, v_bytes) WITH ORDINALITY AS r
                                ORDER BY r.ordinality);
                v_untick := cardinality(v_jobs) > 0;
            ELSE
                v_jobs := ARRAY(SELECT r FROM millrace.lane_take(p_queue, v_lane, v_snap, v_tick, p_owner, p_req, v_left, v_bytes, false, v_whole) r);
            END IF;
            EXIT lane WHEN cardinality(v_jobs) = 0;
            v_bwait := '{}';
            IF v_by IS NOT NULL THEN
                -- A per-key limit or rate: the batch's jobs past what their
                -- keys allow are deferred (key_defer); the others go out.
                SELECT d.p_taken, d.p_until, d.p_slots, d.deferred, d.waiting INTO v_ktaken, v_kuntil, v_kslots, v_def, v_bwait
                FROM millrace.key_defer(p_queue, p_owner, v_tick, v_tick, v_jobs, v_per_key, v_krate, v_kper, v_by, v_live, p_pace, v_kat,
                                        v_ktaken, v_kuntil, v_kslots) d;
                v_wait := v_wait || v_bwait;
            END IF;
            v_marked := false;
            IF v_untick THEN
                -- The batch's tick (its range read above), marked started
                -- as a whole when every job goes to an idle worker and none
                -- waits in the caller (a deferred job has its ack, written
                -- by key_defer).
                v_untick := false;
                v_marked := p_start_all AND cardinality(v_bwait) = 0;
                INSERT INTO millrace.tick (slot, queue, priority, tick_id, prev_snap, snap, after_txid, after_id, upto_txid, upto_id,
                                           more, owner, req, njobs, started)
                SELECT millrace.current_segment(), p_queue, v_lane, v_tick, coalesce(v_lsnap, '1:1:'::pg_snapshot), v_snap, NULL, NULL,
                       (v_jobs[cardinality(v_jobs)]).txid, (v_jobs[cardinality(v_jobs)]).id,
                       cardinality(v_jobs) >= v_left OR (SELECT sum(octet_length(u.args::text)) FROM unnest(v_jobs) u) >= v_bytes,
                       p_owner, p_req, cardinality(v_jobs), v_marked;
            END IF;
            IF v_by IS NOT NULL THEN
                IF cardinality(v_def) > 0 AND cardinality(v_def) = cardinality(v_jobs) THEN
                    -- Nothing of it goes out: it is done here.
                    INSERT INTO millrace.done (slot, queue, tick_id) VALUES (millrace.current_segment(), p_queue, v_tick);
                END IF;
                IF cardinality(v_def) > 0 THEN
                    PERFORM set_config('millrace.deferred', '1', true);
                END IF;
                IF p_start_all AND NOT v_marked THEN
                    -- Every job that does not wait goes to an idle worker.
                    -- Their cancellations in one index scan (a probe a job
                    -- was most of a 100-job batch's start row).
                    INSERT INTO millrace.start (slot, tick_id, token, jobs)
                    SELECT millrace.current_segment(), v_tick, v_tick, array_agg(x.id ORDER BY x.id)
                    FROM unnest(v_jobs) x
                    WHERE x.id <> ALL (v_def) AND x.id <> ALL (v_wait)
                      AND x.id <> ALL (ARRAY(SELECT c.job_id FROM millrace.cancel c
                                             WHERE c.job_id = ANY (ARRAY(SELECT u.id FROM unnest(v_jobs) u))))
                    HAVING count(*) > 0;
                END IF;
            END IF;
            -- The batch's jobs that go out, in one statement (a row at a
            -- time was seventeen assignments and a probe of cancel a job):
            -- their cancellations in one index scan, as the one-lane path.
            RETURN QUERY
            WITH x AS MATERIALIZED (
                SELECT c.job_id FROM millrace.cancel c WHERE c.job_id = ANY (ARRAY(SELECT u.id FROM unnest(v_jobs) u)))
            SELECT v_tick, v_tick, u.id, u.kind, u.args, u.priority, u.attempt, u.max_attempts, u.created_at,
                   u.ready_at, u.timeout_ms, u.id IN (SELECT x.job_id FROM x), k.k, (v_kslots ->> k.k)::int, u.id = ANY (v_wait)
            FROM unnest(v_jobs) WITH ORDINALITY AS u(slot, id, queue, kind, args, priority, attempt, max_attempts, created_at, txid,
                                                     ready_at, timeout_ms, ord)
            CROSS JOIN LATERAL (SELECT CASE WHEN v_per_key IS NOT NULL THEN millrace.job_key(u.kind, u.args, v_by) END AS k) k
            WHERE u.id <> ALL (v_def)
            ORDER BY u.ord;
            GET DIAGNOSTICS v_n = ROW_COUNT;
            IF v_n > 0 AND (cardinality(v_lanes) > 1 OR cardinality(v_def) > 0) THEN
                -- What is left of the call's bytes, for another lane or a
                -- round after deferred jobs (the only ways it goes on).
                v_bytes := v_bytes - (SELECT sum(octet_length(u.args::text)) FROM unnest(v_jobs) u WHERE u.id <> ALL (v_def));
            END IF;
            v_left := v_left - v_n;
            v_taken := v_taken + v_n;
            -- Under a per-key limit or rate, a full batch whose jobs were
            -- deferred leaves room in the call: the lane's next batch goes
            -- in the same call (at most 32), so that other keys' jobs
            -- behind a backlog of one key are reached within a claim or
            -- two rather than a claim per batch of deferred jobs. For at
            -- most 50 ms of the call, and under a per-key rate half its
            -- window's slack: the jobs the call took start when it
            -- commits, and the rate counts them at its start.
            v_rounds := v_rounds + 1;
            EXIT lane WHEN v_by IS NULL OR cardinality(v_def) = 0 OR v_rounds >= 32
                OR cardinality(v_jobs) < v_req OR v_left <= 0 OR v_bytes <= 0
                OR clock_timestamp() - v_kat > least(interval '50 ms', (millrace.rate_window(v_kper) - v_kper) / 2);
        END LOOP lane;
    END LOOP;
    END body;

    -- What this process now holds of a limited queue, for the next claims
    -- of every process: written when it changed, and under a rate limit
    -- for every claim that took jobs (the rate's running total). Under a
    -- running limit, its slots: those it keeps and those it got, no more
    -- than its jobs in hand (a claim that took as many as ended since the
    -- last one writes nothing: at 800 jobs/s with one or two jobs a
    -- claim, most of them); under a rate limit alone, its jobs in hand.
    -- The replay of a lost reply returns the first call's batches, whose
    -- row stands.
    IF v_replay THEN
        v_slots := v_own;
    ELSIF v_limit IS NOT NULL OR v_rate IS NOT NULL THEN
        v_slots := CASE WHEN v_limit IS NOT NULL THEN least(v_keep + greatest(v_free, 0), v_held + v_taken)
                        ELSE v_held + v_taken END;
        IF (v_rate IS NOT NULL AND v_taken > 0) OR v_slots IS DISTINCT FROM v_own THEN
            INSERT INTO millrace.hold (slot, queue, owner, n, took, total, at)
            VALUES (millrace.current_segment(), p_queue, p_owner, v_slots,
                    CASE WHEN v_rate IS NOT NULL THEN v_taken ELSE 0 END,
                    CASE WHEN v_rate IS NOT NULL THEN coalesce(v_total, 0) + v_taken ELSE 0 END, clock_timestamp());
        END IF;
    END IF;
    IF v_per_key IS NOT NULL AND v_kslots <> '{}' AND NOT v_replay THEN
        -- The process's new map of its keys: the jobs this call took of
        -- each key of its batches, its slots of the key, and where the
        -- key's deferred jobs end (a row only when the map changed).
        PERFORM millrace.keyhold_put(p_queue, p_owner, array_agg(u.k),
                                     array_agg(coalesce((v_ktaken ->> u.k)::int, 0)),
                                     array_agg((v_kslots ->> u.k)::int), array_agg((v_kuntil ->> u.k)::timestamptz))
        FROM jsonb_object_keys(v_kslots) u(k);
    END IF;
    IF v_krate IS NOT NULL AND NOT v_replay AND (v_ktaken <> '{}' OR v_kuntil <> '{}') THEN
        -- What this call took of each rate-limited key (the key's running
        -- total grows by it), and where the key's deferred jobs end: a row
        -- per key it took or deferred jobs of, at the call's end (its jobs
        -- start once it commits: counted from its start, a long call's
        -- jobs started late in the window after it, and a process saw 102
        -- starts of a key in a second under 100/1s).
        INSERT INTO millrace.keyrate (slot, queue, key, took, total, until, at)
        SELECT millrace.current_segment(), p_queue, u.k, coalesce((v_ktaken ->> u.k)::int, 0),
               coalesce(o.total, 0) + coalesce((v_ktaken ->> u.k)::int, 0), greatest(o.until, (v_kuntil ->> u.k)::timestamptz),
               clock_timestamp()
        FROM (SELECT jsonb_object_keys(v_ktaken) UNION SELECT jsonb_object_keys(v_kuntil)) u(k)
        LEFT JOIN LATERAL (SELECT x.total, x.until FROM millrace.keyrate x WHERE x.queue = p_queue AND x.key = u.k
                           ORDER BY x.at DESC LIMIT 1) o ON true;
    END IF;
    IF v_limit IS NOT NULL THEN
        -- The slots: at most so many of the queue's jobs run in this
        -- process at once (millrace.slots).
        PERFORM set_config('millrace.limit', v_limit::text, true);
        PERFORM set_config('millrace.slots', coalesce(v_slots, 0)::text, true);
    END IF;
    -- A limit bound this call: it took all the limit left (nothing, when
    -- the live processes hold it all or the rate's window is full).
    IF (v_room IS NOT NULL AND v_taken >= v_room) OR (v_rleft IS NOT NULL AND v_taken >= v_rleft) THEN
        PERFORM set_config('millrace.full', '1', true);
    END IF;
END $function$;
COMMENT ON FUNCTION millrace.claim(p_queue text, p_owner integer, p_req bigint, p_retry boolean, p_max_jobs integer, p_max_bytes bigint, p_starve interval, p_start_all boolean, p_held integer, p_buffer integer, p_pace interval) IS
    'claim hands process p_owner its next jobs of p_queue, in this order: 1. with p_retry, the batches an earlier call with the same p_req committed but whose reply was lost (found by owner and request id); 2. nothing if the queue is paused; 3. a batch released by the leader (its holder died or got stuck): any claimer of the queue adopts it under a new, higher token; 4. the next jobs of each lane (priority) of the queue, lanes in priority order (lower number first) except that lanes whose first waiting job has been ready longer than p_starve come first, oldest first: at most p_max_jobs jobs and p_max_bytes bytes of args in all, one batch per lane served. A claim looks at a bounded number of lanes whatever their number: in priority order until as many as it may take jobs (at most 256) have a job waiting or 256 were looked at, and as many in the lanes past those when the queue has more, a window at a time from where the session''s previous window ended (each lane is looked at within lanes/256 claims of a session, and served first once it starves; the position is a session setting, millrace.lanes, so an idle poll still writes nothing). cancelled marks a job cancelled before it ran: the claimer acks it cancelled without running it. Claims of one queue are serialized by an advisory lock in their own key space. An idle poll writes nothing. p_start_all marks the new batches started as a whole (their ticks) and an adopted batch by its start row, for a caller that starts every job it takes at once (claim_start). A claim of a one-lane queue whose newest batch was not cut at a cap, and that has no job past that batch in the call''s own first snapshot (taken before the lock), returns nothing at once: every job committed before the call is in a batch, and a job committed since comes with its own notification. It then sets millrace.claimed_by, for the rest of the transaction, to the process that took that batch. A queue with a running limit (set_limit) gives each live process slots, its newest count in millrace.hold: the process runs at most that many of the queue''s jobs at once. A claim keeps the caller''s slots that it has jobs in hand for (p_held: jobs it claimed that have not ended in it; NULL: its newest count stands), adds at most the limit less what the live processes hold, and takes jobs for its slots and a buffer more (up to p_buffer and eight per slot), which wait in the process for one of its slots (none under a rate limit, nothing while the queue is over a lowered limit); it writes the caller''s new count and sets millrace.slots to it for the rest of the transaction; a released batch is adopted only whole. A queue with a rate limit is claimed up to the rate less what the claims of the window before took (hold.took, at each claim''s time on the server''s clock; the window is rate_window of the period). It then sets millrace.limit to the limit and millrace.rate to the rate for the rest of the transaction, millrace.full to 1 when a limit bound it (it took all a limit left, maybe nothing), and millrace.retry_in to the milliseconds until the rate''s window has room again. A queue with a per-key limit (set_limit) counts, per live process and key, the least of its slots of the key and the jobs it took less those that ended in it (millrace.keyhold: each process''s newest map of its keys, written by its claims and flushes, key_held): a claim gives the caller slots of each key of its batches up to the limit less what the other live processes count, takes the key''s jobs its slots have room for and a buffer of up to eight per slot that waits in the caller for one of them (waits; a job that waits is not marked started, and no new batch is marked started as a whole: with p_start_all the others get a start row), and defers the rest to the schedule (key_defer, paced by p_pace, the time a job of the key holds its slot in the caller), setting millrace.deferred to 1 for the rest of the transaction; key is each job''s key and key_slots the caller''s slots of it (NULL without a per-key limit). A queue with a per-key rate (set_limit) claims each key''s jobs up to the rate less what the claims of the key''s window took (millrace.keyrate: per claim and key, what it took and the key''s running total, at the call''s end, when its jobs start) and defers the rest to the schedule, the rate''s worth every window after the key''s deferred jobs; a row per key it took or deferred jobs of.';

CREATE OR REPLACE FUNCTION millrace.claim_start(p_queue text, p_owner integer, p_req bigint, p_retry boolean, p_max_jobs integer, p_max_bytes bigint, p_starve interval, p_start integer, p_held integer DEFAULT NULL::integer, p_buffer integer DEFAULT 0, p_pace interval DEFAULT NULL::interval)
 RETURNS TABLE(tick_id bigint, token bigint, id bigint, kind text, args jsonb, priority smallint, attempt integer, max_attempts integer, created_at timestamp with time zone, ready_at timestamp with time zone, timeout_ms integer, cancelled boolean, key text, key_slots integer, waits boolean)
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
 SET jit TO 'off'
 SET plan_cache_mode TO 'force_generic_plan'
AS $function$
#variable_conflict use_column
BEGIN
    -- One generic plan per statement (plan_cache_mode): see claim.
    IF NOT coalesce(p_retry, false) AND (coalesce(p_start, 0) <= 0 OR p_start >= p_max_jobs) THEN
        -- No start row to write here: none (every job goes to a busy
        -- worker), or every job to an idle one, which the claim marks
        -- itself (new batches on their ticks, an adopted one by its row).
        -- The claim's rows go out as they are, and an empty claim (most
        -- of the claims of a queue that several processes work) plans
        -- and runs no insert.
        RETURN QUERY SELECT * FROM millrace.claim(p_queue, p_owner, p_req, false, p_max_jobs, p_max_bytes, p_starve, coalesce(p_start > 0, false), p_held, p_buffer, p_pace);
        RETURN;
    END IF;
    -- One statement: the claim's rows, numbered in the order it returns
    -- them, go out as they are, and the first p_start that are not
    -- cancelled get their start marks (one row per batch), rather than a
    -- loop that copies every job a column at a time. When every job the
    -- claim may take goes to an idle worker (p_start >= p_max_jobs), its
    -- new batches are marked started on their ticks, and only adopted
    -- batches get start rows.
    RETURN QUERY
    WITH c AS MATERIALIZED (
        SELECT x.tick_id, x.token, x.id, x.kind, x.args, x.priority, x.attempt, x.max_attempts, x.created_at,
               x.ready_at, x.timeout_ms, x.cancelled, x.key, x.key_slots, x.waits, x.n
        FROM millrace.claim(p_queue, p_owner, p_req, p_retry, p_max_jobs, p_max_bytes, p_starve, coalesce(p_start >= p_max_jobs, false), p_held, p_buffer, p_pace)
             WITH ORDINALITY AS x(tick_id, token, id, kind, args, priority, attempt, max_attempts, created_at,
                                  ready_at, timeout_ms, cancelled, key, key_slots, waits, n)),
    marked AS (
        INSERT INTO millrace.start (slot, tick_id, token, jobs)
        SELECT millrace.current_segment(), f.tick_id, f.token, array_agg(f.id ORDER BY f.id)
        FROM (SELECT c.tick_id, c.token, c.id FROM c WHERE NOT c.cancelled AND NOT c.waits
              ORDER BY c.n LIMIT coalesce(greatest(p_start, 0), 0)) f
        -- A new batch the claim marked started as a whole needs no row. Its
        -- tick, written by the claim inside this statement, is not visible
        -- to this statement's snapshot (the probe finds none: it was made
        -- with the flag); the replay of a lost reply returns the first
        -- call's batches, committed and visible, whose flag decides.
        WHERE NOT (coalesce(p_start >= p_max_jobs, false) AND f.token = f.tick_id
                   AND coalesce((SELECT t.started FROM millrace.tick t WHERE t.tick_id = f.tick_id AND NOT t.carried LIMIT 1), true))
        GROUP BY f.tick_id, f.token)
    SELECT c.tick_id, c.token, c.id, c.kind, c.args, c.priority, c.attempt, c.max_attempts, c.created_at,
           c.ready_at, c.timeout_ms, c.cancelled, c.key, c.key_slots, c.waits
    FROM c ORDER BY c.n;
END $function$;
COMMENT ON FUNCTION millrace.claim_start(p_queue text, p_owner integer, p_req bigint, p_retry boolean, p_max_jobs integer, p_max_bytes bigint, p_starve interval, p_start integer, p_held integer, p_buffer integer, p_pace interval) IS
    'claim_start is claim, and the start marks (mark_started) of the first p_start jobs it returns that are not cancelled: the claimer passes the number of its idle workers, which start those jobs at once, so that they need no mark of their own. With p_start at least p_max_jobs every job goes to an idle worker, and a new batch is marked started as a whole on its tick, with no start row. The jobs it hands to busy workers wait in the process and are marked when they start. p_held, p_buffer and p_pace are claim''s: the jobs of a limited queue the caller has in hand, how many it may take beyond its slots, and the pace of the jobs a per-key limit defers.';
