// Package ops is the operator's data layer: every statement the dashboard
// (package ui) and the operator commands (millrace queues, jobs, queue)
// run. It reads the schema's read surface (millrace.jobs, millrace.history,
// millrace.queue_counts) and calls its operator functions (pause, resume,
// cancel, retry), all of schema version 5; nothing here touches a table of
// the storage protocol directly. Its actions (Cancel, Retry, Pause, Resume,
// Paused) are the one implementation of each: package millrace's Cancel,
// Retry, PauseQueue, ResumeQueue and QueuePaused wrap them.
package ops

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/millrace/millrace/internal/storage"
)

// DB is what the functions need: a *pgxpool.Pool, *pgx.Conn or pgx.Tx
// (storage.Querier, the one definition).
type DB = storage.Querier

// Queue is one queue at a glance.
type Queue struct {
	Name                                     string
	Available, Running, Scheduled, Discarded int64
	// Completed is the completed jobs still kept in history.
	Completed int64
	Paused    bool
	// OldestWaiting is the age of the oldest available job (0: none).
	OldestWaiting time.Duration
	// Rate is jobs completed per second over the last minute.
	Rate float64
}

// MarshalJSON writes durations in seconds and the counts by name.
func (q Queue) MarshalJSON() ([]byte, error) {
	return json.Marshal(struct {
		Name           string  `json:"name"`
		Available      int64   `json:"available"`
		Running        int64   `json:"running"`
		Scheduled      int64   `json:"scheduled"`
		Discarded      int64   `json:"discarded"`
		Completed      int64   `json:"completed"`
		Paused         bool    `json:"paused"`
		OldestWaitingS float64 `json:"oldest_waiting_s"`
		Rate           float64 `json:"rate_per_s"`
	}{q.Name, q.Available, q.Running, q.Scheduled, q.Discarded, q.Completed, q.Paused, q.OldestWaiting.Seconds(), q.Rate})
}

// Queues lists every queue: its jobs by state, whether it is paused, its
// oldest waiting job and its completion rate over the last minute (counted
// in history: at full speed, a read of some hundred thousand rows). For
// human cadence, not a hot path; a reader that polls uses QueueCounts and
// derives the rate from its own reads, as the dashboard does.
func Queues(ctx context.Context, db DB) ([]Queue, error) {
	return queues(ctx, db, true)
}

// QueueCounts is Queues without the rate (Rate 0): every queue's jobs by
// state, whether it is paused, and its oldest waiting job, in one read of
// millrace.queue_counts: the live jobs' keys (no payload is read) and
// history's tally, whose cost follows what is waiting and running, not the
// rate.
func QueueCounts(ctx context.Context, db DB) ([]Queue, error) {
	return queues(ctx, db, false)
}

func queues(ctx context.Context, db DB, rate bool) ([]Queue, error) {
	rows, err := db.Query(ctx, `
WITH c AS (SELECT * FROM millrace.queue_counts()),
r AS (SELECT h.queue, count(*) AS n FROM millrace.history h
      WHERE $1 AND h.state = 'completed' AND h.finished_at > clock_timestamp() - interval '1 minute' GROUP BY h.queue)
SELECT c.queue, c.available, c.running, c.scheduled, c.discarded, c.completed, c.paused,
       coalesce(extract(epoch FROM clock_timestamp() - c.oldest_available), 0)::float8,
       coalesce(r.n, 0) / 60.0::float8
FROM c LEFT JOIN r ON r.queue = c.queue
ORDER BY c.queue`, rate)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (Queue, error) {
		var q Queue
		var oldest float64
		err := r.Scan(&q.Name, &q.Available, &q.Running, &q.Scheduled, &q.Discarded, &q.Completed, &q.Paused, &oldest, &q.Rate)
		q.OldestWaiting = time.Duration(oldest * float64(time.Second))
		return q, err
	})
}

// LiveCounts is QueueCounts without history's counts (Completed and
// Discarded 0): every queue's live jobs by state, its oldest waiting job
// and whether it is paused, from one read of the live jobs
// (millrace.live_counts). The dashboard reads it every second, and the
// counts of history every ten.
func LiveCounts(ctx context.Context, db DB) ([]Queue, error) {
	rows, err := db.Query(ctx, `SELECT queue, available, running, scheduled, paused,
		coalesce(extract(epoch FROM clock_timestamp() - oldest_available), 0)::float8
		FROM millrace.live_counts()`)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (Queue, error) {
		var q Queue
		var oldest float64
		err := r.Scan(&q.Name, &q.Available, &q.Running, &q.Scheduled, &q.Paused, &oldest)
		q.OldestWaiting = time.Duration(oldest * float64(time.Second))
		return q, err
	})
}

