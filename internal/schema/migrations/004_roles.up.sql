-- millrace storage protocol, version 4: least privilege.
--
-- Nobody but the schema's owner writes a table of the schema: producers
-- and workers call functions (SECURITY DEFINER, pinned search_path), so no
-- role they run as can write a txid, a slot or a lease, or TRUNCATE a
-- partition. Three roles carry the grants (docs/security.md):
--   millrace_producer  enqueue (enqueue, enqueue_many) and read the schema version
--   millrace_worker    what a worker process needs: claim, flush, register,
--                      release, maintenance when it leads, the read surface
--   millrace_admin     the worker's rights, plus reading every table and
--                      pruning millrace.discarded (operator actions)
-- Migrations run as the owner of the schema.

-- register records a client process and takes its liveness lock in the
-- caller's session (the lock belongs to the session, not to the function).
CREATE FUNCTION millrace.register(p_name text, p_host text, p_pid int) RETURNS int
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp SET jit = off AS $$
DECLARE
    v_id int := nextval('millrace.process_id_seq')::int;
BEGIN
    -- Lock first, then insert: a registered row is never seen unlocked
    -- while its process lives.
    PERFORM pg_advisory_lock(millrace.lock_space(), v_id);
    INSERT INTO millrace.process (id, name, host, pid) VALUES (v_id, left(p_name, 200), left(p_host, 200), p_pid);
    RETURN v_id;
END $$;

-- release gives the open batches held by process p_owner back to any
-- claimer of their queue at once (a stopping process calls it for the jobs
-- it did not finish), instead of waiting for the leader to see it gone.
CREATE FUNCTION millrace.release(p_owner int) RETURNS int
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp SET jit = off AS $$
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
    RETURN v_n;
END $$;

-- schema_version is the newest migration applied.
CREATE FUNCTION millrace.schema_version() RETURNS int
LANGUAGE sql STABLE SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
    SELECT coalesce(max(version), 0) FROM millrace.migration
$$;

-- Nothing is granted to PUBLIC: not the tables, not the sequences, not the
-- functions (Postgres grants EXECUTE on new functions to PUBLIC).
REVOKE ALL ON ALL TABLES IN SCHEMA millrace FROM PUBLIC;
REVOKE ALL ON ALL SEQUENCES IN SCHEMA millrace FROM PUBLIC;
REVOKE EXECUTE ON ALL FUNCTIONS IN SCHEMA millrace FROM PUBLIC;

DO $$
DECLARE
    r text;
BEGIN
    FOREACH r IN ARRAY ARRAY['millrace_producer', 'millrace_worker', 'millrace_admin'] LOOP
        IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = r) THEN
            BEGIN
                EXECUTE format('CREATE ROLE %I NOLOGIN', r);
            EXCEPTION
                WHEN duplicate_object OR unique_violation THEN
                    NULL;  -- another database of this cluster created it meanwhile
                WHEN insufficient_privilege THEN
                    RAISE NOTICE 'millrace: cannot create role % (no CREATEROLE); create it and run the grants in docs/security.md', r;
            END;
        END IF;
    END LOOP;
    IF EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'millrace_producer') THEN
        GRANT USAGE ON SCHEMA millrace TO millrace_producer;
        GRANT EXECUTE ON FUNCTION
            millrace.enqueue(text, jsonb, text, int, timestamptz, int, boolean),
            millrace.enqueue_many(text[], jsonb[], text[], int[], timestamptz[], int[], boolean),
            millrace.schema_version()
        TO millrace_producer;
        GRANT SELECT ON millrace.migration TO millrace_producer;
    END IF;
    IF EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'millrace_worker') THEN
        GRANT USAGE ON SCHEMA millrace TO millrace_worker;
        GRANT EXECUTE ON FUNCTION
            millrace.enqueue(text, jsonb, text, int, timestamptz, int, boolean),
            millrace.enqueue_many(text[], jsonb[], text[], int[], timestamptz[], int[], boolean),
            millrace.schema_version(),
            millrace.claim(text, int, bigint, boolean, int, bigint),
            millrace.flush(int, bigint, bigint[], bigint[], bigint[], smallint[], int[], text[], timestamptz[], text[],
                           text[], jsonb[], smallint[], int[], timestamptz[], bigint[], bigint[], text[], boolean),
            millrace.register(text, text, int),
            millrace.release(int),
            millrace.rescue(interval),
            millrace.rotate(interval, bigint),
            millrace.promote(bigint),
            millrace.ring_stats(),
            millrace.live_jobs(),
            millrace.queue_counts()
        TO millrace_worker;
        GRANT SELECT ON millrace.migration, millrace.jobs TO millrace_worker;
    END IF;
    IF EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'millrace_admin')
       AND EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'millrace_worker') THEN
        -- PostgreSQL 16 and newer let a CREATEROLE owner grant only roles
        -- it holds with ADMIN OPTION (those it created itself); a role made
        -- by someone else (a DBA, another database's migration) may
        -- already be granted.
        IF NOT pg_has_role('millrace_admin', 'millrace_worker', 'MEMBER') THEN
            BEGIN
                GRANT millrace_worker TO millrace_admin;
            EXCEPTION WHEN insufficient_privilege THEN
                RAISE NOTICE 'millrace: cannot grant millrace_worker to millrace_admin (PostgreSQL 16 and newer need ADMIN OPTION on millrace_worker); run GRANT millrace_worker TO millrace_admin as a role that has it (docs/security.md)';
            END;
        END IF;
        GRANT USAGE ON SCHEMA millrace TO millrace_admin;
        GRANT SELECT ON ALL TABLES IN SCHEMA millrace TO millrace_admin;
        GRANT DELETE ON millrace.discarded TO millrace_admin;
    END IF;
END $$;
