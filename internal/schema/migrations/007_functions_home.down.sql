-- Version 7 is not reverted in place, like versions 5 and 6: besides the
-- home of the functions, it changes how liveness and leadership work
-- (leases instead of session locks), and a version 6 binary could not tell
-- a process of version 7 alive. `millrace migrate down 0` (which drops the
-- whole schema) still works; to go back to a version 6 binary, drain the
-- queues, drop the schema and migrate again with that binary.
DO $$ BEGIN
    RAISE EXCEPTION 'millrace: schema version 7 cannot be reverted to version 6 in place (migrate down to 0 drops every job)'
        USING ERRCODE = '0A000';
END $$;
