package millrace_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/millrace/millrace"
)

// Periodic jobs: the leader enqueues one job per slot of a cron schedule,
// each slot exactly once however many processes run it.
func ExamplePeriodicJob() {
	ctx := context.Background()
	pool := exampleDatabase()
	defer pool.Close()

	ran := make(chan string, 10)
	workers := millrace.NewWorkers()
	millrace.AddWorker(workers, millrace.WorkFunc(func(ctx context.Context, job *millrace.Job[EmailArgs]) error {
		ran <- job.Args.Subject
		return nil
	}))
	client, _ := millrace.NewClient(pool, millrace.Config{
		Workers: workers,
		Queues:  map[string]millrace.QueueConfig{millrace.DefaultQueue: {MaxWorkers: 1}},
		Periodic: []millrace.PeriodicJob{{
			Name:     "digest",
			Schedule: "@every 1s", // or "*/5 * * * *", "@hourly", "CRON_TZ=Europe/Paris 0 9 * * 1-5"
			Args:     EmailArgs{To: "team@example.com", Subject: "digest"},
		}},
	})
	client.Start(ctx)
	fmt.Println(<-ran)
	fmt.Println(<-ran)
	client.Stop(ctx)

	var slots int
	pool.QueryRow(ctx, "SELECT count(*) FROM millrace.periodic WHERE name = 'digest'").Scan(&slots)
	fmt.Println("slots recorded:", slots >= 2)
	// Output:
	// digest
	// digest
	// slots recorded: true
}

// Pausing a queue stops every process claiming from it within a second;
// its jobs wait, and storage keeps rotating. Resuming wakes its workers.
func ExampleClient_PauseQueue() {
	ctx := context.Background()
	pool := exampleDatabase()
	defer pool.Close()

	ran := make(chan string, 1)
	workers := millrace.NewWorkers()
	millrace.AddWorker(workers, millrace.WorkFunc(func(ctx context.Context, job *millrace.Job[EmailArgs]) error {
		ran <- job.Args.Subject
		return nil
	}))
	client, _ := millrace.NewClient(pool, millrace.Config{
		Workers: workers,
		Queues:  map[string]millrace.QueueConfig{"email": {MaxWorkers: 1}},
	})
	client.Start(ctx)
	client.PauseQueue(ctx, "email")
	paused, _ := millrace.QueuePaused(ctx, pool, "email")
	fmt.Println("paused:", paused)

	res, _ := client.Insert(ctx, EmailArgs{Subject: "held"}, &millrace.InsertOpts{Queue: "email"})
	select {
	case s := <-ran:
		fmt.Println("ran while paused:", s)
	case <-time.After(500 * time.Millisecond):
	}
	job, _ := millrace.JobByID(ctx, pool, res.ID)
	fmt.Println("while paused the job is", job.State)

	client.ResumeQueue(ctx, "email")
	fmt.Println("resumed, ran:", <-ran)
	client.Stop(ctx)
	// Output:
	// paused: true
	// while paused the job is available
	// resumed, ran: held
}

// CompleteTx completes a job inside the worker's own transaction: the
// job's completion and its database effects commit together, or neither.
func ExampleCompleteTx() {
	ctx := context.Background()
	pool := exampleDatabase()
	defer pool.Close()
	pool.Exec(ctx, "CREATE TABLE sent (address text PRIMARY KEY)")

	workers := millrace.NewWorkers()
	millrace.AddWorker(workers, millrace.WorkFunc(func(ctx context.Context, job *millrace.Job[EmailArgs]) error {
		tx, err := pool.Begin(ctx)
		if err != nil {
			return err
		}
		defer tx.Rollback(ctx)
		if _, err := tx.Exec(ctx, "INSERT INTO sent VALUES ($1)", job.Args.To); err != nil {
			return err
		}
		if err := millrace.CompleteTx(ctx, tx, job); err != nil {
			return err
		}
		return tx.Commit(ctx)
	}))
	client, _ := millrace.NewClient(pool, millrace.Config{
		Workers: workers,
		Queues:  map[string]millrace.QueueConfig{millrace.DefaultQueue: {MaxWorkers: 1}},
	})
	client.Start(ctx)
	res, _ := client.Insert(ctx, EmailArgs{To: "ada@example.com"}, nil)
	job := waitFinished(ctx, pool, res.ID)
	var n int
	pool.QueryRow(ctx, "SELECT count(*) FROM sent").Scan(&n)
	fmt.Println(job.State, "with", len(job.Attempts), "attempt; rows written:", n)
	client.Stop(ctx)
	// Output: completed with 1 attempt; rows written: 1
}

