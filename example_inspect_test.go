package millrace_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/millrace/millrace"
)

// Jobs not yet finished can be inspected by id and counted per queue and
// state, without naming any of the protocol's tables.
func ExampleQueueCounts() {
	ctx := context.Background()
	pool := exampleDatabase()
	defer pool.Close()
	client, _ := millrace.NewClient(pool, millrace.Config{})
	res, _ := client.Insert(ctx, EmailArgs{To: "ada@example.com"}, &millrace.InsertOpts{Queue: "email"})
	client.Insert(ctx, EmailArgs{To: "bob@example.com"}, &millrace.InsertOpts{Queue: "email", RunAt: time.Now().Add(time.Hour)})

	job, err := millrace.JobByID(ctx, pool, res.ID)
	if err != nil {
		panic(err)
	}
	fmt.Println(job.Kind, job.Queue, job.State)
	counts, err := millrace.QueueCounts(ctx, pool)
	if err != nil {
		panic(err)
	}
	for _, c := range counts {
		fmt.Printf("%s: %d available, %d running, %d scheduled\n", c.Queue, c.Available, c.Running, c.Scheduled)
	}
	applied, latest, _ := millrace.SchemaVersion(ctx, pool)
	fmt.Println("schema up to date:", applied == latest)
	// Output:
	// email email available
	// email: 1 available, 0 running, 1 scheduled
	// schema up to date: true
}

// ErrorHandler hears about every failed attempt, panics included.
func ExampleConfig_errorHandler() {
	ctx := context.Background()
	pool := exampleDatabase()
	defer pool.Close()
	failed := make(chan string, 1)
	workers := millrace.NewWorkers()
	millrace.AddWorker(workers, millrace.WorkFunc(func(ctx context.Context, job *millrace.Job[EmailArgs]) error {
		return errors.New("mail server down")
	}))
	client, _ := millrace.NewClient(pool, millrace.Config{
		Workers: workers,
		Queues:  map[string]millrace.QueueConfig{millrace.DefaultQueue: {MaxWorkers: 1}},
		Logger:  quietLogger(),
		ErrorHandler: func(ctx context.Context, e *millrace.JobError) {
			failed <- fmt.Sprintf("%s attempt %d/%d failed: %v (discarded: %v)", e.Kind, e.Attempt, e.MaxAttempts, e.Err, e.Discarded)
		},
	})
	client.Start(ctx)
	client.Insert(ctx, EmailArgs{To: "ada@example.com"}, &millrace.InsertOpts{MaxAttempts: 1})
	fmt.Println(<-failed)
	client.Stop(ctx)
	// Output: email attempt 1/1 failed: mail server down (discarded: true)
}

// StopAndCancel cancels running jobs at once; a job cut short this way is
// not counted as an attempt and runs again, in full, later.
func ExampleClient_StopAndCancel() {
	ctx := context.Background()
	pool := exampleDatabase()
	defer pool.Close()
	running := make(chan struct{})
	workers := millrace.NewWorkers()
	millrace.AddWorker(workers, millrace.WorkFunc(func(ctx context.Context, job *millrace.Job[EmailArgs]) error {
		close(running)
		<-ctx.Done()
		return ctx.Err()
	}))
	client, _ := millrace.NewClient(pool, millrace.Config{
		Workers: workers,
		Queues:  map[string]millrace.QueueConfig{millrace.DefaultQueue: {MaxWorkers: 1}},
	})
	client.Start(ctx)
	res, _ := client.Insert(ctx, EmailArgs{To: "ada@example.com"}, nil)
	<-running
	if err := client.StopAndCancel(ctx); err != nil {
		panic(err)
	}
	job, _ := millrace.JobByID(ctx, pool, res.ID)
	fmt.Println("attempts so far:", job.Attempt)
	// Output: attempts so far: 0
}

// ReadStats shows the storage ring: which slot producers write into, and
// how many times the ring turned.
func ExampleReadStats() {
	ctx := context.Background()
	pool := exampleDatabase()
	defer pool.Close()
	st, err := millrace.ReadStats(ctx, pool)
	if err != nil {
		panic(err)
	}
	fmt.Println("current slot:", st.CurrentSlot, "rotations:", st.Rotations)
	// Output: current slot: 0 rotations: 0
}
