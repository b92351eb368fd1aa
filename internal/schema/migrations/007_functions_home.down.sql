-- Back to version 6: history_v6 holds its time in its body again, and the
-- tables of version 7 go. The other functions keep the bodies version 7
-- applied, which are version 6's.
DO $$
BEGIN
    EXECUTE format('CREATE OR REPLACE FUNCTION millrace.history_v6() RETURNS timestamptz LANGUAGE sql IMMUTABLE'
                   ' SET search_path = pg_catalog, pg_temp AS $f$ SELECT to_timestamp(%s) $f$',
                   extract(epoch FROM (SELECT at FROM millrace.mark WHERE name = 'history_v6')));
END $$;
DROP TABLE millrace.mark;
DROP TABLE millrace.function_set;