// History keeps every finished attempt of a job, with its error and
// timing: completed jobs for Config.CompletedRetention (24 h by default),
// the others for Config.DiscardedRetention (7 days). JobByID reads it, and
// the millrace.history view answers by kind, queue and state.
func ExampleJobByID() {
	ctx := context.Background()
	pool := exampleDatabase()
	defer pool.Close()

	workers := millrace.NewWorkers()
	millrace.AddWorker(workers, millrace.WorkFunc(func(ctx context.Context, job *millrace.Job[EmailArgs]) error {
		if job.Attempt == 1 {
			return errors.New("smtp: 421 try again later")
		}
		return nil
	}))
	client, _ := millrace.NewClient(pool, millrace.Config{
		Workers: workers,
		Queues:  map[string]millrace.QueueConfig{millrace.DefaultQueue: {MaxWorkers: 1}},
		Backoff: func(attempt int) time.Duration { return 10 * time.Millisecond },
		Logger:  quietLogger(),
	})
	client.Start(ctx)
	res, _ := client.Insert(ctx, EmailArgs{To: "ada@example.com"}, nil)
	job := waitFinished(ctx, pool, res.ID)
	fmt.Println(job.Kind, job.State, "after", job.Attempt, "attempts")
	for _, a := range job.Attempts {
		fmt.Printf("attempt %d %s %q, ran %v\n", a.Attempt, a.State, a.Error, !a.Finished.Before(a.Started))
	}
	var failed int
	pool.QueryRow(ctx, "SELECT count(*) FROM millrace.history WHERE kind = 'email' AND state = 'failed'").Scan(&failed)
	fmt.Println("failed attempts of kind email:", failed)
	client.Stop(ctx)
	// Output:
	// email completed after 2 attempts
	// attempt 1 failed "smtp: 421 try again later", ran true
	// attempt 2 completed "", ran true
	// failed attempts of kind email: 1
}

// Insert returns the job as it left it: its id, state and due time, and
// whether a unique job blocked it.
func ExampleClient_Insert() {
	ctx := context.Background()
	pool := exampleDatabase()
	defer pool.Close()
	client, _ := millrace.NewClient(pool, millrace.Config{})

	now, _ := client.Insert(ctx, EmailArgs{To: "ada@example.com"}, nil)
	fmt.Println(now.Kind, now.Queue, now.State, "duplicate:", now.Duplicate)

	at := time.Now().Add(time.Hour).Truncate(time.Second)
	later, _ := client.Insert(ctx, EmailArgs{To: "bob@example.com"}, &millrace.InsertOpts{RunAt: at, Queue: "email"})
	fmt.Println(later.Kind, later.Queue, later.State, "at run_at:", later.ScheduledAt.Equal(at))

	many, _ := client.InsertMany(ctx, []millrace.InsertManyParams{
		{Args: EmailArgs{To: "eve@example.com"}, Opts: &millrace.InsertOpts{Unique: &millrace.UniqueOpts{ByArgs: true}}},
		{Args: EmailArgs{To: "eve@example.com"}, Opts: &millrace.InsertOpts{Unique: &millrace.UniqueOpts{ByArgs: true}}},
	})
	fmt.Println("second is a duplicate of the first:", many[1].Duplicate && many[1].ID == many[0].ID)
	// A duplicate carries the job that blocked it: its state and due time.
	fmt.Println("with its state and due time:", many[1].State, many[1].ScheduledAt.Equal(many[0].ScheduledAt))
	// Output:
	// email default available duplicate: false
	// email email scheduled at run_at: true
	// second is a duplicate of the first: true
	// with its state and due time: available true
}

// Subscribe delivers this process's job outcomes once they are committed,
// with the job and its timing.
func ExampleClient_Subscribe() {
	ctx := context.Background()
	pool := exampleDatabase()
	defer pool.Close()

	workers := millrace.NewWorkers()
	millrace.AddWorker(workers, millrace.WorkFunc(func(ctx context.Context, job *millrace.Job[EmailArgs]) error {
		if job.Attempt == 1 {
			return errors.New("mailbox busy")
		}
		return nil
	}))
	client, _ := millrace.NewClient(pool, millrace.Config{
		Workers: workers,
		Queues:  map[string]millrace.QueueConfig{millrace.DefaultQueue: {MaxWorkers: 1}},
		Backoff: func(attempt int) time.Duration { return 10 * time.Millisecond },
		Logger:  quietLogger(),
	})
	events, unsubscribe := client.Subscribe(millrace.EventCompleted, millrace.EventFailed)
	defer unsubscribe()
	client.Start(ctx)
	client.Insert(ctx, EmailArgs{To: "ada@example.com"}, nil)
	for range 2 {
		e := <-events
		fmt.Printf("%s: %s attempt %d %q, timed: %v\n", e.Kind, e.JobKind, e.Attempt, e.Err, e.RunTime() >= 0 && e.Wait() >= 0)
	}
	client.Stop(ctx)
	// Output:
	// failed: email attempt 1 "mailbox busy", timed: true
	// completed: email attempt 2 "", timed: true
}