// LiveStates are the states of a job not yet finished (millrace.jobs);
// FinishedStates those of a finished attempt (millrace.history).
var (
	LiveStates     = []string{"available", "running", "scheduled"}
	FinishedStates = []string{"completed", "failed", "snoozed", "cancelled", "discarded"}
)

// ValidState reports whether s is a state a Filter accepts ("" is any).
func ValidState(s string) bool {
	if s == "" {
		return true
	}
	for _, x := range append(append([]string{}, LiveStates...), FinishedStates...) {
		if x == s {
			return true
		}
	}
	return false
}

// Filter selects jobs. Zero fields select everything.
type Filter struct {
	ID    int64
	Queue string
	Kind  string
	State string
	// Since keeps jobs created (live jobs) or attempts finished (history)
	// at or after it.
	Since time.Time
	// Limit caps the rows returned (default 100, at most 1000).
	Limit int
}

// Job is a job not yet finished (Live, from millrace.jobs) or one finished
// attempt of a job (from millrace.history).
type Job struct {
	ID          int64           `json:"id"`
	Queue       string          `json:"queue"`
	Kind        string          `json:"kind"`
	State       string          `json:"state"`
	Args        json.RawMessage `json:"args"`
	Priority    int             `json:"priority"`
	Attempt     int             `json:"attempt"`
	MaxAttempts int             `json:"max_attempts"`
	CreatedAt   time.Time       `json:"created_at"`
	RunAt       *time.Time      `json:"run_at,omitempty"`
	StartedAt   *time.Time      `json:"started_at,omitempty"`
	FinishedAt  *time.Time      `json:"finished_at,omitempty"`
	Error       string          `json:"error,omitempty"`
	Owner       *int            `json:"owner,omitempty"`
	Live        bool            `json:"live"`
}

// Duration is how long a finished attempt ran (0 when unknown).
func (j *Job) Duration() time.Duration {
	if j.StartedAt == nil || j.FinishedAt == nil {
		return 0
	}
	return j.FinishedAt.Sub(*j.StartedAt)
}

// jobsSQL lists live jobs and finished attempts; its columns are in
// scanJob's order.
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
    FROM millrace.history h
    WHERE ($4::text = '' OR $4::text NOT IN ('available', 'running', 'scheduled'))
      AND ($1::bigint = 0 OR h.id = $1) AND ($2::text = '' OR h.queue = $2) AND ($3::text = '' OR h.kind = $3) AND ($4::text = '' OR h.state = $4)
      AND ($5::timestamptz IS NULL OR h.finished_at >= $5)
) x
ORDER BY live DESC, coalesce(finished_at, created_at) DESC, id DESC, attempt DESC
LIMIT $6::int`

func scanJob(r pgx.CollectableRow) (Job, error) {
	var j Job
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

// ListJobs returns the jobs that match f: the live ones first, then
// finished attempts, newest first.
func ListJobs(ctx context.Context, db DB, f Filter) ([]Job, error) {
	if !ValidState(f.State) {
		return nil, fmt.Errorf("unknown state %q", f.State)
	}
	if f.Limit <= 0 {
		f.Limit = 100
	}
	if f.Limit > 1000 {
		f.Limit = 1000
	}
	var since *time.Time
	if !f.Since.IsZero() {
		since = &f.Since
	}
	rows, err := db.Query(ctx, jobsSQL, f.ID, f.Queue, f.Kind, f.State, since, f.Limit)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, scanJob)
}

// ErrNotFound is returned for a job that is neither live nor in history.
var ErrNotFound = errors.New("no such job (not waiting, not running, and not in history)")

// JobDetail is everything known of one job.
type JobDetail struct {
	ID int64 `json:"id"`
	// Live is the job's row in millrace.jobs while it has not finished.
	Live *Job `json:"live,omitempty"`
	// Attempts are its finished attempts, oldest first.
	Attempts []Job `json:"attempts"`
}

// Latest is the job's live row, else its newest attempt.
func (d *JobDetail) Latest() *Job {
	if d.Live != nil {
		return d.Live
	}
	if len(d.Attempts) > 0 {
		return &d.Attempts[len(d.Attempts)-1]
	}
	return nil
}

// GetJob returns a job's live row (if any) and its history. The live row is
// read first and history in a later statement: a job that finishes in
// between is then seen live or in history, never in neither, and a final
// attempt in history hides a live row read before it (one statement
// would read history with its own snapshot, older than the one
// millrace.jobs takes inside its VOLATILE function).
func GetJob(ctx context.Context, db DB, id int64) (JobDetail, error) {
	var all []Job
	for _, q := range []string{`
