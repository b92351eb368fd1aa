package pool

import (
	"context"
	"errors"
	"testing"
	"time"
)

// cancellable is a pool whose handler tells each start on started, then
// waits for its context to end and tells the cause on causes.
func cancellable(e *env, cfg Config) (p *Pool, started chan int64, causes chan error) {
	started, causes = make(chan int64, 4), make(chan error, 4)
	cfg.Handle = func(ctx context.Context, run *Run) error {
		started <- run.Job.ID
		<-ctx.Done()
		causes <- context.Cause(ctx)
		return ctx.Err()
	}
	return e.pool(cfg), started, causes
}

// TestACancelRequestReachesTheRunningJob: a cancellation request
// (millrace.cancel) whose notification this process never gets is found
// by the watcher's poll: the running job's context ends with
// ErrCancelRequested as the cause, and the job is cancelled.
func TestACancelRequestReachesTheRunningJob(t *testing.T) {
	e := newEnv(t)
	p, started, causes := cancellable(e, Config{CancelPoll: 10 * time.Millisecond})
	id := e.enqueue()
	e.start(p)
	next(t, started, "the job to start")
	var out string
	if err := e.db.QueryRow(context.Background(), "SELECT millrace.cancel($1)", id).Scan(&out); err != nil {
		t.Fatal(err)
	}
	if out != "cancelling" {
		t.Fatalf("millrace.cancel said %q, want cancelling (the job runs)", out)
	}
	if c := next(t, causes, "the job's context to end"); !errors.Is(c, ErrCancelRequested) {
		t.Fatalf("the job's context ended with cause %v, want ErrCancelRequested", c)
	}
	e.waitFor("the job to be cancelled", func() bool { return e.state(id) == "cancelled" })
	if p.CancelJob(id) {
		t.Fatal("CancelJob found the finished job still running")
	}
}

// TestCancelJobCancelsAJobRunningHere: CancelJob (what a cancellation
// notification calls) ends the context of a job running in this process
// at once, with ErrCancelRequested as the cause, and reports whether the
// job ran here.
func TestCancelJobCancelsAJobRunningHere(t *testing.T) {
	e := newEnv(t)
	p, started, causes := cancellable(e, Config{CancelPoll: time.Hour})
	id := e.enqueue()
	e.start(p)
	if p.CancelJob(id + 1000) {
		t.Fatal("CancelJob reported cancelling a job that does not run here")
	}
	next(t, started, "the job to start")
	if !p.CancelJob(id) {
		t.Fatal("CancelJob did not find the running job")
	}
	if c := next(t, causes, "the job's context to end"); !errors.Is(c, ErrCancelRequested) {
		t.Fatalf("the job's context ended with cause %v, want ErrCancelRequested", c)
	}
	e.waitFor("the job to be cancelled", func() bool { return e.state(id) == "cancelled" })
}