// Middleware wraps every insert and every attempt: for logging, metrics
// and tracing, or to change jobs on their way in.
func ExampleInsertMiddleware() {
	ctx := context.Background()
	pool := exampleDatabase()
	defer pool.Close()

	done := make(chan struct{})
	workers := millrace.NewWorkers()
	millrace.AddWorker(workers, millrace.WorkFunc(func(ctx context.Context, job *millrace.Job[EmailArgs]) error {
		fmt.Println("working on", job.Args.To)
		return nil
	}))
	client, _ := millrace.NewClient(pool, millrace.Config{
		Workers: workers,
		Queues:  map[string]millrace.QueueConfig{millrace.DefaultQueue: {MaxWorkers: 1}},
		InsertMiddleware: []millrace.InsertMiddleware{
			func(ctx context.Context, jobs []*millrace.InsertParams, next func(context.Context) ([]millrace.InsertResult, error)) ([]millrace.InsertResult, error) {
				for _, j := range jobs {
					fmt.Println("inserting", j.Kind, string(j.Args))
					j.Opts.Priority = 7 // every job of this client runs at priority 7
				}
				return next(ctx)
			},
		},
		WorkMiddleware: []millrace.WorkMiddleware{
			func(ctx context.Context, job *millrace.JobMeta, next func(context.Context) error) error {
				fmt.Printf("start %s job, attempt %d, priority %d\n", job.Kind, job.Attempt, job.Priority)
				err := next(ctx)
				fmt.Println("end:", err)
				close(done)
				return err
			},
		},
	})
	client.Start(ctx)
	client.Insert(ctx, EmailArgs{To: "ada@example.com"}, nil)
	<-done
	client.Stop(ctx)
	// Output:
	// inserting email {"to":"ada@example.com","subject":""}
	// start email job, attempt 1, priority 7
	// working on ada@example.com
	// end: <nil>
}

// A concurrency limit caps how many jobs of a queue run at once across
// every process of the database, whatever each process's MaxWorkers:
// here at most 2 of the "reports" queue, though each of two processes
// has 5 workers. Set it in QueueConfig.Limit, with SetLimit at run time,
// or in SQL (SELECT millrace.set_limit('reports', 2)).
func ExampleSetLimit() {
	ctx := context.Background()
	pool := exampleDatabase()
	defer pool.Close()

	var mu sync.Mutex
	running, most, done := 0, 0, make(chan struct{}, 10)
	// A job waits (up to 5 s) until two run at once, so what the example
	// shows is the limit, not how fast this machine claims.
	two, once := make(chan struct{}), sync.Once{}
	workers := millrace.NewWorkers()
	millrace.AddWorker(workers, millrace.WorkFunc(func(ctx context.Context, job *millrace.Job[EmailArgs]) error {
		mu.Lock()
		running++
		most = max(most, running)
		if running == 2 {
			once.Do(func() { close(two) })
		}
		mu.Unlock()
		select {
		case <-two:
		case <-time.After(5 * time.Second):
		}
		time.Sleep(20 * time.Millisecond)
		mu.Lock()
		running--
		mu.Unlock()
		done <- struct{}{}
		return nil
	}))
	var client *millrace.Client
	for range 2 {
		client, _ = millrace.NewClient(pool, millrace.Config{
			Workers: workers,
			Queues:  map[string]millrace.QueueConfig{"reports": {MaxWorkers: 5, Limit: &millrace.Limit{Running: 2}}},
		})
		client.Start(ctx)
		defer client.Stop(ctx)
	}
	limits, _ := millrace.Limits(ctx, pool)
	fmt.Printf("%s: at most %d running\n", limits[0].Queue, limits[0].Limit.Running)

	for range 10 {
		client.Insert(ctx, EmailArgs{Subject: "report"}, &millrace.InsertOpts{Queue: "reports"})
	}
	for range 10 {
		<-done
	}
	fmt.Println("most running at once:", most)

	// Raised at run time: every process takes it at its next claim.
	millrace.SetLimit(ctx, pool, "reports", millrace.Limit{Running: 4})
	limits, _ = millrace.Limits(ctx, pool)
	fmt.Printf("%s: at most %d running\n", limits[0].Queue, limits[0].Limit.Running)
	// Output:
	// reports: at most 2 running
	// most running at once: 2
	// reports: at most 4 running
}

