-- Back to version 6: history_v6 holds its time in its body again, and the
-- tables of version 7 go. The other functions keep the bodies version 7
-- applied, which are version 6's, except where a block below (one per fix
-- of version 7) says otherwise.
DO $$
BEGIN
    EXECUTE format('CREATE OR REPLACE FUNCTION millrace.history_v6() RETURNS timestamptz LANGUAGE sql IMMUTABLE'
                   ' SET search_path = pg_catalog, pg_temp AS $f$ SELECT to_timestamp(%s) $f$',
                   extract(epoch FROM (SELECT at FROM millrace.mark WHERE name = 'history_v6')));
END $$;
DROP TABLE millrace.mark;
DROP TABLE millrace.function_set;

-- Issue 20.9, reverted: expire_history takes its durations again (version
-- 6's body), and the settings go.
DROP FUNCTION millrace.set_retention(interval, interval);
DROP FUNCTION millrace.retention();
DROP FUNCTION millrace.setting_value(text);
DROP FUNCTION millrace.expire_history();
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
            EXECUTE format('LOCK TABLE millrace.%I, millrace.%I IN ACCESS EXCLUSIVE MODE NOWAIT', 'finished_' || b, 'tally_' || b);
            EXECUTE format('TRUNCATE millrace.%I, millrace.%I', 'finished_' || b, 'tally_' || b);
            v_n := v_n + 1;
        EXCEPTION WHEN lock_not_available THEN
            NULL;
        END;
    END LOOP;
    DELETE FROM millrace.periodic p WHERE p.at < now() - interval '7 days';
    RETURN v_n;
END $$;
REVOKE EXECUTE ON FUNCTION millrace.expire_history(interval, interval) FROM PUBLIC;
DO $$
BEGIN
    IF EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'millrace_worker') THEN
        GRANT EXECUTE ON FUNCTION millrace.expire_history(interval, interval) TO millrace_worker;
    END IF;
END $$;
DROP TABLE millrace.setting;

-- Issue 20.11, reverted: retry keeps no record (version 6's body).
CREATE OR REPLACE FUNCTION millrace.retry(p_id bigint) RETURNS text
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp SET jit = off AS $$
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
DROP FUNCTION millrace.retry_space();
DROP TABLE millrace.retried;

-- Issue 20.12: nothing to revert. due_shown stays (live_jobs, live_job and
-- insert_many, as version 7 left them, call it), and so do the due times
-- moved into years 1 to 9999.

-- Issue 20.7: nothing to revert (claims count args by their text).

-- Issue 20.6: nothing to revert (a reclaim forgets idle lanes).
