-- Back to version 3: the functions of version 4 go; grants stay revoked
-- from PUBLIC (re-granting them would widen access). The roles are shared
-- by every database of the cluster and are left in place.
DROP FUNCTION millrace.register(text, text, int);
DROP FUNCTION millrace.release(int);
DROP FUNCTION millrace.schema_version();