// A per-key limit caps how many jobs of one key run at once across every
// process: here at most 1 email per recipient (the args field "to"),
// while emails to different recipients run side by side. A job whose
// key is at its limit waits in the schedule, so the jobs of other keys
// behind it are not held back. Set it in SQL here (the same as
// Limit{PerKey: 1, Key: []string{"to"}} in QueueConfig.Limit or SetLimit).
func ExampleLimit_perKey() {
	ctx := context.Background()
	pool := exampleDatabase()
	defer pool.Close()

	var mu sync.Mutex
	running, most, done := map[string]int{}, 0, make(chan struct{}, 6)
	workers := millrace.NewWorkers()
	millrace.AddWorker(workers, millrace.WorkFunc(func(ctx context.Context, job *millrace.Job[EmailArgs]) error {
		mu.Lock()
		running[job.Args.To]++
		most = max(most, running[job.Args.To])
		mu.Unlock()
		time.Sleep(10 * time.Millisecond)
		mu.Lock()
		running[job.Args.To]--
		mu.Unlock()
		done <- struct{}{}
		return nil
	}))
	pool.Exec(ctx, "SELECT millrace.set_limit('mail', p_per_key => 1, p_key => '{to}')")
	client, _ := millrace.NewClient(pool, millrace.Config{
		Workers: workers,
		Queues:  map[string]millrace.QueueConfig{"mail": {MaxWorkers: 6}},
	})
	client.Start(ctx)
	defer client.Stop(ctx)
	limits, _ := millrace.Limits(ctx, pool)
	fmt.Printf("%s: at most %d running per %v\n", limits[0].Queue, limits[0].Limit.PerKey, limits[0].Limit.Key)

	for i := range 6 {
		to := []string{"ada@example.com", "bob@example.com"}[i%2]
		client.Insert(ctx, EmailArgs{To: to, Subject: "receipt"}, &millrace.InsertOpts{Queue: "mail"})
	}
	for range 6 {
		<-done
	}
	fmt.Println("most running at once for one recipient:", most)
	// Output:
	// mail: at most 1 running per [args.to]
	// most running at once for one recipient: 1
}

// A per-key rate caps how many jobs of one key start per period across
// every process: here at most 2 emails an hour to one recipient. The
// jobs past a key's rate wait in the schedule (JobState "scheduled"),
// due one every period / rate from when the window has room, while
// other recipients' emails go on. Set it in SQL here (the same as
// Limit{KeyRate: 2, KeyPer: time.Hour, Key: []string{"to"}}).
func ExampleLimit_keyRate() {
	ctx := context.Background()
	pool := exampleDatabase()
	defer pool.Close()

	var mu sync.Mutex
	sent := map[string]int{}
	workers := millrace.NewWorkers()
	millrace.AddWorker(workers, millrace.WorkFunc(func(ctx context.Context, job *millrace.Job[EmailArgs]) error {
		mu.Lock()
		sent[job.Args.To]++
		mu.Unlock()
		return nil
	}))
	pool.Exec(ctx, "SELECT millrace.set_limit('digest', p_key_rate => 2, p_key_per => '1 hour', p_key => '{to}')")
	client, _ := millrace.NewClient(pool, millrace.Config{
		Workers: workers,
		Queues:  map[string]millrace.QueueConfig{"digest": {MaxWorkers: 4}},
	})
	client.Start(ctx)
	defer client.Stop(ctx)
	limits, _ := millrace.Limits(ctx, pool)
	fmt.Printf("%s: at most %d starting per %s per %v\n", limits[0].Queue, limits[0].Limit.KeyRate, limits[0].Limit.KeyPer, limits[0].Limit.Key)

	var params []millrace.InsertManyParams
	for _, to := range []string{"ada@example.com", "ada@example.com", "ada@example.com", "bob@example.com"} {
		params = append(params, millrace.InsertManyParams{Args: EmailArgs{To: to, Subject: "digest"}, Opts: &millrace.InsertOpts{Queue: "digest"}})
	}
	ids, _ := client.InsertMany(ctx, params)
	third := waitState(ctx, pool, ids[2].ID, "scheduled")
	for _, r := range ids[:2] {
		waitFinished(ctx, pool, r.ID)
	}
	waitFinished(ctx, pool, ids[3].ID)
	mu.Lock()
	fmt.Println("sent to ada:", sent["ada@example.com"], "to bob:", sent["bob@example.com"])
	mu.Unlock()
	fmt.Println("ada's third digest:", third.State, "in about an hour:", time.Until(third.RunAt).Round(time.Hour))
	// Output:
	// digest: at most 2 starting per 1h0m0s per [args.to]
	// sent to ada: 2 to bob: 1
	// ada's third digest: scheduled in about an hour: 1h0m0s
}
