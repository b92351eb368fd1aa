package storage

import (
	"context"
	"encoding/json"
	"errors"
	"sort"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// The inspection reads: what package millrace's JobByID and QueueCounts,
// and package ops (the dashboard, the operator commands), show. Each read
// has one implementation here, which every caller shares. They read the
// schema's read surface (millrace.jobs, millrace.history, queue_counts,
// live_counts, activity) and, for Processes, the table millrace.process.

// Reread runs read, a read of q, and when q is a pool runs it again, at
// most twice more, when it failed for a reason of the server's own
// (Retryable) while ctx is alive: above all the cancel the leader sends a
// reader that keeps a slot of the ring from being reclaimed (SQLSTATE
// 57014, docs/deploy.md), which a poll of the read API would otherwise
// see as an error once per reclaim. In a transaction (any other Querier)
// the first failure is returned: it aborted the caller's transaction.
func Reread[T any](ctx context.Context, q Querier, read func() (T, error)) (T, error) {
	var v T
	if _, ok := q.(*pgxpool.Pool); !ok {
		return read()
	}
	err := retry(ctx, 3, func() error {
		var err error
		v, err = read()
		return err
	})
	return v, err
}

// QueueRow is one queue at a glance: its jobs by state, whether it is
// paused, the age of its oldest available job and, when asked, its rate.
type QueueRow struct {
	Name                                     string
	Available, Running, Scheduled, Discarded int64
	// Completed and Cancelled are the completed and cancelled jobs still
	// kept in history.
	Completed, Cancelled int64
	Paused               bool
	// OldestWaiting is the age of the oldest available job (0: none).
	OldestWaiting time.Duration
	// Rate is jobs completed per second over the last minute (0 when not
	// asked for).
	Rate float64
}

// Queues reads every queue from millrace.queue_counts, in the order of
// their names; with rate, each queue's completions over the last minute
// are counted in history too (at full speed, a read of some hundred
// thousand rows), else Rate is 0 and history is not read.
func Queues(ctx context.Context, q Querier, rate bool) ([]QueueRow, error) {
	return readRows(ctx, q, func(r pgx.CollectableRow) (QueueRow, error) {
		var x QueueRow
		var oldest float64
		err := r.Scan(&x.Name, &x.Available, &x.Running, &x.Scheduled, &x.Discarded, &x.Completed, &x.Cancelled, &x.Paused, &oldest, &x.Rate)
		x.OldestWaiting = time.Duration(oldest * float64(time.Second))
		return x, err
	}, `
WITH c AS (SELECT * FROM millrace.queue_counts()),
r AS (SELECT x.queue, x.n FROM millrace.completed_since(clock_timestamp() - interval '1 minute') x WHERE $1)
SELECT c.queue, c.available, c.running, c.scheduled, c.discarded, c.completed, c.cancelled, c.paused,
       coalesce(extract(epoch FROM clock_timestamp() - c.oldest_available), 0)::float8,
       coalesce(r.n, 0) / 60.0::float8
FROM c LEFT JOIN r ON r.queue = c.queue
ORDER BY c.queue`, rate)
}

// LiveCounts reads every queue's live jobs by state, its oldest waiting job
// and whether it is paused, from one read of the live jobs
// (millrace.live_counts); Completed, Discarded, Cancelled and Rate are 0.
func LiveCounts(ctx context.Context, q Querier) ([]QueueRow, error) {
	return readRows(ctx, q, func(r pgx.CollectableRow) (QueueRow, error) {
		var x QueueRow
		var oldest float64
		err := r.Scan(&x.Name, &x.Available, &x.Running, &x.Scheduled, &x.Paused, &oldest)
		x.OldestWaiting = time.Duration(oldest * float64(time.Second))
		return x, err
	}, `SELECT queue, available, running, scheduled, paused,
		coalesce(extract(epoch FROM clock_timestamp() - oldest_available), 0)::float8
		FROM millrace.live_counts()`)
}

// JobRow is a job not yet finished (Live, a row of millrace.jobs) or one
// finished attempt of a job (a row of millrace.history).
type JobRow struct {
	ID          int64
	Queue       string
	Kind        string
	State       string
	Args        json.RawMessage
	Priority    int
	Attempt     int
	MaxAttempts int
	CreatedAt   time.Time
	RunAt       *time.Time // a live job's due time, when it waits in the schedule
	StartedAt   *time.Time // a finished attempt's start, when it was marked
	FinishedAt  *time.Time // a finished attempt's end
	Error       string
	Owner       *int // the process that runs (live) or ran (history) it
	Live        bool
}

// scanJobRow scans a row of the columns jobsSQL and the reads of GetJob
// list, in JobRow's order.
func scanJobRow(r pgx.CollectableRow) (JobRow, error) {
	var j JobRow
	var args []byte
	var errText *string
	err := r.Scan(&j.ID, &j.Queue, &j.Kind, &j.State, &args, &j.Priority, &j.Attempt, &j.MaxAttempts, &j.CreatedAt,
		&j.RunAt, &j.StartedAt, &j.FinishedAt, &errText, &j.Owner, &j.Live)
	j.Args = args
	if errText != nil {
		j.Error = *errText
	}
	return j, err
}

// JobFilter selects jobs for ListJobs. Zero fields select everything but
// Limit, which the caller sets.
type JobFilter struct {
	ID    int64
	Queue string
	Kind  string
	State string
	// Since keeps jobs created (live jobs) or attempts finished (history)
	// at or after it.
	Since time.Time
	// Limit caps the rows returned.
	Limit int
}

// jobsSQL lists live jobs and finished attempts; its columns are in
// scanJobRow's order.
const jobsSQL = `
SELECT * FROM (
    SELECT j.id, j.queue, j.kind, j.state, j.args, j.priority::int, j.attempt, j.max_attempts, j.created_at,
           j.run_at, NULL::timestamptz AS started_at, NULL::timestamptz AS finished_at, NULL::text AS error, j.owner, true AS live
    FROM millrace.jobs j
    WHERE ($4::text = '' OR $4::text IN ('available', 'running', 'scheduled'))
      AND ($1::bigint = 0 OR j.id = $1) AND ($2::text = '' OR j.queue = $2) AND ($3::text = '' OR j.kind = $3) AND ($4::text = '' OR j.state = $4)
      AND ($5::timestamptz IS NULL OR j.created_at >= $5)
    UNION ALL
    SELECT h.id, h.queue, h.kind, h.state, h.args, h.priority::int, h.attempt, h.max_attempts, h.created_at,
           NULL, h.started_at, h.finished_at, h.error, h.owner, false
    -- one job's history by its id (the view filtered by id reads every
    -- row of completed history)
    FROM (SELECT * FROM millrace.history WHERE $1::bigint = 0
          UNION ALL SELECT * FROM millrace.job_history($1) WHERE $1::bigint <> 0) h
    WHERE ($4::text = '' OR $4::text NOT IN ('available', 'running', 'scheduled'))
      AND ($2::text = '' OR h.queue = $2) AND ($3::text = '' OR h.kind = $3) AND ($4::text = '' OR h.state = $4)
      AND ($5::timestamptz IS NULL OR h.finished_at >= $5)
) x
ORDER BY live DESC, coalesce(finished_at, created_at) DESC, id DESC, attempt DESC
LIMIT $6::int`

// ListJobs returns the jobs that match f: the live ones first, then
// finished attempts, newest first, at most f.Limit of them.
func ListJobs(ctx context.Context, q Querier, f JobFilter) ([]JobRow, error) {
	var since *time.Time
	if !f.Since.IsZero() {
		since = &f.Since
	}
	return readRows(ctx, q, scanJobRow, jobsSQL, f.ID, f.Queue, f.Kind, f.State, since, f.Limit)
}

// ErrJobNotFound is returned by GetJob for a job that is neither live nor
// in history.
var ErrJobNotFound = errors.New("no such job (not waiting, not running, and not in history)")

// JobDetail is everything known of one job.
type JobDetail struct {
	ID int64
	// Live is the job's row in millrace.jobs while it has not finished.
	Live *JobRow
	// Attempts are its finished attempts, oldest first (by attempt, then
	// by end).
	Attempts []JobRow
}

// LiveRead says how GetJob reads a job's live row.
type LiveRead int

const (
	// LiveWithOwner reads the live row from millrace.jobs, with its state
	// as the dashboard's lists show it and the process that runs it
	// (Owner). Filtering millrace.jobs by id lists every live job first
	// (live_keys, and their rows): its cost grows with what waits and runs
	// (measured on two cores: 1-4 ms with 10 live jobs, 160-600 ms with
	// 61,000). For people: the dashboard and the operator commands.
	LiveWithOwner LiveRead = iota
	// LiveByID reads the live row by the job's id: its state from
	// millrace.job_state and its row from millrace.live_job, a few index
	// probes whatever waits (1-4 ms with 61,000 live jobs, as with 10),
	// without its owner (Owner nil). For package millrace's JobByID, which
	// programs call, and whose state has always been job_state's.
	LiveByID
)

// The reads of GetJob, in the order it sends them: the live row (one of
// two ways, by LiveRead), then history. Their columns are in scanJobRow's
// order.
const (
	liveJobSQL = `
SELECT j.id, j.queue, j.kind, j.state, j.args, j.priority::int, j.attempt, j.max_attempts, j.created_at,
       j.run_at, NULL::timestamptz, NULL::timestamptz, NULL::text, j.owner, true
FROM millrace.jobs j WHERE j.id = $1`
	liveJobByIDSQL = `
SELECT $1::bigint, l.queue, l.kind, s.state, l.args, l.priority::int, l.attempt, l.max_attempts, l.created_at,
       l.run_at, NULL::timestamptz, NULL::timestamptz, NULL::text, NULL::int, true
FROM millrace.job_state($1) s(state) CROSS JOIN LATERAL millrace.live_job($1) l
WHERE s.state IN ('available', 'running', 'scheduled')`
	jobHistorySQL = `
SELECT h.id, h.queue, h.kind, h.state, h.args, h.priority::int, h.attempt, h.max_attempts, h.created_at,
       NULL, h.started_at, h.finished_at, h.error, h.owner, false
FROM millrace.job_history($1) h`
)

// GetJob returns a job's live row (if any), read as how says, and its
// history: the one read of a job, which package ops's GetJob
// (LiveWithOwner) and package millrace's JobByID (LiveByID) share. The
// live row is read first and history in a later statement: a job that
// finishes in between is then seen live or in history, never in neither,
// and a final attempt in history (completed, discarded, cancelled) hides a
// live row read before it (one statement would read history with its own
// snapshot, older than the one the live read takes inside its VOLATILE
// functions). Attempts is never nil. A job with neither gives
// ErrJobNotFound.
func GetJob(ctx context.Context, q Querier, id int64, how LiveRead) (JobDetail, error) {
	live := liveJobSQL
	if how == LiveByID {
		live = liveJobByIDSQL
	}
	var all []JobRow
	for _, sql := range []string{live, jobHistorySQL} {
		some, err := readRows(ctx, q, scanJobRow, sql, id)
		if err != nil {
			return JobDetail{}, err
		}
		all = append(all, some...)
	}
	d := JobDetail{ID: id, Attempts: []JobRow{}}
	for i := range all {
		switch {
		case !all[i].Live:
			d.Attempts = append(d.Attempts, all[i])
		case d.Live == nil || all[i].State == "running":
			d.Live = &all[i] // a job in a claimed batch shows as running
		}
	}
	// A job that finished between the two statements is seen in both:
	// a final attempt (completed, discarded, cancelled) ends it, and its
	// live row was read before (reads never show a finished job
	// unfinished).
	for _, a := range d.Attempts {
		if IsFinal(a.State) {
			d.Live = nil
		}
	}
	if d.Live == nil && len(d.Attempts) == 0 {
		return d, ErrJobNotFound
	}
	sort.SliceStable(d.Attempts, func(i, j int) bool {
		a, b := &d.Attempts[i], &d.Attempts[j]
		if a.Attempt != b.Attempt {
			return a.Attempt < b.Attempt
		}
		return a.FinishedAt != nil && b.FinishedAt != nil && a.FinishedAt.Before(*b.FinishedAt)
	})
	return d, nil
}

// IsFinal reports whether state, an attempt's, ends its job: completed,
// discarded or cancelled (failed and snoozed attempts run again).
func IsFinal(state string) bool {
	return state == "completed" || state == "discarded" || state == "cancelled"
}

// Activity is the activity of one window of time: attempts finished in
// (Since, At] by outcome, and latency percentiles (milliseconds) of the
// attempts that completed or failed in it (millrace.activity).
type Activity struct {
	At        time.Time
	Since     time.Time
	Completed int64
	Failed    int64
	Discarded int64
	Cancelled int64
	Snoozed   int64
	WaitP50   float64
	WaitP95   float64
	RunP50    float64
	RunP95    float64
}

// ReadActivity reads the attempts that finished after since (nil: in the
// last second by the database's clock).
func ReadActivity(ctx context.Context, q Querier, since *time.Time) (Activity, error) {
	var s Activity
	err := ReadCommitted(ctx, q, `SELECT at, since, completed, failed, discarded, cancelled, snoozed,
		wait_p50_ms, wait_p95_ms, run_p50_ms, run_p95_ms FROM millrace.activity($1)`, []any{since},
		&s.At, &s.Since, &s.Completed, &s.Failed, &s.Discarded, &s.Cancelled, &s.Snoozed, &s.WaitP50, &s.WaitP95, &s.RunP50, &s.RunP95)
	return s, err
}

// ProcessRow is a client process the schema knows (millrace.process): its
// id (the owner of the jobs it works), name, host and operating system
// pid.
type ProcessRow struct {
	ID   int
	Name string
	Host string
	PID  int
}

// Processes reads the processes of ids from millrace.process, in no
// order; a process cleaned up since is not among them. Reading the table
// takes SELECT on it (millrace_admin has it).
func Processes(ctx context.Context, q Querier, ids []int) ([]ProcessRow, error) {
	rows, err := q.Query(ctx, "SELECT p.id, p.name, p.host, p.pid FROM millrace.process p WHERE p.id = ANY($1)", ids)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (ProcessRow, error) {
		var p ProcessRow
		return p, r.Scan(&p.ID, &p.Name, &p.Host, &p.PID)
	})
}