SELECT j.id, j.queue, j.kind, j.state, j.args, j.priority::int, j.attempt, j.max_attempts, j.created_at,
       j.run_at, NULL::timestamptz, NULL::timestamptz, NULL::text, j.owner, true
FROM millrace.jobs j WHERE j.id = $1`, `
SELECT h.id, h.queue, h.kind, h.state, h.args, h.priority::int, h.attempt, h.max_attempts, h.created_at,
       NULL, h.started_at, h.finished_at, h.error, h.owner, false
FROM millrace.history h WHERE h.id = $1`} {
		rows, err := db.Query(ctx, q, id)
		if err != nil {
			return JobDetail{}, err
		}
		some, err := pgx.CollectRows(rows, scanJob)
		if err != nil {
			return JobDetail{}, err
		}
		all = append(all, some...)
	}
	d := JobDetail{ID: id, Attempts: []Job{}}
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
		if a.State == "completed" || a.State == "discarded" || a.State == "cancelled" {
			d.Live = nil
		}
	}
	if d.Live == nil && len(d.Attempts) == 0 {
		return d, ErrNotFound
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

// readCommitted is storage.ReadCommitted of one argument: cancel, retry,
// pause and resume take a lock and then read what its previous holder
// wrote, which a snapshot taken before the lock misses.
func readCommitted(ctx context.Context, db DB, sql string, arg any, dest ...any) error {
	return storage.ReadCommitted(ctx, db, sql, []any{arg}, dest...)
}

// Cancel cancels a job: "cancelled" (it was waiting; it never runs),
// "cancelling" (it is running; its process is told and cancels its
// context), "finished" (nothing done) or "unknown".
func Cancel(ctx context.Context, db DB, id int64) (string, error) {
	var out string
	err := readCommitted(ctx, db, "SELECT millrace.cancel($1)", id, &out)
	return out, err
}

// Retry queues a discarded or cancelled job to run again now, as a new
// job, and returns the new job's id (0 if none) and the outcome: "retried
// as job N", "not finished" (it is still live; nothing done), "completed"
// or "unknown". A retry of a job already retried returns the job that
// retry made.
func Retry(ctx context.Context, db DB, id int64) (int64, string, error) {
	var out string
	if err := readCommitted(ctx, db, "SELECT millrace.retry($1)", id, &out); err != nil {
		return 0, "", err
	}
	return RetriedAs(out), out, nil
}

// Pause stops claims from queue until Resume.
func Pause(ctx context.Context, db DB, queue string) error {
	var x *string
	return readCommitted(ctx, db, "SELECT millrace.pause($1)::text", queue, &x)
}

// Resume lets a paused queue be claimed again and wakes its workers.
func Resume(ctx context.Context, db DB, queue string) error {
	var x *string
	return readCommitted(ctx, db, "SELECT millrace.resume($1)::text", queue, &x)
}

// Paused reports whether queue is paused.
func Paused(ctx context.Context, db DB, queue string) (bool, error) {
	var p bool
	err := db.QueryRow(ctx, "SELECT millrace.queue_paused($1)", queue).Scan(&p)
	return p, err
}

// Privileges says which operator functions the connected role may call.
// A function the schema does not have (an older version) is not allowed.
type Privileges struct {
	Cancel bool `json:"cancel"`
	Retry  bool `json:"retry"`
	Pause  bool `json:"pause"`
	Resume bool `json:"resume"`
}

// Any reports whether any action is allowed.
func (p Privileges) Any() bool { return p.Cancel || p.Retry || p.Pause || p.Resume }

// Can reads the connected role's privileges on the operator functions
// (has_function_privilege, and USAGE on the schema).
func Can(ctx context.Context, db DB) (Privileges, error) {
	var p Privileges
	err := db.QueryRow(ctx, `
