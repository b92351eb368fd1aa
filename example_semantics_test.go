package millrace_test

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/millrace/millrace"
)

// Priorities: a claim serves the lowest priority number first, across
// everything waiting in the queue. A lane whose first job has waited
// longer than Config.StarveAfter is served ahead of the others, so none
// starves.
func ExampleInsertOpts_priority() {
	ctx := context.Background()
	pool := exampleDatabase()
	defer pool.Close()

	ran := make(chan string, 3)
	workers := millrace.NewWorkers()
	millrace.AddWorker(workers, millrace.WorkFunc(func(ctx context.Context, job *millrace.Job[EmailArgs]) error {
		ran <- fmt.Sprintf("%s (priority %d)", job.Args.Subject, job.Priority)
		return nil
	}))
	client, _ := millrace.NewClient(pool, millrace.Config{
		Workers: workers,
		Queues:  map[string]millrace.QueueConfig{millrace.DefaultQueue: {MaxWorkers: 1}},
		// Longer than this example may wait on a busy machine: past it,
		// the lane waiting longest would go first.
		StarveAfter: time.Minute,
	})
	// Waiting before any worker starts, the least urgent inserted first.
	client.Insert(ctx, EmailArgs{Subject: "newsletter"}, &millrace.InsertOpts{Priority: 3})
	client.Insert(ctx, EmailArgs{Subject: "receipt"}, &millrace.InsertOpts{Priority: 1})
	client.Insert(ctx, EmailArgs{Subject: "password reset"}, &millrace.InsertOpts{Priority: 0})
	client.Start(ctx)
	for range 3 {
		fmt.Println(<-ran)
	}
	client.Stop(ctx)
	// Output:
	// password reset (priority 0)
	// receipt (priority 1)
	// newsletter (priority 3)
}

// Scheduled jobs: RunAt makes a job wait in the schedule; it starts within
// a few milliseconds of its time (the leader sleeps until the next due job,
// and is woken when one is scheduled).
func ExampleInsertOpts_runAt() {
	ctx := context.Background()
	pool := exampleDatabase()
	defer pool.Close()

	started := make(chan time.Time, 1)
	workers := millrace.NewWorkers()
	millrace.AddWorker(workers, millrace.WorkFunc(func(ctx context.Context, job *millrace.Job[EmailArgs]) error {
		started <- time.Now()
		return nil
	}))
	client, _ := millrace.NewClient(pool, millrace.Config{
		Workers: workers,
		Queues:  map[string]millrace.QueueConfig{millrace.DefaultQueue: {MaxWorkers: 1}},
	})
	client.Start(ctx)
	res, _ := client.Insert(ctx, EmailArgs{Subject: "reminder"}, &millrace.InsertOpts{RunAt: time.Now().Add(300 * time.Millisecond)})
	fmt.Println("inserted as", res.State)
	at := <-started
	fmt.Println("started at its time, not before:", !at.Before(res.ScheduledAt) && at.Sub(res.ScheduledAt) < 10*time.Second)
	client.Stop(ctx)
	// Output:
	// inserted as scheduled
	// started at its time, not before: true
}

// JobSnooze runs the job again after a delay without counting an attempt:
// for "not yet", such as a rate limit.
func ExampleJobSnooze() {
	ctx := context.Background()
	pool := exampleDatabase()
	defer pool.Close()

	var snoozed atomic.Bool
	workers := millrace.NewWorkers()
	millrace.AddWorker(workers, millrace.WorkFunc(func(ctx context.Context, job *millrace.Job[EmailArgs]) error {
		fmt.Println("running attempt", job.Attempt)
		if !snoozed.Swap(true) {
			return millrace.JobSnooze(50 * time.Millisecond)
		}
		return nil
	}))
	client, _ := millrace.NewClient(pool, millrace.Config{
		Workers: workers,
		Queues:  map[string]millrace.QueueConfig{millrace.DefaultQueue: {MaxWorkers: 1}},
	})
	client.Start(ctx)
	res, _ := client.Insert(ctx, EmailArgs{To: "ada@example.com"}, nil)
	job := waitFinished(ctx, pool, res.ID)
	printAttempts(job)
	client.Stop(ctx)
	// Output:
	// running attempt 1
	// running attempt 1
	// attempt 1 snoozed
	// attempt 1 completed
}

