-- Removes the whole millrace schema, jobs included.
DROP SCHEMA millrace CASCADE;
