package millrace_test

import (
	"context"
	"fmt"
	"time"

	"github.com/millrace/millrace"
)

// EmailArgs are the typed arguments of a job kind.
type EmailArgs struct {
	To      string `json:"to"`
	Subject string `json:"subject"`
}

// Kind names the job kind; it selects the worker.
func (EmailArgs) Kind() string { return "email" }

// A client that inserts a job and works it.
func ExampleClient() {
	ctx := context.Background()
	pool := exampleDatabase() // a *pgxpool.Pool on a migrated database
	defer pool.Close()

	done := make(chan string)
	workers := millrace.NewWorkers()
	millrace.AddWorker(workers, millrace.WorkFunc(func(ctx context.Context, job *millrace.Job[EmailArgs]) error {
		done <- fmt.Sprintf("sent %q to %s (attempt %d)", job.Args.Subject, job.Args.To, job.Attempt)
		return nil
	}))
	client, err := millrace.NewClient(pool, millrace.Config{
		Workers: workers,
		Queues:  map[string]millrace.QueueConfig{millrace.DefaultQueue: {MaxWorkers: 4}},
	})
	if err != nil {
		panic(err)
	}
	if err := client.Start(ctx); err != nil {
		panic(err)
	}
	if _, err := client.Insert(ctx, EmailArgs{To: "ada@example.com", Subject: "welcome"}, nil); err != nil {
		panic(err)
	}
	fmt.Println(<-done)

	stopCtx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := client.Stop(stopCtx); err != nil {
		panic(err)
	}
	// Output: sent "welcome" to ada@example.com (attempt 1)
}

// A job enqueued inside a transaction exists only if the transaction
// commits.
func ExampleClient_InsertTx() {
	ctx := context.Background()
	pool := exampleDatabase()
	defer pool.Close()
	client, _ := millrace.NewClient(pool, millrace.Config{})

	tx, _ := pool.Begin(ctx)
	client.InsertTx(ctx, tx, EmailArgs{To: "bob@example.com", Subject: "never sent"}, nil)
	tx.Rollback(ctx) // the job is gone with the transaction

	tx, _ = pool.Begin(ctx)
	client.InsertTx(ctx, tx, EmailArgs{To: "eve@example.com", Subject: "sent"}, nil)
	tx.Commit(ctx)

	var n int
	pool.QueryRow(ctx, "SELECT count(*) FROM (SELECT id FROM millrace.job_0 UNION ALL SELECT id FROM millrace.job_1 UNION ALL SELECT id FROM millrace.job_2) j").Scan(&n)
	fmt.Println("jobs stored:", n)
	// Output: jobs stored: 1
}

// Any language can enqueue with SQL, inside its own transaction.
func Example_sqlEnqueue() {
	ctx := context.Background()
	pool := exampleDatabase()
	defer pool.Close()

	var id int64
	err := pool.QueryRow(ctx, `SELECT millrace.enqueue('email', '{"to":"sql@example.com","subject":"hi"}', p_queue => 'mail')`).Scan(&id)
	fmt.Println(err == nil && id > 0)
	// Output: true
}

// Retries: a failing job runs again after a backoff until MaxAttempts, then
// it is discarded and kept in history (millrace.history).
func ExampleConfig_backoff() {
	ctx := context.Background()
	pool := exampleDatabase()
	defer pool.Close()

	attempts := make(chan int, 3)
	workers := millrace.NewWorkers()
	millrace.AddWorker(workers, millrace.WorkFunc(func(ctx context.Context, job *millrace.Job[EmailArgs]) error {
		attempts <- job.Attempt
		return fmt.Errorf("smtp unavailable")
	}))
	client, _ := millrace.NewClient(pool, millrace.Config{
		Workers:          workers,
		Queues:           map[string]millrace.QueueConfig{millrace.DefaultQueue: {MaxWorkers: 1}},
		Backoff:          func(attempt int) time.Duration { return 10 * time.Millisecond },
		MaintenanceEvery: 20 * time.Millisecond,
	})
	// An event is sent once its outcome has committed.
	discarded, unsubscribe := client.Subscribe(millrace.EventDiscarded)
	defer unsubscribe()
	client.Start(ctx)
	client.Insert(ctx, EmailArgs{To: "x@example.com"}, &millrace.InsertOpts{MaxAttempts: 3})
	for i := 0; i < 3; i++ {
		fmt.Println("attempt", <-attempts)
	}
	<-discarded
	var errText string
	pool.QueryRow(ctx, "SELECT error FROM millrace.history WHERE state = 'discarded'").Scan(&errText)
	fmt.Println("discarded:", errText)
	client.Stop(ctx)
	// Output:
	// attempt 1
	// attempt 2
	// attempt 3
	// discarded: smtp unavailable
}
