package storage

import (
	"context"
	"slices"
	"time"

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

// Limit is a queue's limits across every process (0: none).
type Limit struct {
	// Running is how many of its jobs may run at once.
	Running int
	// Rate is how many of its jobs may start per Per.
	Rate int
	Per  time.Duration
	// PerKey is how many jobs of one key may run at once, the key being
	// Key's parts ("kind", or a top-level args field; nil: the kind).
	PerKey int
	Key    []string
	// KeyRate is how many jobs of one key may start per KeyPer, the key
	// being Key's parts as for PerKey.
	KeyRate int
	KeyPer  time.Duration
}

// Equal says l and o are the same limits.
func (l Limit) Equal(o Limit) bool {
	return l.Running == o.Running && l.Rate == o.Rate && l.Per == o.Per && l.PerKey == o.PerKey && slices.Equal(l.Key, o.Key) &&
		l.KeyRate == o.KeyRate && l.KeyPer == o.KeyPer
}

// SetLimit replaces queue's limits (millrace.set_limit); the zero Limit
// clears them.
func SetLimit(ctx context.Context, q Querier, queue string, l Limit) error {
	var running, rate *int
	var per *time.Duration
	if l.Running != 0 {
		running = &l.Running
	}
	if l.Rate != 0 || l.Per != 0 {
		rate, per = &l.Rate, &l.Per
	}
	var perKey, keyRate *int
	var keyPer *time.Duration
	var key []string
	if l.PerKey != 0 {
		perKey = &l.PerKey
	}
	if l.KeyRate != 0 || l.KeyPer != 0 {
		keyRate, keyPer = &l.KeyRate, &l.KeyPer
	}
	if perKey != nil || keyRate != nil {
		key = l.Key
	}
	var x *string
	return ReadCommitted(ctx, q, `SELECT millrace.set_limit(p_queue => $1, p_running => $2, p_rate => $3, p_per => $4, p_per_key => $5, p_key => $6,
		p_key_rate => $7, p_key_per => $8)::text`,
		[]any{queue, running, rate, per, perKey, key, keyRate, keyPer}, &x)
}

// QueueLimit is a queue's limits and what runs under them
// (millrace.queue_limits).
type QueueLimit struct {
	Queue string
	Limit
	// Held is the slots the live processes hold of a queue's running
	// limit, as each one's newest claim wrote them (each runs at most its
	// slots at once: never fewer than run).
	Held int64
	// Started is, for a rate limit, the jobs the claims of the current
	// window took.
	Started int64
	// KeysRunning and KeysFull are, for a per-key limit, how many keys
	// have a slot held and how many are at the limit; Deferred is how
	// many of the queue's jobs it, or a per-key rate, deferred wait in
	// the schedule.
	KeysRunning, KeysFull, Deferred int64
}

// QueueLimits lists the queues with a limit, by name.
func QueueLimits(ctx context.Context, q Querier) ([]QueueLimit, error) {
	return readRows(ctx, q, func(r pgx.CollectableRow) (QueueLimit, error) {
		var l QueueLimit
		err := r.Scan(&l.Queue, &l.Running, &l.Held, &l.Rate, &l.Per, &l.Started, &l.PerKey, &l.Key, &l.KeysRunning, &l.KeysFull, &l.Deferred,
			&l.KeyRate, &l.KeyPer)
		return l, err
	}, `SELECT queue, coalesce(running_limit, 0), running, coalesce(rate, 0), coalesce(rate_per, '0'), coalesce(started, 0),
		coalesce(per_key, 0), per_key_by, coalesce(keys_running, 0), coalesce(keys_full, 0), coalesce(deferred, 0),
		coalesce(key_rate, 0), coalesce(key_rate_per, '0') FROM millrace.queue_limits()`)
}

// KeyCount is a key of a queue's per-key limits: the slots of it the
// live processes hold, and (under a per-key rate; else -1) the jobs of it
// the claims of the rate's current window took.
type KeyCount struct {
	Key     string
	Running int64
	Started int64
}

// KeyLimits lists the top keys of queue's per-key limits by slots held,
// then by starts in the rate's window (millrace.key_limits), at most top.
func KeyLimits(ctx context.Context, q Querier, queue string, top int) ([]KeyCount, error) {
	return readRows(ctx, q, pgx.RowToStructByPos[KeyCount], "SELECT key, running, coalesce(started, -1) FROM millrace.key_limits($1, $2)", queue, top)
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
       coalesce(u AND has_function_privilege((SELECT p.oid FROM pg_proc p WHERE p.proname = 'set_limit' AND p.pronamespace = to_regnamespace('millrace') LIMIT 1), 'EXECUTE')
                  AND has_function_privilege(to_regprocedure('millrace.pause(text)'), 'EXECUTE'), false)
FROM (SELECT coalesce(has_schema_privilege(to_regnamespace('millrace'), 'USAGE'), false) AS u) s`).
		Scan(&r.Cancel, &r.Retry, &r.Pause, &r.Resume, &r.Limit)
	return r, err
}
