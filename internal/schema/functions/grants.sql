-- millrace grants: who may call what (docs/security.md). Applied after
-- every function file, each time Migrate applies the functions: a new
-- function gets EXECUTE for PUBLIC from Postgres unless revoked here.
-- Roles (created by migration 4 when the migrating role may):
--   millrace_producer  enqueue and read the schema version
--   millrace_worker    what a worker process needs: claim, start marks, flush,
--                      register and heartbeats, release, leadership and
--                      maintenance when it leads, the read surface, and a
--                      queue's concurrency limit (set_limit: QueueConfig.MaxRunning)
--   millrace_admin     the worker's rights, plus reading every table and the
--                      operator actions (cancel, pause, resume, retry, set_retention,
--                      set_limit)

REVOKE ALL ON ALL TABLES IN SCHEMA millrace FROM PUBLIC;
REVOKE ALL ON ALL SEQUENCES IN SCHEMA millrace FROM PUBLIC;
REVOKE EXECUTE ON ALL FUNCTIONS IN SCHEMA millrace FROM PUBLIC;

DO $$
BEGIN
    IF EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'millrace_producer') THEN
        GRANT USAGE ON SCHEMA millrace TO millrace_producer;
        GRANT EXECUTE ON FUNCTION
            millrace.enqueue(p_kind text, p_args jsonb, p_queue text, p_priority integer, p_run_at timestamp with time zone, p_max_attempts integer, p_notify boolean, p_unique_key text, p_unique_states integer, p_unique_until timestamp with time zone, p_timeout_ms integer),
            millrace.enqueue_many(p_kind text[], p_args jsonb[], p_queue text[], p_priority integer[], p_run_at timestamp with time zone[], p_max_attempts integer[], p_notify boolean, p_unique_key text[], p_unique_states integer[], p_unique_until timestamp with time zone[], p_timeout_ms integer[]),
            millrace.enqueue_unique(p_kind text, p_args jsonb, p_queue text, p_priority integer, p_run_at timestamp with time zone, p_max_attempts integer, p_notify boolean, p_unique_key text, p_unique_states integer, p_unique_until timestamp with time zone, p_timeout_ms integer),
            millrace.insert_many(p_kind text[], p_args jsonb[], p_queue text[], p_priority integer[], p_run_at timestamp with time zone[], p_max_attempts integer[], p_unique_key text[], p_unique_states integer[], p_unique_until timestamp with time zone[], p_timeout_ms integer[], p_notify boolean),
            millrace.schema_version()
        TO millrace_producer;
        GRANT SELECT ON millrace.migration, millrace.function_set TO millrace_producer;
    END IF;
    IF EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'millrace_worker') THEN
        GRANT USAGE ON SCHEMA millrace TO millrace_worker;
        GRANT EXECUTE ON FUNCTION
            millrace.activity(p_since timestamp with time zone),
            millrace.cancelled(p_ids bigint[]),
            millrace.claim(p_queue text, p_owner integer, p_req bigint, p_retry boolean, p_max_jobs integer, p_max_bytes bigint, p_starve interval, p_start_all boolean, p_held integer, p_buffer integer, p_pace interval),
            millrace.claim_start(p_queue text, p_owner integer, p_req bigint, p_retry boolean, p_max_jobs integer, p_max_bytes bigint, p_starve interval, p_start integer, p_held integer, p_buffer integer, p_pace interval),
            millrace.claim_peek(p_queue text),
            millrace.completed_since(p_since timestamp with time zone),
            millrace.complete(p_job bigint, p_tick bigint, p_token bigint, p_attempt integer, p_queue text, p_kind text, p_args jsonb, p_priority smallint, p_max_attempts integer, p_created_at timestamp with time zone, p_started timestamp with time zone, p_owner integer),
            millrace.enqueue(p_kind text, p_args jsonb, p_queue text, p_priority integer, p_run_at timestamp with time zone, p_max_attempts integer, p_notify boolean, p_unique_key text, p_unique_states integer, p_unique_until timestamp with time zone, p_timeout_ms integer),
            millrace.enqueue_many(p_kind text[], p_args jsonb[], p_queue text[], p_priority integer[], p_run_at timestamp with time zone[], p_max_attempts integer[], p_notify boolean, p_unique_key text[], p_unique_states integer[], p_unique_until timestamp with time zone[], p_timeout_ms integer[]),
            millrace.enqueue_unique(p_kind text, p_args jsonb, p_queue text, p_priority integer, p_run_at timestamp with time zone, p_max_attempts integer, p_notify boolean, p_unique_key text, p_unique_states integer, p_unique_until timestamp with time zone, p_timeout_ms integer),
            millrace.beat(p_process integer, p_lease interval),
            millrace.expire_history(p_term bigint),
            millrace.flush(p_owner integer, p_seq bigint, p_job bigint[], p_tick bigint[], p_token bigint[], p_state smallint[], p_attempt integer[], p_error text[], p_retry_at timestamp with time zone[], p_queue text[], p_kind text[], p_args jsonb[], p_priority smallint[], p_max_attempts integer[], p_created_at timestamp with time zone[], p_timeout_ms integer[], p_started timestamp with time zone[], p_finished timestamp with time zone[], p_done_tick bigint[], p_done_token bigint[], p_done_queue text[], p_replay boolean, p_key_queue text[], p_key text[], p_key_n integer[]),
            millrace.insert_many(p_kind text[], p_args jsonb[], p_queue text[], p_priority integer[], p_run_at timestamp with time zone[], p_max_attempts integer[], p_unique_key text[], p_unique_states integer[], p_unique_until timestamp with time zone[], p_timeout_ms integer[], p_notify boolean),
            millrace.job_history(p_id bigint),
            millrace.job_state(p_id bigint),
            millrace.lead(p_process integer, p_term bigint, p_lease interval),
            millrace.live_job(p_id bigint),
            millrace.live_jobs(),
            millrace.live_counts(),
            millrace.mark_started(p_owner integer, p_tick bigint[], p_token bigint[], p_job bigint[]),
            millrace.next_due(),
            millrace.periodic_last(p_name text),
            millrace.periodic_run(p_name text, p_slot_at timestamp with time zone, p_kind text, p_args jsonb, p_queue text, p_priority integer, p_max_attempts integer, p_timeout_ms integer, p_term bigint),
            millrace.promote(p_compact_min bigint, p_term bigint),
            millrace.promote_due(p_compact_min bigint, p_term bigint, OUT promoted bigint, OUT queues text[], OUT next_due timestamp with time zone),
            millrace.queue_counts(),
            millrace.queue_limits(),
            millrace.key_limits(p_queue text, p_top integer),
            millrace.queue_paused(p_queue text),
            millrace.queues_with_work(p_queues text[]),
            millrace.retention(OUT completed interval, OUT other interval),
            millrace.retried_as(p_id bigint),
            millrace.register(p_name text, p_host text, p_pid integer, p_lease interval),
            millrace.release(p_owner integer),
            millrace.rescue(p_stuck interval, p_term bigint),
            millrace.resign(p_process integer, p_term bigint),
            millrace.ring_stats(OUT current_slot smallint, OUT since timestamp with time zone, OUT rotations bigint, OUT reclaims bigint, OUT last_reclaim timestamp with time zone),
            millrace.rotate(p_after interval, p_max_carry bigint, p_term bigint, p_max_carry_bytes bigint, p_wait interval),
            millrace.schema_version(),
            millrace.set_limit(p_queue text, p_running integer, p_rate integer, p_per interval, p_per_key integer, p_key text[], p_key_rate integer, p_key_per interval),
            millrace.tally(p_every interval, p_term bigint)
        TO millrace_worker;
        GRANT SELECT ON millrace.migration, millrace.function_set, millrace.jobs, millrace.history TO millrace_worker;
    END IF;
    IF EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'millrace_admin') THEN
        GRANT USAGE ON SCHEMA millrace TO millrace_admin;
        GRANT EXECUTE ON FUNCTION
            millrace.cancel(p_id bigint),
            millrace.pause(p_queue text),
            millrace.resume(p_queue text),
            millrace.retry(p_id bigint),
            millrace.set_limit(p_queue text, p_running integer, p_rate integer, p_per interval, p_per_key integer, p_key text[], p_key_rate integer, p_key_per interval),
            millrace.set_retention(p_completed interval, p_other interval, OUT completed interval, OUT other interval)
        TO millrace_admin;
        GRANT SELECT ON ALL TABLES IN SCHEMA millrace TO millrace_admin;
    END IF;
END $$;
