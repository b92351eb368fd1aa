// Package clientkit is the part of the test kit (package testkit) that
// runs a real millrace client: a job worked until it is discarded, a
// steady load for the dashboard's charts. It is apart from testkit because
// it imports package millrace, whose own packages' tests use testkit.
package clientkit

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/millrace/millrace"
	"github.com/millrace/millrace/internal/testkit"
)

// FailArgs are the arguments of a job whose worker always fails.
type FailArgs struct {
	Why string `json:"why"`
}

// Kind is the job kind of FailArgs.
func (FailArgs) Kind() string { return "always_fails" }

// Discard runs one job of kind always_fails on queue with one attempt and
// waits until it is discarded; it returns the job's id.
func Discard(t testing.TB, db *pgxpool.Pool, queue, why string) int64 {
	t.Helper()
	return runOne(t, db, queue, why, "discarded")
}

// Complete runs one job of kind always_fails whose worker, here, succeeds
// (its Why is the args kept while it waits), on queue, and waits until it
// is completed; it returns the job's id.
func Complete(t testing.TB, db *pgxpool.Pool, queue, why string) int64 {
	t.Helper()
	return runOne(t, db, queue, why, "completed")
}

// runOne runs one FailArgs job on queue with one attempt, whose worker
// fails with why unless state is "completed", and waits until history
// has it in state.
func runOne(t testing.TB, db *pgxpool.Pool, queue, why, state string) int64 {
	t.Helper()
	ctx := context.Background()
	done := make(chan struct{}, 1)
	workers := millrace.NewWorkers()
	millrace.AddWorker(workers, millrace.WorkFunc(func(ctx context.Context, j *millrace.Job[FailArgs]) error {
		if state == "completed" {
			done <- struct{}{}
			return nil
		}
		return errors.New(j.Args.Why)
	}))
	client, err := millrace.NewClient(db, millrace.Config{
		Workers: workers,
		Queues:  map[string]millrace.QueueConfig{queue: {MaxWorkers: 1}},
		Logger:  slog.New(slog.NewTextHandler(io.Discard, nil)),
		ErrorHandler: func(ctx context.Context, e *millrace.JobError) {
			if e.Discarded {
				done <- struct{}{}
			}
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := client.Start(ctx); err != nil {
		t.Fatal(err)
	}
	ins, err := client.Insert(ctx, FailArgs{Why: why}, &millrace.InsertOpts{Queue: queue, MaxAttempts: 1})
	if err != nil {
		t.Fatal(err)
	}
	id := ins.ID
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatalf("the job was not %s within 30 s", state)
	}
	sctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	client.Stop(sctx)
	// The outcome is recorded by the acker's flush: wait until history has it.
	testkit.WaitFor(t, fmt.Sprintf("job %d in history as %s", id, state), 10*time.Second, func() bool {
		var n int
		if err := db.QueryRow(ctx, "SELECT count(*) FROM millrace.history WHERE id = $1 AND state = $2", id, state).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n > 0
	})
	return id
}

// WorkArgs are the arguments of a job that takes Millis milliseconds and
// fails when Fail is set.
type WorkArgs struct {
	Millis int  `json:"millis"`
	Fail   bool `json:"fail,omitempty"`
}

// Kind is the job kind of WorkArgs.
func (WorkArgs) Kind() string { return "work" }

// Work runs a producer of perSecond jobs a second on queue, a few of them
// failing, and a client that works them, until the test ends: something
// for the live charts to draw.
func Work(t testing.TB, db *pgxpool.Pool, queue string, perSecond int) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	workers := millrace.NewWorkers()
	millrace.AddWorker(workers, millrace.WorkFunc(func(ctx context.Context, j *millrace.Job[WorkArgs]) error {
		select {
		case <-time.After(time.Duration(j.Args.Millis) * time.Millisecond):
		case <-ctx.Done():
			return ctx.Err()
		}
		if j.Args.Fail {
			return errors.New("work: the remote end said no")
		}
		return nil
	}))
	client, err := millrace.NewClient(db, millrace.Config{
		Workers: workers,
		Queues:  map[string]millrace.QueueConfig{queue: {MaxWorkers: 8}},
		Logger:  slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := client.Start(ctx); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		tick := time.NewTicker(time.Second / time.Duration(perSecond))
		defer tick.Stop()
		for n := 0; ; n++ {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
			client.Insert(ctx, WorkArgs{Millis: 5 + n%20, Fail: n%40 == 0}, &millrace.InsertOpts{Queue: queue, MaxAttempts: 2})
		}
	}()
	t.Cleanup(func() {
		cancel()
		<-done
		sctx, c := context.WithTimeout(context.Background(), 10*time.Second)
		defer c()
		client.StopAndCancel(sctx)
	})
}
