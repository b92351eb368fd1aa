package millrace_test

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/millrace/millrace"
)

// Unique jobs: a job is not inserted while another with the same key still
// blocks it; Insert then returns that job, with Duplicate set. The key is
// the kind plus each dimension enabled: the arguments (all, or some keys),
// the queue, the period.
func ExampleUniqueOpts() {
	ctx := context.Background()
	pool := exampleDatabase()
	defer pool.Close()
	client, _ := millrace.NewClient(pool, millrace.Config{}) // inserts only: the jobs stay waiting
	insert := func(what string, args EmailArgs, opts *millrace.InsertOpts) {
		r, err := client.Insert(ctx, args, opts)
		if err != nil {
			panic(err)
		}
		fmt.Printf("%-28s duplicate=%-5v state=%s\n", what, r.Duplicate, r.State)
	}

	byArgs := &millrace.InsertOpts{Unique: &millrace.UniqueOpts{ByArgs: true}}
	insert("by args", EmailArgs{To: "ada@example.com", Subject: "hi"}, byArgs)
	insert("by args, same", EmailArgs{To: "ada@example.com", Subject: "hi"}, byArgs)
	insert("by args, other subject", EmailArgs{To: "ada@example.com", Subject: "bye"}, byArgs)

	byTo := &millrace.InsertOpts{Unique: &millrace.UniqueOpts{ByArgs: true, ArgKeys: []string{"to"}}}
	insert("by arg key to", EmailArgs{To: "bob@example.com", Subject: "hi"}, byTo)
	insert("by arg key to, other subject", EmailArgs{To: "bob@example.com", Subject: "bye"}, byTo)

	insert("by queue a", EmailArgs{}, &millrace.InsertOpts{Queue: "a", Unique: &millrace.UniqueOpts{ByQueue: true}})
	insert("by queue b", EmailArgs{}, &millrace.InsertOpts{Queue: "b", Unique: &millrace.UniqueOpts{ByQueue: true}})
	insert("by queue a, again", EmailArgs{}, &millrace.InsertOpts{Queue: "a", Unique: &millrace.UniqueOpts{ByQueue: true}})

	// By period: one job per hour of its run time (now, if none).
	hour := time.Now().UTC().Truncate(time.Hour).Add(2 * time.Hour)
	hourly := func(at time.Time) *millrace.InsertOpts {
		return &millrace.InsertOpts{RunAt: at, Unique: &millrace.UniqueOpts{ByPeriod: time.Hour}}
	}
	insert("by period, :10", EmailArgs{Subject: "digest"}, hourly(hour.Add(10*time.Minute)))
	insert("by period, :50", EmailArgs{Subject: "digest"}, hourly(hour.Add(50*time.Minute)))
	insert("by period, next hour", EmailArgs{Subject: "digest"}, hourly(hour.Add(70*time.Minute)))

	// Keys are locked until the inserting transaction ends, which needs
	// READ COMMITTED: a later snapshot could not see a concurrent insert.
	tx, _ := pool.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.RepeatableRead})
	_, err := client.InsertTx(ctx, tx, EmailArgs{To: "eve@example.com"}, byArgs)
	fmt.Println(err)
	tx.Rollback(ctx)
	// Output:
	// by args                      duplicate=false state=available
	// by args, same                duplicate=true  state=available
	// by args, other subject       duplicate=false state=available
	// by arg key to                duplicate=false state=available
	// by arg key to, other subject duplicate=true  state=available
	// by queue a                   duplicate=false state=available
	// by queue b                   duplicate=false state=available
	// by queue a, again            duplicate=true  state=available
	// by period, :10               duplicate=false state=scheduled
	// by period, :50               duplicate=true  state=scheduled
	// by period, next hour         duplicate=false state=scheduled
	// ERROR: millrace: unique jobs must be inserted at READ COMMITTED (this transaction is repeatable read) (SQLSTATE 0A000)
}

// ByState: a unique job blocks while it is unfinished, and after it
// finished in one of ByState (while history keeps it).
func ExampleUniqueOpts_byState() {
	ctx := context.Background()
	pool := exampleDatabase()
	defer pool.Close()
	workers := millrace.NewWorkers()
	millrace.AddWorker(workers, millrace.WorkFunc(func(ctx context.Context, job *millrace.Job[EmailArgs]) error {
		return nil
	}))
	client, _ := millrace.NewClient(pool, millrace.Config{
		Workers: workers,
		Queues:  map[string]millrace.QueueConfig{millrace.DefaultQueue: {MaxWorkers: 1}},
	})
	client.Start(ctx)

	once := &millrace.InsertOpts{Unique: &millrace.UniqueOpts{ByArgs: true,
		ByState: []millrace.JobState{millrace.JobCompleted}}}
	first, _ := client.Insert(ctx, EmailArgs{To: "ada@example.com", Subject: "welcome"}, once)
	waitFinished(ctx, pool, first.ID)
	again, _ := client.Insert(ctx, EmailArgs{To: "ada@example.com", Subject: "welcome"}, once)
	fmt.Println("welcome once: duplicate", again.Duplicate, "of a job", again.State)

	whileQueued := &millrace.InsertOpts{Unique: &millrace.UniqueOpts{ByArgs: true}}
	first, _ = client.Insert(ctx, EmailArgs{To: "ada@example.com", Subject: "news"}, whileQueued)
	waitFinished(ctx, pool, first.ID)
	again, _ = client.Insert(ctx, EmailArgs{To: "ada@example.com", Subject: "news"}, whileQueued)
	fmt.Println("news while queued: duplicate", again.Duplicate)
	client.Stop(ctx)
	// Output:
	// welcome once: duplicate true of a job completed
	// news while queued: duplicate false
}

// From SQL, millrace.enqueue_unique enqueues like millrace.enqueue and
// says what happened: the job's id, whether it was a duplicate (then
// nothing was inserted, and the id, state and due time are the existing
// job's), its state and when it is due.
func ExampleUniqueOpts_sql() {
	ctx := context.Background()
	pool := exampleDatabase()
	defer pool.Close()
	enqueue := func() {
		var id int64
		var duplicate bool
		var state string
		var runAt time.Time
		err := pool.QueryRow(ctx, `SELECT id, duplicate, state, run_at FROM millrace.enqueue_unique('report', '{"day":"2026-12-06"}',
			p_run_at => now() + interval '1 hour', p_unique_key => 'report:2026-12-06')`).Scan(&id, &duplicate, &state, &runAt)
		if err != nil {
			panic(err)
		}
		fmt.Printf("job %d duplicate=%v state=%s due in an hour: %v\n", id, duplicate, state, time.Until(runAt) > 50*time.Minute)
	}
	enqueue()
	enqueue()
	// Output:
	// job 1 duplicate=false state=scheduled due in an hour: true
	// job 1 duplicate=true state=scheduled due in an hour: true
}
