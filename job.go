// Package millrace is a transactional job queue that lives in PostgreSQL and
// stays fast when a long transaction pins the MVCC horizon.
//
// Jobs are inserted with plain INSERTs (inside the caller's transaction if it
// wants: a job enqueued by a transaction that rolls back never runs), claimed
// in batches by snapshot ticks, acknowledged per job in bulk, and reclaimed by
// TRUNCATE of rotating segments. No statement run per job updates or deletes
// a row, so a pinned horizon leaves no dead tuples in the queue's path and a
// claim costs what it returns. See docs/architecture.md.
//
// A program defines job argument types (each with a Kind), registers a
// worker per kind, and runs a Client:
//
//	workers := millrace.NewWorkers()
//	millrace.AddWorker(workers, millrace.WorkFunc(func(ctx context.Context, j *millrace.Job[EmailArgs]) error {
//		return send(j.Args.To)
//	}))
//	client, err := millrace.NewClient(pool, millrace.Config{Workers: workers, Queues: map[string]millrace.QueueConfig{"default": {MaxWorkers: 10}}})
//	client.Start(ctx)
//	client.Insert(ctx, EmailArgs{To: "a@example.com"}, nil)
package millrace

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/millrace/millrace/internal/pool"
	"github.com/millrace/millrace/internal/storage"
)

// JobArgs are a job's typed arguments. Kind names the job type; it is stored
// with the job and selects the worker that runs it, so it must stay stable.
// Args are encoded to JSON.
type JobArgs interface {
	Kind() string
}

// Job is a job as a worker receives it.
type Job[T JobArgs] struct {
	ID          int64
	Queue       string
	Kind        string
	Priority    int
	Attempt     int // 1 for the first run
	MaxAttempts int
	CreatedAt   time.Time
	// ReadyAt is when the job became ready to run: when it was inserted,
	// or when it fell due (a scheduled job, a retry, a snooze).
	ReadyAt time.Time
	Args    T

	run *pool.Run
}

// Worker runs jobs of one kind. A nil error completes the job; an error
// fails this attempt (retried with its kind's backoff until its max
// attempts, then discarded and kept in history). A worker can also return
// JobSnooze, JobCancel or JobDiscard to decide the outcome itself.
type Worker[T JobArgs] interface {
	Work(ctx context.Context, job *Job[T]) error
}

type workFunc[T JobArgs] func(ctx context.Context, job *Job[T]) error

func (f workFunc[T]) Work(ctx context.Context, job *Job[T]) error { return f(ctx, job) }

// WorkFunc makes a Worker from a function.
func WorkFunc[T JobArgs](f func(ctx context.Context, job *Job[T]) error) Worker[T] {
	return workFunc[T](f)
}

// KindOpts are the policies of one kind of job, given to AddWorker.
type KindOpts struct {
	// MaxAttempts is the default for jobs of this kind inserted by a
	// client that has this worker registered (0: Config.MaxAttempts). A
	// job's own InsertOpts.MaxAttempts wins.
	MaxAttempts int
	// Backoff is the delay before attempt+1 after attempt failed (nil:
	// Config.Backoff). Sub-second delays are honoured.
	Backoff func(attempt int) time.Duration
	// Timeout cancels a job's context after this long (0: none; cause
	// ErrTimeout). A job's own InsertOpts.Timeout wins. A job that ignores
	// its context for 2 s more is treated as stuck: the attempt fails (the
	// job runs again, at least once, perhaps while the abandoned call is
	// still running) and its worker takes the next job.
	Timeout time.Duration
}

// Workers is the set of workers a Client runs, one per kind.
type Workers struct {
	byKind map[string]kindEntry
}

type kindEntry struct {
	handle func(ctx context.Context, run *pool.Run) error
	opts   KindOpts
}

// NewWorkers makes an empty worker set.
func NewWorkers() *Workers {
	return &Workers{byKind: map[string]kindEntry{}}
}

