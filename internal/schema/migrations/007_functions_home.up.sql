-- millrace storage protocol, version 7: every function has one home.
--
-- From this version on, the current definition of every function lives
-- once, in internal/schema/functions/*.sql, and Migrate applies those files
-- with CREATE OR REPLACE after the versioned migrations, in the same
-- transaction and under the same lock. Versioned migrations hold only what
-- must be versioned: tables, indexes, data moves, and DROP FUNCTION when a
-- signature changes. A change to functions/ comes with a new version (even
-- one that only says so), so that a binary that does not know the new
-- bodies refuses the schema instead of writing its own bodies back.
--
-- function_set records each application of the functions: the version they
-- belong to and the SHA-256 of their text. It is append-only (read newest
-- first): a binary applies its functions when the newest hash differs.
CREATE TABLE millrace.function_set (
    id         bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    version    int NOT NULL,
    hash       text NOT NULL,
    applied_at timestamptz NOT NULL DEFAULT clock_timestamp()
);

-- mark holds the times the schema records once and reads forever, by name.
-- history_v6, the time migration 6 ran (rows written before it were
-- bucketed by the writer's clock), was a function whose body held the time;
-- it becomes a row, and the function that reads it lives in functions/.
CREATE TABLE millrace.mark (
    name text PRIMARY KEY,
    at   timestamptz NOT NULL
);
INSERT INTO millrace.mark (name, at) VALUES ('history_v6', millrace.history_v6());

-- Issue 20.9: history's retention is the administrator's setting, not an
-- argument of whoever runs maintenance (as the worker role,
-- expire_history('0', '0') emptied history). setting holds settings by
-- name, appended and read newest first (they change rarely: no row is
-- ever updated); set_retention (millrace_admin) writes the retention, and
-- expire_history takes no durations.
CREATE TABLE millrace.setting (
    id    bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    name  text NOT NULL,
    value text NOT NULL,
    at    timestamptz NOT NULL DEFAULT clock_timestamp()
);
CREATE INDEX setting_name ON millrace.setting (name, id DESC);
DROP FUNCTION millrace.expire_history(interval, interval);

-- Issue 20.11: retry is idempotent. retried records each retry (the
-- finished job, the job the retry made), appended; a retry of a job
-- already retried answers with the job it made. Rows are deleted 33 days
-- after the retry, longer than any history lives (expire_history).
CREATE TABLE millrace.retried (
    job_id bigint PRIMARY KEY,
    new_id bigint NOT NULL,
    at     timestamptz NOT NULL DEFAULT clock_timestamp()
);
CREATE INDEX retried_at ON millrace.retried (at);

-- Issue 20.12: a due time is finite, in years 1 to 9999 (insert_many
-- refuses others, flush keeps a retry's time in them). A scheduled job
-- written before with 'infinity' (it never came due, and no client could
-- scan it: `millrace jobs list` failed while it existed) is due at the
-- last instant of year 9999; one before year 1 at its first, which it
-- was already past.
UPDATE millrace.sched
SET due_at = CASE WHEN due_at < '0001-01-01 00:00:00+00'::timestamptz THEN '0001-01-01 00:00:00+00'::timestamptz
                  ELSE '9999-12-31 23:59:59.999999+00'::timestamptz END
WHERE due_at < '0001-01-01 00:00:00+00'::timestamptz OR due_at >= '10000-01-01 00:00:00+00'::timestamptz;

-- Liveness and leadership are leases renewed by progress (issues 19.2 and
-- 20.1), no longer session advisory locks: a stopped process (SIGSTOP, a
-- paused VM, a partition) is a dead one, the leader included, and a
-- connection closed by the server (idle_session_timeout) or held by a
-- pooler changes nothing.
--
-- heartbeat: a process's lease, renewed by millrace.beat every couple of
-- seconds; the process is alive while its newest row's `until` (the
-- server's clock) is ahead. leader: the ledger of leader terms; the newest
-- row says which term leads and until when (renewed by the leader's
-- maintenance round, at most once a second). start: the jobs of a batch a
-- worker is about to start, written before their handlers run, so that
-- the rescue of a dead process's batch charges an attempt to the jobs that
-- were running and to no other. All three are INSERT-only and live in the
-- ring: a reclaim carries each process's newest heartbeat, the newest
-- leader row and the start marks of open batches, and truncates the rest.
CREATE SEQUENCE millrace.lease_seq;

CREATE TABLE millrace.heartbeat (
    slot    smallint NOT NULL,
    id      bigint NOT NULL,
    process int NOT NULL,
    until   timestamptz NOT NULL,
    at      timestamptz NOT NULL DEFAULT clock_timestamp()
) PARTITION BY LIST (slot);
CREATE INDEX heartbeat_process ON millrace.heartbeat (process, id);

CREATE TABLE millrace.leader (
    slot   smallint NOT NULL,
    id     bigint NOT NULL,
    term   bigint NOT NULL,
    holder int NOT NULL,
    until  timestamptz NOT NULL,
    at     timestamptz NOT NULL DEFAULT clock_timestamp()
) PARTITION BY LIST (slot);
CREATE INDEX leader_id ON millrace.leader (id);

CREATE TABLE millrace.start (
    slot    smallint NOT NULL,
    tick_id bigint NOT NULL,
    token   bigint NOT NULL,
    jobs    bigint[] NOT NULL,
    at      timestamptz NOT NULL DEFAULT clock_timestamp()
) PARTITION BY LIST (slot);
CREATE INDEX start_tick ON millrace.start (tick_id, token);

DO $$
DECLARE
    t text;
BEGIN
    FOR s IN 0 .. millrace.slots() - 1 LOOP
        FOREACH t IN ARRAY ARRAY['heartbeat', 'leader', 'start'] LOOP
            EXECUTE format('CREATE TABLE millrace.%I PARTITION OF millrace.%I FOR VALUES IN (%s)'
                           ' WITH (autovacuum_enabled = false, toast.autovacuum_enabled = false)', t || '_' || s, t, s);
        END LOOP;
    END LOOP;
END $$;

-- History's (kind, finished_at) index served no reader that needs it fast
-- (a listing by kind walks finished_at and filters): one index entry less
-- per finished attempt, in WAL and in server time.
DROP INDEX millrace.finished_kind;

-- Signatures that change: maintenance functions take the caller's leader
-- term (fencing), register the process's lease, rescue says how many
-- running jobs it charged an attempt.
DROP FUNCTION millrace.register(text, text, int);
DROP FUNCTION millrace.rescue(interval);
DROP FUNCTION millrace.rotate(interval, bigint);
DROP FUNCTION millrace.promote(bigint);
DROP FUNCTION millrace.periodic_run(text, timestamptz, text, jsonb, text, int, int, int);
DROP FUNCTION millrace.tally(interval);
