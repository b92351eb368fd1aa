// Package ops is the operator's data layer: every statement the dashboard
// (package ui) and the operator commands (millrace queues, jobs, queue)
// run. Their text is package storage's (reads.go, admin.go), the one door
// to the database, whose rows this package shapes for its callers: they
// read the schema's read surface (millrace.jobs, millrace.history,
// millrace.queue_counts) and call its operator functions (pause, resume,
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
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/millrace/millrace/internal/schema"
	"github.com/millrace/millrace/internal/storage"
)

// DB is what the functions need: a *pgxpool.Pool, *pgx.Conn or pgx.Tx
// (storage.Querier, the one definition).
type DB = storage.Querier

// Queue is one queue at a glance.
type Queue struct {
	Name                                     string
	Available, Running, Scheduled, Discarded int64
	// Completed and Cancelled are the completed and cancelled jobs still
	// kept in history.
	Completed, Cancelled int64
	Paused               bool
	// OldestWaiting is the age of the oldest available job (0: none).
	OldestWaiting time.Duration
	// Rate is jobs completed per second over the last minute.
	Rate float64
	// Limit is the queue's concurrency limit across every process (0:
	// none), and Held the slots the live processes hold of it (never
	// fewer than run; see millrace.queue_limits).
	Limit int
	Held  int64
	// RateLimit is the queue's rate limit, starts per Per (0: none), and
	// Started the jobs claimed in its current window.
	RateLimit int
	Per       time.Duration
	Started   int64
	// PerKey is the queue's per-key limit (0: none), keyed by Key;
	// KeysRunning the keys with a slot held by a live process, KeysFull
	// those at the limit, and Deferred the jobs it deferred that wait in
	// the schedule.
	PerKey                          int
	Key                             []string
	KeysRunning, KeysFull, Deferred int64
	// KeyRate is the queue's per-key rate, starts of a key per KeyPer
	// (0: none), keyed by Key.
	KeyRate int
	KeyPer  time.Duration
}

// MarshalJSON writes durations in seconds and the counts by name.
func (q Queue) MarshalJSON() ([]byte, error) {
	return json.Marshal(struct {
		Name           string   `json:"name"`
		Available      int64    `json:"available"`
		Running        int64    `json:"running"`
		Scheduled      int64    `json:"scheduled"`
		Discarded      int64    `json:"discarded"`
		Completed      int64    `json:"completed"`
		Cancelled      int64    `json:"cancelled"`
		Paused         bool     `json:"paused"`
		OldestWaitingS float64  `json:"oldest_waiting_s"`
		Rate           float64  `json:"rate_per_s"`
		Limit          int      `json:"limit"`
		Held           int64    `json:"held"`
		RateLimit      int      `json:"rate_limit"`
		RatePeriodS    float64  `json:"rate_period_s"`
		Started        int64    `json:"started"`
		PerKey         int      `json:"per_key"`
		Key            []string `json:"key,omitempty"`
		KeysRunning    int64    `json:"keys_running"`
		KeysFull       int64    `json:"keys_full"`
		Deferred       int64    `json:"deferred"`
		KeyRate        int      `json:"key_rate"`
		KeyRatePeriodS float64  `json:"key_rate_period_s"`
	}{q.Name, q.Available, q.Running, q.Scheduled, q.Discarded, q.Completed, q.Cancelled, q.Paused, q.OldestWaiting.Seconds(), q.Rate,
		q.Limit, q.Held, q.RateLimit, q.Per.Seconds(), q.Started, q.PerKey, q.Key, q.KeysRunning, q.KeysFull, q.Deferred,
		q.KeyRate, q.KeyPer.Seconds()})
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
	rows, err := storage.Queues(ctx, db, rate)
	return queueRows(ctx, db, rows, err)
}