// AddWorker registers w for the kind of T, with the kind's policies if
// given. It panics if the kind is empty or already has a worker: both are
// programming errors found at start-up.
func AddWorker[T JobArgs](ws *Workers, w Worker[T], opts ...KindOpts) {
	var zero T
	kind := zero.Kind()
	if kind == "" {
		panic("millrace: AddWorker: JobArgs.Kind() returned an empty kind")
	}
	if _, dup := ws.byKind[kind]; dup {
		panic("millrace: AddWorker: a worker for kind " + kind + " is already registered")
	}
	var o KindOpts
	if len(opts) > 0 {
		o = opts[0]
	}
	ws.byKind[kind] = kindEntry{opts: o, handle: func(ctx context.Context, run *pool.Run) error {
		j, err := decodeJob[T](run.Job)
		if err != nil {
			return err
		}
		j.run = run
		return w.Work(ctx, j)
	}}
}

// decodeJob makes the typed job a worker receives from a stored one.
func decodeJob[T JobArgs](sj *storage.Job) (*Job[T], error) {
	j := &Job[T]{ID: sj.ID, Queue: sj.Queue, Kind: sj.Kind, Priority: int(sj.Priority),
		Attempt: sj.Attempt + 1, MaxAttempts: sj.MaxAttempts, CreatedAt: sj.CreatedAt, ReadyAt: sj.ReadyAt}
	if err := json.Unmarshal(sj.Args, &j.Args); err != nil {
		return nil, fmt.Errorf("millrace: decoding args of job %d (kind %s): %w", sj.ID, sj.Kind, err)
	}
	return j, nil
}

// UnknownKindError is the error recorded for a job whose kind has no worker in
// the process that claimed it. The job is retried with backoff (a newer
// process may know the kind) and discarded after its last attempt.
type UnknownKindError struct{ Kind string }

func (e *UnknownKindError) Error() string {
	return fmt.Sprintf("millrace: no worker registered for job kind %q", e.Kind)
}

func (ws *Workers) handle(ctx context.Context, run *pool.Run) error {
	e, ok := ws.byKind[run.Job.Kind]
	if !ok {
		return &UnknownKindError{Kind: run.Job.Kind}
	}
	return e.handle(ctx, run)
}

// policy is a kind's retry and timeout policy for the pool.
func (ws *Workers) policy(kind string) pool.KindPolicy {
	if ws == nil {
		return pool.KindPolicy{}
	}
	e := ws.byKind[kind]
	return pool.KindPolicy{Backoff: e.opts.Backoff, Timeout: e.opts.Timeout}
}

// ErrCancelled is the cause (context.Cause) of a running job's context
// when the job was cancelled from outside (Client.Cancel, `millrace jobs
// cancel`, SELECT millrace.cancel(id)). Whatever the worker then returns,
// an error finishes the job as cancelled.
var ErrCancelled = pool.ErrCancelRequested

// ErrTimeout is the cause (context.Cause) of a job's context ended by its
// timeout. The attempt fails (and is retried) unless the worker returns
// nil.
var ErrTimeout = pool.ErrTimeout

// ErrNotRunning is returned by CompleteTx for a job value that was not
// handed to a worker by a Client.
var ErrNotRunning = errors.New("millrace: CompleteTx needs the job a worker received")

// CompleteTx completes job inside tx, the worker's own transaction: the
// job's completion commits together with everything else tx does, or not
// at all (exactly once for the job's database effects). Call it last in
// tx, commit, and return nil from the worker. It fails if the job's batch
// was released to another process meanwhile (then roll back). A worker
// that returns an error after tx committed leaves the job completed: the
// error is logged as returned after the completion, not as a failed
// attempt (nothing is retried, and Config.ErrorHandler is not called).
func CompleteTx[T JobArgs](ctx context.Context, tx pgx.Tx, job *Job[T]) error {
	if job == nil || job.run == nil {
		return ErrNotRunning
	}
	r := job.run
	if err := storage.Complete(ctx, tx, r.Owner, r.Batch, r.Job, r.Started); err != nil {
		return err
	}
	r.MarkCompletedTx()
	return nil
}

// poolRun is one attempt of a job as the worker pool hands it over.
type poolRun = pool.Run
