-- millrace storage protocol, version 2: the claim takes its snapshot before
-- it reads the current segment.
--
-- Version 1 read the segment first. A rotation committing between that read
-- and the snapshot sent producers to the new segment; their jobs could be
-- visible in the claim's snapshot but outside the segments it read, and the
-- next claim started after that snapshot, so those jobs were never claimed.
-- Reading the segment after the snapshot closes the gap: the segment read is
-- at least as new as the snapshot, and jobs of a segment that became current
-- later are not yet visible in it.

-- claim takes the next batch of a queue for process p_owner: the jobs
-- committed after the queue's previous tick and before a snapshot taken now
-- (P4). It inserts the tick only when the batch is not empty, so idle polls
-- write nothing. Ticks of one queue are serialized by a transaction-level
-- advisory lock. Only the current and previous segments are read: the next
-- segment is drained before it becomes current, so a claim never waits for
-- its TRUNCATE.
CREATE OR REPLACE FUNCTION millrace.claim(p_queue text, p_owner int)
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
