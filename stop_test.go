package millrace_test

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/millrace/millrace"
)

// TestStopKeepsItsWord: Stop with a deadline returns by it although the
// running jobs ignore their context; when they do return, no further job
// starts, though claimed ones wait in the buffer; what the process held is
// released and run by another process, each job once.
func TestStopKeepsItsWord(t *testing.T) {
	ctx := context.Background()
	pool := newDB(t)
	gate := make(chan struct{}) // the first client's jobs ignore their context until this closes
	started := make(chan int, 16)
	var stopCalled atomic.Bool
	var startedAfterStop atomic.Int64
	workers := millrace.NewWorkers()
	millrace.AddWorker(workers, millrace.WorkFunc(func(ctx context.Context, j *millrace.Job[countArgs]) error {
		if stopCalled.Load() {
			startedAfterStop.Add(1)
		}
		started <- j.Args.N
		<-gate
		return nil
	}))
	// Its lease is short: the jobs it was running when Stop gave up are
	// released to the second client a lease after its session closed.
	first, _ := millrace.NewClient(pool, millrace.Config{Workers: workers, Logger: quietLogger(),
		Queues: map[string]millrace.QueueConfig{"default": {MaxWorkers: 2}}, ProcessLease: 2 * time.Second})
	params := make([]millrace.InsertManyParams, 10)
	for i := range params {
		params[i] = millrace.InsertManyParams{Args: countArgs{N: i}}
	}
	if _, err := first.InsertMany(ctx, params); err != nil {
		t.Fatal(err)
	}
	if err := first.Start(ctx); err != nil {
		t.Fatal(err)
	}
	<-started
	<-started // both workers are busy; the claimer has more jobs waiting for them
	stopCalled.Store(true)
	sctx, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
	defer cancel()
	err := first.Stop(sctx) // returns although the running jobs do not
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Stop = %v; want the deadline reported", err)
	}
	close(gate) // the first client's workers are free now: they must not start a job
	s := &seen{runs: map[int]int{}}
	second, _ := millrace.NewClient(pool, millrace.Config{Workers: countingWorkers(s, 0), Logger: quietLogger(),
		Queues: map[string]millrace.QueueConfig{"default": {MaxWorkers: 4}}})
	if err := second.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer second.Stop(ctx)
	// Every job finishes: the 8 the first client never ran, in the second;
	// the 2 it was running, in the second too unless their late outcome
	// reached the database before the first client's session closed.
	waitFor(t, "every job to finish", 20*time.Second, func() bool {
		counts, err := millrace.QueueCounts(ctx, pool)
		return err == nil && unfinished(counts) == 0 && s.n.Load() >= 8
	})
	if n := startedAfterStop.Load(); n != 0 {
		t.Fatalf("%d jobs started after Stop was called", n)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for i := 0; i < 10; i++ {
		if s.runs[i] > 1 {
			t.Fatalf("job %d ran %d times in the second client", i, s.runs[i])
		}
	}
}

// TestStopInTimeIsNil: Stop with a deadline, whose running jobs return as
// soon as their context is cancelled, returns nil: it cancels them before
// the deadline, so they return in time. A job cut short this way is not
// an attempt, and runs again in the next process.
func TestStopInTimeIsNil(t *testing.T) {
	ctx := context.Background()
	pool := newDB(t)
	running := make(chan struct{}, 2)
	workers := millrace.NewWorkers()
	millrace.AddWorker(workers, millrace.WorkFunc(func(ctx context.Context, j *millrace.Job[countArgs]) error {
		running <- struct{}{}
		<-ctx.Done() // honours its context, and only returns then
		return ctx.Err()
	}))
	c, _ := millrace.NewClient(pool, millrace.Config{Workers: workers, Logger: quietLogger(),
		Queues: map[string]millrace.QueueConfig{"default": {MaxWorkers: 2}}})
	if err := c.Start(ctx); err != nil {
		t.Fatal(err)
	}
	a, _ := c.Insert(ctx, countArgs{N: 1}, nil)
	b, _ := c.Insert(ctx, countArgs{N: 2}, nil)
	<-running
	<-running
	sctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	if err := c.Stop(sctx); err != nil {
		t.Fatalf("Stop = %v; want nil: every job returned as soon as its context was cancelled", err)
	}
	// Released by Stop, the jobs wait for the next process: none shows
	// as running in a process that is gone.
	counts, err := millrace.QueueCounts(ctx, pool)
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range counts {
		if q.Running != 0 || q.Available != 2 {
			t.Errorf("queue %s after Stop: %d running, %d available; want 0 and 2", q.Queue, q.Running, q.Available)
		}
	}
	s := &seen{runs: map[int]int{}}
	next, _ := millrace.NewClient(pool, millrace.Config{Workers: countingWorkers(s, 0), Logger: quietLogger(),
		Queues: map[string]millrace.QueueConfig{"default": {MaxWorkers: 2}}})
	if err := next.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer next.Stop(ctx)
	waitFor(t, "both jobs to run in the next process", 20*time.Second, func() bool { return s.n.Load() >= 2 })
	for _, id := range []int64{a.ID, b.ID} {
		j, err := millrace.JobByID(ctx, pool, id)
		if err != nil {
			t.Fatal(err)
		}
		if j.Attempt > 1 {
			t.Errorf("job %d: a run cut short by Stop counted as an attempt (attempt %d)", id, j.Attempt)
		}
	}
}

