-- A stand-in for the parts of schema version 5 that can be written over
-- version 4 without touching the storage protocol: pause, resume,
-- queue_paused, queue_counts with its paused and completed columns, and a
-- history view (version 4 keeps only discarded jobs). cancel and retry are
-- not stood in for: they need the protocol itself. Tests apply this only
-- while the schema the library carries is older than version 5; it goes
-- when version 5 lands.
CREATE TABLE millrace.contract5_paused (queue text PRIMARY KEY);

CREATE FUNCTION millrace.pause(p_queue text) RETURNS void
LANGUAGE sql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
    INSERT INTO millrace.contract5_paused (queue) VALUES (p_queue) ON CONFLICT DO NOTHING
$$;

CREATE FUNCTION millrace.resume(p_queue text) RETURNS void
LANGUAGE sql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
    DELETE FROM millrace.contract5_paused WHERE queue = p_queue
$$;

CREATE FUNCTION millrace.queue_paused(p_queue text) RETURNS boolean
LANGUAGE sql STABLE SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
    SELECT EXISTS (SELECT 1 FROM millrace.contract5_paused WHERE queue = p_queue)
$$;

DROP FUNCTION millrace.queue_counts();
CREATE FUNCTION millrace.queue_counts()
RETURNS TABLE (queue text, available bigint, running bigint, scheduled bigint, discarded bigint, paused boolean, completed bigint)
LANGUAGE sql STABLE SECURITY DEFINER SET search_path = pg_catalog, pg_temp SET jit = off AS $$
    SELECT q.queue,
           count(j.id) FILTER (WHERE j.state = 'available'),
           count(j.id) FILTER (WHERE j.state = 'running'),
           count(j.id) FILTER (WHERE j.state = 'scheduled'),
           (SELECT count(*) FROM millrace.discarded d WHERE d.queue = q.queue),
           EXISTS (SELECT 1 FROM millrace.contract5_paused p WHERE p.queue = q.queue),
           0::bigint
    FROM (SELECT DISTINCT x.queue FROM millrace.live_jobs() x
          UNION SELECT DISTINCT d.queue FROM millrace.discarded d
          UNION SELECT p.queue FROM millrace.contract5_paused p) q
    LEFT JOIN millrace.live_jobs() j ON j.queue = q.queue
    GROUP BY q.queue ORDER BY q.queue
$$;

CREATE VIEW millrace.history AS
SELECT d.id, d.attempt, 'discarded'::text AS state, d.queue, d.kind, d.args, d.priority, d.max_attempts, d.created_at,
       d.discarded_at AS started_at, d.discarded_at AS finished_at, d.error, NULL::int AS owner
FROM millrace.discarded d;

REVOKE EXECUTE ON FUNCTION millrace.pause(text), millrace.resume(text), millrace.queue_paused(text),
    millrace.queue_counts() FROM PUBLIC;
GRANT EXECUTE ON FUNCTION millrace.queue_counts(), millrace.queue_paused(text) TO millrace_worker;
GRANT SELECT ON millrace.history TO millrace_worker;
GRANT EXECUTE ON FUNCTION millrace.pause(text), millrace.resume(text) TO millrace_admin;
