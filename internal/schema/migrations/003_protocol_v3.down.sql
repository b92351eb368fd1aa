-- Version 3 cannot be reverted in place: its tables replace version 2's,
-- and turning its ring back into v2 segments would risk the jobs it holds.
-- `millrace migrate down 0` (which drops the whole schema) still works;
-- to go back to a version 2 binary, drain the queues, drop the schema and
-- migrate again with that binary.
DO $$ BEGIN
    RAISE EXCEPTION 'millrace: schema version 3 cannot be reverted to version 2 in place (migrate down to 0 drops every job)'
        USING ERRCODE = '0A000';
END $$;
