-- Back to version 8, whose history has args on every row: a completed
-- attempt written without them gets JSON null (what was sent is not
-- known any more; version 8 reads it as args of null).
UPDATE millrace.finished SET args = 'null'::jsonb WHERE args IS NULL;
ALTER TABLE millrace.finished ALTER COLUMN args SET NOT NULL;
