-- millrace storage protocol, version 12: a concurrency limit and a rate
-- limit per queue (issue 34), decided from insert-only facts.
--
-- A queue's limits are columns of its newest queue_state row (NULL: none),
-- written by set_limit and carried by pause and resume, so that a claim
-- reads the pause and the limits with one probe.
--
-- millrace.hold is what each process holds of a limited queue: the jobs
-- it claimed and has not yet finished (acks committed), as it counted
-- them at its newest claim of the queue. A claim of a limited queue takes
-- at most the limit less what the live processes hold (each one's newest
-- row; its own count comes with the call), and writes its own new count.
-- A process's count only falls between its claims (its jobs finish), so
-- the sum of the newest rows is never below what runs: the limit is
-- exact. A row is written per claim of a limited queue only, never
-- updated; the table rotates with the ring, each process's newest row
-- carried forward.
--
-- A rate limit (rate starts per rate_per) counts the jobs each claim of
-- the queue took (hold.took, at the claim's time on the server's clock;
-- 0 under a running limit alone, which then writes one index entry): a
-- claim takes at most the rate less what the claims of the window before
-- it took. Each such row also carries the queue's running total of what
-- its claims took (hold.total: claims of a queue take turns under its
-- claim lock, so each adds to the newest), so that the window's sum is
-- the newest total less the one before the window's oldest claim: two
-- index probes, not a scan of the window's claims.
ALTER TABLE millrace.queue_state ADD COLUMN running integer, ADD COLUMN rate integer, ADD COLUMN rate_per interval;

CREATE SEQUENCE millrace.hold_seq;
CREATE TABLE millrace.hold (
    slot  smallint NOT NULL,
    id    bigint NOT NULL DEFAULT nextval('millrace.hold_seq'),
    queue text NOT NULL,
    owner int NOT NULL,
    n     int NOT NULL,
    took  int NOT NULL DEFAULT 0,
    total bigint NOT NULL DEFAULT 0,
    at    timestamptz NOT NULL DEFAULT clock_timestamp()
) PARTITION BY LIST (slot);
CREATE INDEX hold_owner ON millrace.hold (queue, owner, id);
CREATE INDEX hold_at ON millrace.hold (queue, at) WHERE took > 0;  -- rate-limited claims only
DO $$
BEGIN
    FOR s IN 0 .. millrace.slots() - 1 LOOP
        EXECUTE format('CREATE TABLE millrace.%I PARTITION OF millrace.hold FOR VALUES IN (%s)'
                       ' WITH (autovacuum_enabled = false, toast.autovacuum_enabled = false)', 'hold_' || s, s);
    END LOOP;
END $$;

-- A per-key limit (per_key, keyed by per_key_by: 'kind' for the job's
-- kind, 'args.F' for its top-level args field F) caps the jobs of each
-- key running at once across every process. millrace.keyhold has, per
-- process and queue, the process's whole map of the keys it holds: for
-- each key (keys), the jobs of it the process holds (n: taken by its
-- claims, not yet ended), its slots of the key (slots: how many of them
-- it may run at once; it may hold more, a buffer that waits in it for its
-- own slots, and counts as the least of the two) and where the key's
-- deferred jobs end by its claims (until). A claim writes a new map when
-- it changes what the process holds, and so does a flush of jobs that
-- ended (their slots come back then, whatever the process claims next);
-- both take the process's lock of the queue (keys_space) before they
-- read the newest map, so each adds to the one before. A row per claim
-- and per flush, not per key: with many keys, nearly every job's key is
-- new to its process, and a row per key and event cost two rows a job.
ALTER TABLE millrace.queue_state ADD COLUMN per_key integer, ADD COLUMN per_key_by text[];

CREATE SEQUENCE millrace.keyhold_seq;
CREATE TABLE millrace.keyhold (
    slot  smallint NOT NULL,
    id    bigint NOT NULL DEFAULT nextval('millrace.keyhold_seq'),
    queue text NOT NULL,
    owner int NOT NULL,
    keys  text[] NOT NULL,
    n     int[] NOT NULL,
    slots int[] NOT NULL,
    until timestamptz[] NOT NULL,
    at    timestamptz NOT NULL DEFAULT clock_timestamp()
) PARTITION BY LIST (slot);
CREATE INDEX keyhold_owner ON millrace.keyhold (queue, owner, id);
DO $$
BEGIN
    FOR s IN 0 .. millrace.slots() - 1 LOOP
        EXECUTE format('CREATE TABLE millrace.%I PARTITION OF millrace.keyhold FOR VALUES IN (%s)'
                       ' WITH (autovacuum_enabled = false, toast.autovacuum_enabled = false)', 'keyhold_' || s, s);
    END LOOP;
END $$;

-- A per-key rate limit (key_rate starts per key_rate_per, keyed by
-- per_key_by as the per-key limit is) caps the jobs of each key claimed
-- in any window of rate_window(key_rate_per). millrace.keyrate has, per
-- claim and key it took jobs of (or deferred jobs of), what it took and
-- the key's running total of what the queue's claims took: claims of a
-- queue take turns under its claim lock, so each adds to the newest, and
-- the window's sum is the newest total less the one before the window's
-- oldest row (two index probes). until is where the key's deferred jobs
-- end, so that the next claim's deferred jobs queue after them. A row is
-- written per claim and key of a rate-limited key only, never updated;
-- the rows still in the window, and each key's newest while its deferred
-- jobs have not ended, are carried forward with the ring.
ALTER TABLE millrace.queue_state ADD COLUMN key_rate integer, ADD COLUMN key_rate_per interval;

CREATE SEQUENCE millrace.keyrate_seq;
CREATE TABLE millrace.keyrate (
    slot  smallint NOT NULL,
    id    bigint NOT NULL DEFAULT nextval('millrace.keyrate_seq'),
    queue text NOT NULL,
    key   text NOT NULL,
    took  int NOT NULL,
    total bigint NOT NULL,
    until timestamptz,
    at    timestamptz NOT NULL
) PARTITION BY LIST (slot);
CREATE INDEX keyrate_at ON millrace.keyrate (queue, key, at);
DO $$
BEGIN
    FOR s IN 0 .. millrace.slots() - 1 LOOP
        EXECUTE format('CREATE TABLE millrace.%I PARTITION OF millrace.keyrate FOR VALUES IN (%s)'
                       ' WITH (autovacuum_enabled = false, toast.autovacuum_enabled = false)', 'keyrate_' || s, s);
    END LOOP;
END $$;

-- The flush counts the keys of the jobs that ended (p_key_queue, p_key, p_key_n).
DROP FUNCTION IF EXISTS millrace.flush(integer, bigint, bigint[], bigint[], bigint[], smallint[], integer[], text[], timestamp with time zone[], text[], text[], jsonb[], smallint[], integer[], timestamp with time zone[], integer[], timestamp with time zone[], timestamp with time zone[], bigint[], bigint[], text[], boolean);

-- The claim takes what the caller holds of the queue (p_held).
DROP FUNCTION IF EXISTS millrace.claim(text, integer, bigint, boolean, integer, bigint, interval, boolean);
DROP FUNCTION IF EXISTS millrace.claim_start(text, integer, bigint, boolean, integer, bigint, interval, integer);