SELECT coalesce(u AND has_function_privilege(to_regprocedure('millrace.cancel(bigint)'), 'EXECUTE'), false),
       coalesce(u AND has_function_privilege(to_regprocedure('millrace.retry(bigint)'), 'EXECUTE'), false),
       coalesce(u AND has_function_privilege(to_regprocedure('millrace.pause(text)'), 'EXECUTE'), false),
       coalesce(u AND has_function_privilege(to_regprocedure('millrace.resume(text)'), 'EXECUTE'), false)
FROM (SELECT coalesce(has_schema_privilege(to_regnamespace('millrace'), 'USAGE'), false) AS u) s`).
		Scan(&p.Cancel, &p.Retry, &p.Pause, &p.Resume)
	return p, err
}

// Sample is the activity of one window of time: attempts finished in
// (Since, At] by outcome, and latency percentiles of the attempts that
// completed or failed in it.
type Sample struct {
	At    time.Time `json:"at"`
	Since time.Time `json:"since"`
	// Finished attempts in the window, by state.
	Completed int64 `json:"completed"`
	Failed    int64 `json:"failed"`
	Discarded int64 `json:"discarded"`
	Cancelled int64 `json:"cancelled"`
	Snoozed   int64 `json:"snoozed"`
	// WaitP50/P95: from a job's creation to the start of its first
	// attempt; RunP50/P95: from an attempt's start to its end.
	// Milliseconds; 0 when no attempt finished in the window.
	WaitP50 float64 `json:"wait_p50_ms"`
	WaitP95 float64 `json:"wait_p95_ms"`
	RunP50  float64 `json:"run_p50_ms"`
	RunP95  float64 `json:"run_p95_ms"`
}

// PerSecond converts a count of the window into a rate.
func (s Sample) PerSecond(n int64) float64 {
	d := s.At.Sub(s.Since).Seconds()
	if d <= 0 {
		return 0
	}
	return float64(n) / d
}

// SampleSince reads the attempts that finished after since (zero: in the
// last second by the database's clock). The first
// attempt's wait is measured from the job's creation, so a job scheduled
// for later counts its whole delay.
func SampleSince(ctx context.Context, db DB, since time.Time) (Sample, error) {
	var s Sample
	var from *time.Time
	if !since.IsZero() {
		from = &since
	}
	err := db.QueryRow(ctx, `SELECT at, since, completed, failed, discarded, cancelled, snoozed,
		wait_p50_ms, wait_p95_ms, run_p50_ms, run_p95_ms FROM millrace.activity($1)`, from).
		Scan(&s.At, &s.Since, &s.Completed, &s.Failed, &s.Discarded, &s.Cancelled, &s.Snoozed, &s.WaitP50, &s.WaitP95, &s.RunP50, &s.RunP95)
	return s, err
}

// RetriedAs is the new job's id in a result of Retry (0 if none).
func RetriedAs(out string) int64 {
	var n int64
	if _, err := fmt.Sscanf(out, "retried as job %d", &n); err != nil {
		return 0
	}
	return n
}

// Process is a client process the schema knows (millrace.process): its
// id (the owner of the jobs it works), name, host and operating system
// pid.
type Process struct {
	ID   int    `json:"id"`
	Name string `json:"name"`
	Host string `json:"host"`
	PID  int    `json:"pid"`
}

// String is host:pid, and the process's name when it has another.
func (p Process) String() string {
	s := fmt.Sprintf("%s:%d", p.Host, p.PID)
	if p.Name != "" && p.Name != s {
		s += " (" + p.Name + ")"
	}
	return s
}

// Processes reads the processes of ids from millrace.process. A process
// that has exited and been cleaned up is not in the map. Reading the
// table takes SELECT on it (millrace_admin has it); without, the error
// says so and callers show the bare id.
func Processes(ctx context.Context, db DB, ids []int) (map[int]Process, error) {
	rows, err := db.Query(ctx, "SELECT p.id, p.name, p.host, p.pid FROM millrace.process p WHERE p.id = ANY($1)", ids)
	if err != nil {
		return nil, err
	}
	all, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (Process, error) {
		var p Process
		return p, r.Scan(&p.ID, &p.Name, &p.Host, &p.PID)
	})
	if err != nil {
		return nil, err
	}
	out := make(map[int]Process, len(all))
	for _, p := range all {
		out[p.ID] = p
	}
	return out, nil
}

// RunningAttempt is the attempt a job shows: for a job running now the
// attempt it runs (its row counts the attempts already made), else the
// job's attempt as stored.
func (j *Job) RunningAttempt() int {
	if j.Live && j.State == "running" {
		return j.Attempt + 1
	}
	return j.Attempt
}