// TestStopAndCancel cancels running jobs at once; a job cut short is not
// an attempt.
func TestStopAndCancel(t *testing.T) {
	ctx := context.Background()
	pool := newDB(t)
	running := make(chan struct{}, 1)
	var attempts sync.Map
	workers := millrace.NewWorkers()
	millrace.AddWorker(workers, millrace.WorkFunc(func(ctx context.Context, j *millrace.Job[countArgs]) error {
		attempts.Store(j.Attempt, true)
		if j.Attempt > 1 {
			return nil
		}
		running <- struct{}{}
		<-ctx.Done() // honours its context
		return ctx.Err()
	}))
	c, _ := millrace.NewClient(pool, millrace.Config{Workers: workers, Logger: quietLogger(),
		Queues: map[string]millrace.QueueConfig{"default": {MaxWorkers: 1}}})
	if err := c.Start(ctx); err != nil {
		t.Fatal(err)
	}
	ins, _ := c.Insert(ctx, countArgs{N: 1}, nil)
	<-running
	if err := c.StopAndCancel(ctx); err != nil { // no deadline: returns because the job honoured cancel
		t.Fatal(err)
	}
	j, err := millrace.JobByID(ctx, pool, ins.ID)
	if err != nil {
		t.Fatalf("the cancelled job is gone: %v", err)
	}
	if j.Attempt != 0 {
		t.Fatalf("a job cut short by StopAndCancel counted as attempt %d", j.Attempt)
	}
}

// TestErrorHandlerSeesFailuresAndPanics: every failed attempt reaches the
// hook, with Panic and Discarded set as they happened.
func TestErrorHandlerSeesFailuresAndPanics(t *testing.T) {
	ctx := context.Background()
	pool := newDB(t)
	var mu sync.Mutex
	var got []millrace.JobError
	var logs syncBuffer
	workers := millrace.NewWorkers()
	millrace.AddWorker(workers, millrace.WorkFunc(func(ctx context.Context, j *millrace.Job[countArgs]) error {
		if j.Args.N == 1 {
			panic("boom")
		}
		return errors.New("plain failure")
	}))
	c, _ := millrace.NewClient(pool, millrace.Config{Workers: workers, Logger: slog.New(slog.NewTextHandler(&logs, nil)),
		Queues:  map[string]millrace.QueueConfig{"default": {MaxWorkers: 2}},
		Backoff: func(int) time.Duration { return 10 * time.Millisecond }, MaintenanceEvery: 20 * time.Millisecond,
		ErrorHandler: func(ctx context.Context, e *millrace.JobError) {
			mu.Lock()
			got = append(got, *e)
			mu.Unlock()
		}})
	if err := c.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer c.Stop(ctx)
	c.Insert(ctx, countArgs{N: 1}, &millrace.InsertOpts{MaxAttempts: 1})
	c.Insert(ctx, countArgs{N: 2}, &millrace.InsertOpts{MaxAttempts: 2})
	waitFor(t, "three failed attempts", 20*time.Second, func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(got) >= 3
	})
	mu.Lock()
	defer mu.Unlock()
	var panics, discarded int
	for _, e := range got {
		if e.Panic {
			panics++
		}
		if e.Discarded {
			discarded++
		}
	}
	if panics != 1 || discarded != 2 || len(got) != 3 {
		t.Fatalf("hook saw %d failures, %d panics, %d discards; want 3, 1, 2: %+v", len(got), panics, discarded, got)
	}
	out := logs.String()
	if strings.Count(out, "job failed; retrying") != 1 || strings.Count(out, "discarded") != 2 || !strings.Contains(out, "panic=true") {
		t.Fatalf("failed attempts not logged as they happened:\n%s", out)
	}
}

// syncBuffer is a bytes.Buffer safe for a logger's concurrent writes.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
