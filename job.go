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
	"fmt"
	"time"

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
	Args        T
}

// Worker runs jobs of one kind. A nil error completes the job; an error fails
// this attempt (retried with backoff until MaxAttempts, then discarded and
// kept in millrace.discarded for inspection).
type Worker[T JobArgs] interface {
	Work(ctx context.Context, job *Job[T]) error
}

type workFunc[T JobArgs] func(ctx context.Context, job *Job[T]) error

func (f workFunc[T]) Work(ctx context.Context, job *Job[T]) error { return f(ctx, job) }

// WorkFunc makes a Worker from a function.
func WorkFunc[T JobArgs](f func(ctx context.Context, job *Job[T]) error) Worker[T] {
	return workFunc[T](f)
}

// Workers is the set of workers a Client runs, one per kind.
type Workers struct {
	byKind map[string]func(ctx context.Context, j *storage.Job) error
}

// NewWorkers makes an empty worker set.
func NewWorkers() *Workers {
	return &Workers{byKind: map[string]func(ctx context.Context, j *storage.Job) error{}}
}

// AddWorker registers w for the kind of T. It panics if the kind is empty or
// already has a worker: both are programming errors found at start-up.
func AddWorker[T JobArgs](ws *Workers, w Worker[T]) {
	var zero T
	kind := zero.Kind()
	if kind == "" {
		panic("millrace: AddWorker: JobArgs.Kind() returned an empty kind")
	}
	if _, dup := ws.byKind[kind]; dup {
		panic("millrace: AddWorker: a worker for kind " + kind + " is already registered")
	}
	ws.byKind[kind] = func(ctx context.Context, sj *storage.Job) error {
		j := &Job[T]{ID: sj.ID, Queue: sj.Queue, Kind: sj.Kind, Priority: int(sj.Priority),
			Attempt: sj.Attempt + 1, MaxAttempts: sj.MaxAttempts, CreatedAt: sj.CreatedAt}
		if err := json.Unmarshal(sj.Args, &j.Args); err != nil {
			return fmt.Errorf("millrace: decoding args of job %d (kind %s): %w", sj.ID, kind, err)
		}
		return w.Work(ctx, j)
	}
}

// UnknownKindError is the error recorded for a job whose kind has no worker in
// the process that claimed it. The job is retried with backoff (a newer
// process may know the kind) and discarded after its last attempt.
type UnknownKindError struct{ Kind string }

func (e *UnknownKindError) Error() string {
	return fmt.Sprintf("millrace: no worker registered for job kind %q", e.Kind)
}

func (ws *Workers) handle(ctx context.Context, j *storage.Job) error {
	f, ok := ws.byKind[j.Kind]
	if !ok {
		return &UnknownKindError{Kind: j.Kind}
	}
	return f(ctx, j)
}