// JobCancel finishes a job as cancelled from its worker: it never runs
// again, whatever attempts it has left. The reason is kept in history.
func ExampleJobCancel() {
	ctx := context.Background()
	pool := exampleDatabase()
	defer pool.Close()

	workers := millrace.NewWorkers()
	millrace.AddWorker(workers, millrace.WorkFunc(func(ctx context.Context, job *millrace.Job[EmailArgs]) error {
		return millrace.JobCancel(fmt.Errorf("account %s closed", job.Args.To))
	}))
	client, _ := millrace.NewClient(pool, millrace.Config{
		Workers: workers,
		Queues:  map[string]millrace.QueueConfig{millrace.DefaultQueue: {MaxWorkers: 1}},
	})
	client.Start(ctx)
	res, _ := client.Insert(ctx, EmailArgs{To: "gone@example.com"}, nil)
	job := waitFinished(ctx, pool, res.ID)
	fmt.Println(job.State)
	printAttempts(job)
	client.Stop(ctx)
	// Output:
	// cancelled
	// attempt 1 cancelled: account gone@example.com closed
}

// JobDiscard gives up on a job at once (an error no retry can fix); it is
// kept in history, and Retry queues it again, as a new job.
func ExampleJobDiscard() {
	ctx := context.Background()
	pool := exampleDatabase()
	defer pool.Close()

	ids := make(chan int64, 2)
	var runs atomic.Int32
	workers := millrace.NewWorkers()
	millrace.AddWorker(workers, millrace.WorkFunc(func(ctx context.Context, job *millrace.Job[EmailArgs]) error {
		ids <- job.ID
		if runs.Add(1) == 1 {
			return millrace.JobDiscard(errors.New("no such mailbox"))
		}
		return nil
	}))
	client, _ := millrace.NewClient(pool, millrace.Config{
		Workers: workers,
		Queues:  map[string]millrace.QueueConfig{millrace.DefaultQueue: {MaxWorkers: 1}},
		Logger:  quietLogger(),
	})
	client.Start(ctx)
	res, _ := client.Insert(ctx, EmailArgs{To: "typo@example.con"}, &millrace.InsertOpts{MaxAttempts: 10})
	job := waitFinished(ctx, pool, res.ID)
	fmt.Println(job.State, "after", job.Attempt, "of", job.MaxAttempts, "attempts")
	printAttempts(job)

	// The address was fixed meanwhile: run it again.
	n, _, _ := millrace.Retry(ctx, pool, res.ID)
	first, second := <-ids, <-ids
	fmt.Println("retried as a new job:", n != res.ID && second == n && first == res.ID)
	client.Stop(ctx)
	// Output:
	// discarded after 1 of 10 attempts
	// attempt 1 discarded: no such mailbox
	// retried as a new job: true
}

