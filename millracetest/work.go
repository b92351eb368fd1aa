package millracetest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/millrace/millrace"
)

// WorkOpts describe the job Work hands a worker; the zero value is a
// first attempt of a job just inserted into the default queue.
type WorkOpts struct {
	ID          int64  // default 1
	Queue       string // default millrace.DefaultQueue
	Priority    int
	Attempt     int // default 1
	MaxAttempts int // default millrace.DefaultMaxAttempts
	// CreatedAt and ReadyAt default to now.
	CreatedAt time.Time
	ReadyAt   time.Time
	// Timeout, if set, cancels the worker's context after this long with
	// cause millrace.ErrTimeout, as a client does.
	Timeout time.Duration
}

// Work runs one attempt of a job with arguments args through worker,
// without a client or a database, and returns what the worker returned.
// The arguments go through JSON first, as they would through the queue, so
// a field that does not survive encoding shows up here. nil means the job
// would complete; millrace.IsSnooze, millrace.IsCancel and
// millrace.IsDiscard tell the outcomes a worker can ask for from a failure
// (retried until its last attempt, then discarded). A panic is not
// recovered: it fails the test where it happened. millrace.CompleteTx
// returns millrace.ErrNotRunning for a job run this way.
func Work[T millrace.JobArgs](ctx context.Context, worker millrace.Worker[T], args T, opts *WorkOpts) error {
	var o WorkOpts
	if opts != nil {
		o = *opts
	}
	kind := args.Kind()
	if kind == "" {
		return errors.New("millracetest: JobArgs.Kind() returned an empty kind")
	}
	enc, err := json.Marshal(args)
	if err != nil {
		return fmt.Errorf("millracetest: encoding args of kind %s: %w", kind, err)
	}
	now := time.Now()
	job := &millrace.Job[T]{ID: o.ID, Queue: o.Queue, Kind: kind, Priority: o.Priority, Attempt: o.Attempt,
		MaxAttempts: o.MaxAttempts, CreatedAt: o.CreatedAt, ReadyAt: o.ReadyAt}
	if err := json.Unmarshal(enc, &job.Args); err != nil {
		return fmt.Errorf("millracetest: decoding args of kind %s: %w", kind, err)
	}
	if job.ID == 0 {
		job.ID = 1
	}
	if job.Queue == "" {
		job.Queue = millrace.DefaultQueue
	}
	if job.Attempt == 0 {
		job.Attempt = 1
	}
	if job.MaxAttempts == 0 {
		job.MaxAttempts = millrace.DefaultMaxAttempts
	}
	if job.CreatedAt.IsZero() {
		job.CreatedAt = now
	}
	if job.ReadyAt.IsZero() {
		job.ReadyAt = job.CreatedAt
	}
	jctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	if o.Timeout > 0 {
		t := time.AfterFunc(o.Timeout, func() { cancel(millrace.ErrTimeout) })
		defer t.Stop()
	}
	return worker.Work(jctx, job)
}