// SchemaVersion returns the newest migration applied to the database (0:
// none).
func SchemaVersion(ctx context.Context, q Querier) (int, error) {
	var v int
	err := q.QueryRow(ctx, "SELECT coalesce(max(version), 0) FROM millrace.migration").Scan(&v)
	return v, err
}

// TxJob is a job the current transaction inserted, as stored: a row of
// the job table (due now, RunAt nil) or of the schedule (due at RunAt).
type TxJob struct {
	ID          int64
	Queue       string
	Kind        string
	Args        []byte
	Priority    int16
	MaxAttempts int
	Timeout     time.Duration // the job's own timeout (0: its kind's)
	CreatedAt   time.Time
	RunAt       *time.Time
}

// txJobsSQL lists the jobs the current transaction inserted, in the order
// it inserted them: rows of the job table (due now) and of the schedule
// (due later) carrying this transaction's id. A transaction that inserted
// nothing has no id and sees no row.
const txJobsSQL = `
SELECT id, queue, kind, args, priority, max_attempts, timeout_ms, created_at, NULL::timestamptz AS run_at
FROM millrace.job WHERE txid = pg_current_xact_id_if_assigned()
UNION ALL
SELECT id, queue, kind, args, priority, max_attempts, timeout_ms, created_at, due_at
FROM millrace.sched WHERE txid = pg_current_xact_id_if_assigned()
ORDER BY id`

// TxJobs reads the jobs the transaction q inserted (package millracetest's
// assertions), reading the schema's job and schedule tables: the role
// must be able to (the schema's owner, or millrace_admin). A transaction
// that inserted none gives nil.
func TxJobs(ctx context.Context, q Querier) ([]TxJob, error) {
	rows, err := q.Query(ctx, txJobsSQL)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []TxJob
	for rows.Next() {
		var j TxJob
		var maxAttempts, timeoutMS int32
		if err := rows.Scan(&j.ID, &j.Queue, &j.Kind, &j.Args, &j.Priority, &maxAttempts, &timeoutMS, &j.CreatedAt, &j.RunAt); err != nil {
			return nil, err
		}
		j.MaxAttempts = int(maxAttempts)
		j.Timeout = time.Duration(timeoutMS) * time.Millisecond
		out = append(out, j)
	}
	return out, rows.Err()
}
