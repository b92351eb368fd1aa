-- Version 6 is not reverted in place, like version 5: `millrace migrate
-- down 0` (which drops the whole schema) still works; to go back to a
-- version 5 binary, drain the queues, drop the schema and migrate again
-- with that binary.
DO $$ BEGIN
    RAISE EXCEPTION 'millrace: schema version 6 cannot be reverted to version 5 in place (migrate down to 0 drops every job)'
        USING ERRCODE = '0A000';
END $$;
