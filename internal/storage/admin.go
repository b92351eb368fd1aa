package storage

import (
	"context"

	"github.com/jackc/pgx/v5"
)

// The operator actions (millrace.cancel, retry, pause, resume) and what
// decides them: each takes a lock and then reads what its previous holder
// wrote, so each runs in a READ COMMITTED transaction of its own
// (ReadCommitted) unless the caller gives its own transaction. Package ops
// holds their one Go implementation for the dashboard, the operator
// commands and package millrace.

// CancelJob asks millrace.cancel to cancel job id and returns what it
// says: "cancelled" (it was waiting; it never runs), "cancelling" (it is
// running; its process is told), "finished" (nothing done) or "unknown".
func CancelJob(ctx context.Context, q Querier, id int64) (string, error) {
	var out string
	err := ReadCommitted(ctx, q, "SELECT millrace.cancel($1)", []any{id}, &out)
	return out, err
}

// RetryJob asks millrace.retry to queue a discarded or cancelled job to
// run again now, as a new job, and returns what it says: "retried as job
// N", "not finished", "completed" or "unknown".
func RetryJob(ctx context.Context, q Querier, id int64) (string, error) {
	var out string
	err := ReadCommitted(ctx, q, "SELECT millrace.retry($1)", []any{id}, &out)
	return out, err
}

// RetriedAs is the id of the job a retry of job id made (0: it was not
// retried), from millrace.retried_as: one index probe, allowed to the
// read surface's roles.
func RetriedAs(ctx context.Context, q Querier, id int64) (int64, error) {
	var n *int64
	if err := q.QueryRow(ctx, "SELECT millrace.retried_as($1)", id).Scan(&n); err != nil || n == nil {
		return 0, err
	}
	return *n, nil
}

// PauseQueue stops claims from queue until ResumeQueue (millrace.pause).
func PauseQueue(ctx context.Context, q Querier, queue string) error {
	var x *string
	return ReadCommitted(ctx, q, "SELECT millrace.pause($1)::text", []any{queue}, &x)
}

// ResumeQueue lets a paused queue be claimed again and wakes its workers
// (millrace.resume).
func ResumeQueue(ctx context.Context, q Querier, queue string) error {
	var x *string
	return ReadCommitted(ctx, q, "SELECT millrace.resume($1)::text", []any{queue}, &x)
}

// QueuePaused reports whether queue is paused (millrace.queue_paused).
func QueuePaused(ctx context.Context, q Querier, queue string) (bool, error) {
	var p bool
	err := q.QueryRow(ctx, "SELECT millrace.queue_paused($1)", queue).Scan(&p)
	return p, err
}

// SetLimit sets how many jobs of queue may run at once across every
// process (millrace.set_limit); running 0 clears the limit.
func SetLimit(ctx context.Context, q Querier, queue string, running int) error {
	var n *int
	if running != 0 {
		n = &running
	}
	var x *string
	return ReadCommitted(ctx, q, "SELECT millrace.set_limit($1, $2)::text", []any{queue, n}, &x)
}

// QueueLimit is a queue's concurrency limit and what the live processes
// hold of it (millrace.queue_limits).
type QueueLimit struct {
	Queue   string
	Running int   // the limit: jobs running at once across every process
	Held    int64 // claimed and not yet finished, as each process counted at its newest claim
}

// QueueLimits lists the queues with a concurrency limit, by name.
func QueueLimits(ctx context.Context, q Querier) ([]QueueLimit, error) {
	rows, err := q.Query(ctx, "SELECT queue, running_limit, running FROM millrace.queue_limits()")
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (QueueLimit, error) {
		var l QueueLimit
		err := r.Scan(&l.Queue, &l.Running, &l.Held)
		return l, err
	})
}

// Rights says which operator functions the connected role may call.
type Rights struct {
	Cancel bool
	Retry  bool
	Pause  bool
	Resume bool
	// Limit: the role may set a queue's concurrency limit as an operator
	// (set_limit, and pause: a worker role may set a limit for its own
	// queues' MaxRunning, not as an operator).
	Limit bool
}

// OperatorRights reads the connected role's rights on the operator
// functions (has_function_privilege, and USAGE on the schema); a function
// the schema does not have (an older version) is not allowed.
func OperatorRights(ctx context.Context, q Querier) (Rights, error) {
	var r Rights
	err := q.QueryRow(ctx, `
SELECT coalesce(u AND has_function_privilege(to_regprocedure('millrace.cancel(bigint)'), 'EXECUTE'), false),
       coalesce(u AND has_function_privilege(to_regprocedure('millrace.retry(bigint)'), 'EXECUTE'), false),
       coalesce(u AND has_function_privilege(to_regprocedure('millrace.pause(text)'), 'EXECUTE'), false),
       coalesce(u AND has_function_privilege(to_regprocedure('millrace.resume(text)'), 'EXECUTE'), false),
       coalesce(u AND has_function_privilege(to_regprocedure('millrace.set_limit(text,integer)'), 'EXECUTE')
                  AND has_function_privilege(to_regprocedure('millrace.pause(text)'), 'EXECUTE'), false)
FROM (SELECT coalesce(has_schema_privilege(to_regnamespace('millrace'), 'USAGE'), false) AS u) s`).
		Scan(&r.Cancel, &r.Retry, &r.Pause, &r.Resume, &r.Limit)
	return r, err
}
