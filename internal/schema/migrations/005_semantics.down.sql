-- Version 5 cannot be reverted in place: its history, cancellations and
-- unique keys have no home in version 4, and its priority lanes change
-- every tick. `millrace migrate down 0` (which drops the whole schema)
-- still works; to go back to a version 4 binary, drain the queues, drop
-- the schema and migrate again with that binary.
DO $$ BEGIN
    RAISE EXCEPTION 'millrace: schema version 5 cannot be reverted to version 4 in place (migrate down to 0 drops every job)'
        USING ERRCODE = '0A000';
END $$;