// queueRows converts storage's rows, with each queue's limit.
func queueRows(ctx context.Context, db DB, rows []storage.QueueRow, err error) ([]Queue, error) {
	if err != nil {
		return nil, err
	}
	ls, err := storage.QueueLimits(ctx, db)
	if err != nil {
		return nil, err
	}
	limits := make(map[string]storage.QueueLimit, len(ls))
	for _, l := range ls {
		limits[l.Queue] = l
	}
	qs := make([]Queue, len(rows))
	for i, r := range rows {
		l := limits[r.Name]
		qs[i] = Queue{Name: r.Name, Available: r.Available, Running: r.Running, Scheduled: r.Scheduled, Discarded: r.Discarded,
			Completed: r.Completed, Cancelled: r.Cancelled, Paused: r.Paused, OldestWaiting: r.OldestWaiting, Rate: r.Rate,
			Limit: l.Running, Held: l.Held, RateLimit: l.Rate, Per: l.Per, Started: l.Started,
			PerKey: l.PerKey, Key: l.Key, KeysRunning: l.KeysRunning, KeysFull: l.KeysFull, Deferred: l.Deferred,
			KeyRate: l.KeyRate, KeyPer: l.KeyPer}
	}
	return qs, nil
}

// LiveCounts is QueueCounts without history's counts (Completed,
// Discarded and Cancelled 0): every queue's live jobs by state, its oldest waiting job
// and whether it is paused, from one read of the live jobs
// (millrace.live_counts). The dashboard reads it every second, and the
// counts of history every ten.
func LiveCounts(ctx context.Context, db DB) ([]Queue, error) {
	rows, err := storage.LiveCounts(ctx, db)
	return queueRows(ctx, db, rows, err)
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
	rows, err := storage.ListJobs(ctx, db, storage.JobFilter(f))
	if err != nil {
		return nil, err
	}
	return jobs(rows), nil
}

// jobs converts storage's rows.
func jobs(rows []storage.JobRow) []Job {
	js := make([]Job, len(rows))
	for i, r := range rows {
		js[i] = Job(r)
	}
	return js
}

// ErrNotFound is returned for a job that is neither live nor in history.
var ErrNotFound = storage.ErrJobNotFound

