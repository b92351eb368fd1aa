-- Going back to version 1 keeps the version 2 claim function: it has the same
-- signature and results, and version 1's could skip jobs committed during a
-- rotation (see 002_claim_snapshot_first.up.sql).
SELECT 1;