// Cancel from outside: a waiting job never runs; a running job's context
// is cancelled, with cause ErrCancelled, in whichever process runs it.
func ExampleClient_Cancel() {
	ctx := context.Background()
	pool := exampleDatabase()
	defer pool.Close()

	running := make(chan struct{})
	cause := make(chan bool, 1)
	workers := millrace.NewWorkers()
	millrace.AddWorker(workers, millrace.WorkFunc(func(ctx context.Context, job *millrace.Job[EmailArgs]) error {
		fmt.Println("running", job.Args.Subject)
		close(running)
		<-ctx.Done()
		cause <- errors.Is(context.Cause(ctx), millrace.ErrCancelled)
		return context.Cause(ctx)
	}))
	client, _ := millrace.NewClient(pool, millrace.Config{
		Workers: workers,
		Queues:  map[string]millrace.QueueConfig{millrace.DefaultQueue: {MaxWorkers: 1}},
	})

	// Waiting: it is finished as cancelled without running.
	waiting, _ := client.Insert(ctx, EmailArgs{Subject: "never sent"}, nil)
	r, _ := client.Cancel(ctx, waiting.ID)
	fmt.Println("waiting job:", r)
	client.Start(ctx)
	fmt.Println("waiting job is now", waitFinished(ctx, pool, waiting.ID).State)

	// Running: its worker sees its context end.
	res, _ := client.Insert(ctx, EmailArgs{Subject: "long report"}, nil)
	<-running
	r, _ = client.Cancel(ctx, res.ID)
	fmt.Println("running job:", r)
	fmt.Println("cancelled from outside:", <-cause)
	fmt.Println("running job is now", waitFinished(ctx, pool, res.ID).State)
	r, _ = millrace.Cancel(ctx, pool, res.ID) // from any process, with the pool only
	fmt.Println("again:", r)
	client.Stop(ctx)
	// Output:
	// waiting job: cancelled
	// waiting job is now cancelled
	// running long report
	// running job: cancelling
	// cancelled from outside: true
	// running job is now cancelled
	// again: finished
}

// KindOpts set a kind's policies once, at AddWorker: its default max
// attempts, its backoff (sub-second delays are honoured) and its timeout.
func ExampleKindOpts() {
	ctx := context.Background()
	pool := exampleDatabase()
	defer pool.Close()

	workers := millrace.NewWorkers()
	millrace.AddWorker(workers, millrace.WorkFunc(func(ctx context.Context, job *millrace.Job[EmailArgs]) error {
		<-ctx.Done() // a slow mail server: each attempt runs out of time
		return context.Cause(ctx)
	}), millrace.KindOpts{
		MaxAttempts: 2,
		Backoff:     func(attempt int) time.Duration { return 20 * time.Millisecond },
		Timeout:     50 * time.Millisecond,
	})
	client, _ := millrace.NewClient(pool, millrace.Config{
		Workers: workers,
		Queues:  map[string]millrace.QueueConfig{millrace.DefaultQueue: {MaxWorkers: 1}},
		Logger:  quietLogger(),
	})
	client.Start(ctx)
	res, _ := client.Insert(ctx, EmailArgs{To: "ada@example.com"}, nil)
	job := waitFinished(ctx, pool, res.ID)
	fmt.Println(job.State, "after", job.Attempt, "attempts")
	printAttempts(job)
	client.Stop(ctx)
	// Output:
	// discarded after 2 attempts
	// attempt 1 failed: millrace: job timed out
	// attempt 2 discarded: millrace: job timed out
}

// A job's own Timeout wins over its kind's. The context's cause says
// which limit ended it.
func ExampleInsertOpts_timeout() {
	ctx := context.Background()
	pool := exampleDatabase()
	defer pool.Close()

	workers := millrace.NewWorkers()
	millrace.AddWorker(workers, millrace.WorkFunc(func(ctx context.Context, job *millrace.Job[EmailArgs]) error {
		select {
		case <-time.After(time.Minute):
			return nil
		case <-ctx.Done():
			fmt.Println("timed out:", errors.Is(context.Cause(ctx), millrace.ErrTimeout))
			return fmt.Errorf("giving up on %s: %w", job.Args.To, context.Cause(ctx))
		}
	}), millrace.KindOpts{Timeout: time.Hour})
	client, _ := millrace.NewClient(pool, millrace.Config{
		Workers: workers,
		Queues:  map[string]millrace.QueueConfig{millrace.DefaultQueue: {MaxWorkers: 1}},
		Logger:  quietLogger(),
	})
	client.Start(ctx)
	res, _ := client.Insert(ctx, EmailArgs{To: "slow@example.com"}, &millrace.InsertOpts{Timeout: 50 * time.Millisecond, MaxAttempts: 1})
	printAttempts(waitFinished(ctx, pool, res.ID))
	client.Stop(ctx)
	// Output:
	// timed out: true
	// attempt 1 discarded: giving up on slow@example.com: millrace: job timed out
}