// JobDetail is everything known of one job.
type JobDetail struct {
	ID int64 `json:"id"`
	// Live is the job's row in millrace.jobs while it has not finished.
	Live *Job `json:"live,omitempty"`
	// Attempts are its finished attempts, oldest first.
	Attempts []Job `json:"attempts"`
	// RetriedAs is the job a retry of this one made (0: none; only a
	// discarded or cancelled job can be retried). Such a job is not
	// retried again: a retry answers with this job.
	RetriedAs int64 `json:"retried_as,omitempty"`
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

// ArgsNotKept is what a reader shows for a job whose args history did not
// keep: a completed attempt is kept without them (schema 9).
const ArgsNotKept = "not kept: history keeps a completed job without its args"

// Args are the job's arguments: its live row's, else the newest attempt's
// that kept them (nil: none did, a job that completed at its first
// attempt).
func (d *JobDetail) Args() json.RawMessage {
	if d.Live != nil && len(d.Live.Args) > 0 {
		return d.Live.Args
	}
	for i := len(d.Attempts) - 1; i >= 0; i-- {
		if len(d.Attempts[i].Args) > 0 {
			return d.Attempts[i].Args
		}
	}
	return nil
}

// GetJob returns a job's live row (if any), its history and, for a
// discarded or cancelled job, the job a retry of it made
// (storage.GetJob, the one read of a job, which package millrace's JobByID
// shares). The live row is read first and history in a later statement: a
// job that finishes in between is then seen live or in history, never in
// neither, and a final attempt in history hides a live row read before it
// (one statement would read history with its own snapshot, older than the
// one millrace.jobs takes inside its VOLATILE function).
func GetJob(ctx context.Context, db DB, id int64) (JobDetail, error) {
	d, err := storage.GetJob(ctx, db, id, storage.LiveWithOwner)
	if err != nil && err != ErrNotFound {
		return JobDetail{}, err
	}
	out := JobDetail{ID: id, Attempts: jobs(d.Attempts)}
	if d.Live != nil {
		live := Job(*d.Live)
		out.Live = &live
	}
	// A job a retry can take (discarded or cancelled) may have been
	// retried: one more probe, for those only.
	if l := out.Latest(); err == nil && out.Live == nil && l != nil && (l.State == "discarded" || l.State == "cancelled") {
		if out.RetriedAs, err = storage.RetriedAs(ctx, db, id); err != nil {
			return JobDetail{}, err
		}
	}
	return out, err
}

// Cancel cancels a job: "cancelled" (it was waiting; it never runs),
// "cancelling" (it is running; its process is told and cancels its
// context), "finished" (nothing done) or "unknown".
func Cancel(ctx context.Context, db DB, id int64) (string, error) {
	return storage.CancelJob(ctx, db, id)
}

// Retry queues a discarded or cancelled job to run again now, as a new
// job, and returns the new job's id (0 if none) and the outcome: "retried
// as job N", "not finished" (it is still live; nothing done), "completed"
// or "unknown". A retry of a job already retried returns the job that
// retry made.
func Retry(ctx context.Context, db DB, id int64) (int64, string, error) {
	out, err := storage.RetryJob(ctx, db, id)
	if err != nil {
		return 0, "", err
	}
	return RetriedAs(out), out, nil
}

// Pause stops claims from queue until Resume.
func Pause(ctx context.Context, db DB, queue string) error {
	return storage.PauseQueue(ctx, db, queue)
}

// Resume lets a paused queue be claimed again and wakes its workers.
func Resume(ctx context.Context, db DB, queue string) error {
	return storage.ResumeQueue(ctx, db, queue)
}

// Limit is a queue's limits; QueueLimit those and what runs under them.
type (
	Limit      = storage.Limit
	QueueLimit = storage.QueueLimit
	KeyCount   = storage.KeyCount
)

// ParseRate parses a rate limit written N/PERIOD (100/1s, 60/1m): N from
// 1 to 1000000 starts per PERIOD from 10ms to 24h; "0" or "" is none.
func ParseRate(s string) (n int, per time.Duration, err error) {
	s = strings.TrimSpace(s)
	if s == "" || s == "0" {
		return 0, 0, nil
	}
	ns, ps, ok := strings.Cut(s, "/")
	n, nerr := strconv.Atoi(strings.TrimSpace(ns))
	per, perr := time.ParseDuration(strings.TrimSpace(ps))
	if !ok || nerr != nil || perr != nil || n < 1 || n > 1000000 || per < 10*time.Millisecond || per > 24*time.Hour {
		return 0, 0, fmt.Errorf("rate %q: want N/PERIOD, N from 1 to 1000000 and PERIOD from 10ms to 24h (100/1s, 60/1m), or 0 for none", s)
	}
	return n, per, nil
}

// SetLimit replaces queue's limits (the zero Limit: none).
func SetLimit(ctx context.Context, db DB, queue string, l storage.Limit) error {
	return storage.SetLimit(ctx, db, queue, l)
}

// ParseKey reads a per-key limit's key: comma-separated parts, each kind
// or a top-level args field (args.F or F), as the database keeps them.
func ParseKey(s string) ([]string, error) {
	var parts []string
	for _, p := range strings.Split(s, ",") {
		p = strings.TrimSpace(p)
		f := strings.TrimPrefix(p, "args.")
		if p == "" || f == "" || len(f) > 63 {
			return nil, errors.New("each part is kind or a top-level args field name of 1 to 63 bytes")
		}
		if p != "kind" && f == p {
			p = "args." + p
		}
		parts = append(parts, p)
	}
	if len(parts) > 8 {
		return nil, errors.New("a key has at most 8 parts")
	}
	return parts, nil
}

// KeyLimits lists the top keys of queue's per-key limit by slots held.
func KeyLimits(ctx context.Context, db DB, queue string, top int) ([]storage.KeyCount, error) {
	return storage.KeyLimits(ctx, db, queue, top)
}

// Limits lists the queues with a concurrency limit.
func Limits(ctx context.Context, db DB) ([]storage.QueueLimit, error) {
	return storage.QueueLimits(ctx, db)
}

// Paused reports whether queue is paused.
func Paused(ctx context.Context, db DB, queue string) (bool, error) {
	return storage.QueuePaused(ctx, db, queue)
}

// Privileges says which operator functions the connected role may call.
// A function the schema does not have (an older version) is not allowed.
type Privileges struct {
	Cancel bool `json:"cancel"`
	Retry  bool `json:"retry"`
	Pause  bool `json:"pause"`
	Resume bool `json:"resume"`
	// Limit: set a queue's concurrency limit (an operator's right:
	// millrace_admin).
	Limit bool `json:"limit"`
}

// Any reports whether any action is allowed.
func (p Privileges) Any() bool { return p.Cancel || p.Retry || p.Pause || p.Resume || p.Limit }

// Can reads the connected role's privileges on the operator functions
// (has_function_privilege, and USAGE on the schema).
func Can(ctx context.Context, db DB) (Privileges, error) {
	r, err := storage.OperatorRights(ctx, db)
	return Privileges(r), err
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
	var from *time.Time
	if !since.IsZero() {
		from = &since
	}
	a, err := storage.ReadActivity(ctx, db, from)
	return Sample(a), err
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
	all, err := storage.Processes(ctx, db, ids)
	if err != nil {
		return nil, err
	}
	out := make(map[int]Process, len(all))
	for _, p := range all {
		out[p.ID] = Process(p)
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

// SchemaVersions returns the newest migration applied to the database
// (have; 0: no schema) and the newest this binary carries (want). A
// schema newer than the binary has a have above want. The dashboard and
// the operator commands read it before anything else, to say in one line
// what to run rather than fail on a column or function an older schema
// lacks.
func SchemaVersions(ctx context.Context, pool *pgxpool.Pool) (have, want int, err error) {
	st, err := schema.List(ctx, pool)
	if err != nil {
		return 0, 0, err
	}
	for _, s := range st {
		want = max(want, s.Version)
		if s.Applied {
			have = max(have, s.Version)
		}
	}
	if want > 0 && have == want {
		// Every migration of this binary is applied: a newer binary may
		// have applied more.
		v, err := storage.SchemaVersion(ctx, pool)
		if err != nil {
			return 0, 0, err
		}
		have = max(have, v)
	}
	return have, want, nil
}

// MaxLimit is the most jobs one list returns (Filter.Limit).
const MaxLimit = 1000

// latestRowsCap bounds the rows LatestJobs reads to fill one list: with
// more attempts than that per job shown, it says more may match.
const latestRowsCap = 100_000

// LatestJobs returns one row per job that matches f: its live row while
// it has not finished, else its newest finished attempt (with State
// failed or snoozed, its newest such attempt); the live ones first, then
// the finished, newest first. It returns at most f.Limit jobs (1 to
// MaxLimit; 0 is 100) and whether more match (more is also true when so
// many attempts were read without filling the list that it stopped,
// latestRowsCap: more may match).
func LatestJobs(ctx context.Context, db DB, f Filter) (jobs []Job, more bool, err error) {
	if !ValidState(f.State) {
		return nil, false, fmt.Errorf("unknown state %q", f.State)
	}
	if f.Limit == 0 {
		f.Limit = 100
	}
	if f.Limit < 0 || f.Limit > MaxLimit {
		return nil, false, fmt.Errorf("limit %d: want 1 to %d", f.Limit, MaxLimit)
	}
	limit := f.Limit
	// Rows are a job's attempts: read more until the list is full (one
	// more than the limit says more match) or every row is read.
	for n := limit + 1; ; n = min(n*4, latestRowsCap) {
		f.Limit = n
		rows, err := storage.ListJobs(ctx, db, storage.JobFilter(f))
		if err != nil {
			return nil, false, err
		}
		jobs = latest(rows)
		switch {
		case len(jobs) > limit:
			return jobs[:limit], true, nil
		case len(rows) < n:
			return jobs, false, nil
		case n >= latestRowsCap:
			return jobs, true, nil
		}
	}
}

// latest keeps the first row of each job: rows come live first, then
// finished attempts newest first, so it is the job's latest state.
func latest(rows []storage.JobRow) []Job {
	seen := make(map[int64]bool, len(rows))
	out := make([]Job, 0, len(rows))
	for _, r := range rows {
		if seen[r.ID] {
			continue
		}
		seen[r.ID] = true
		out = append(out, Job(r))
	}
	return out
}
