package millrace_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/millrace/millrace"
)

// stressWorker is the body of a worker process in TestCrashStress: it works
// the queue and records every start and finish of a job, with its pid, in
// the test's own table, until it is killed.
func stressWorker(url string) {
	ctx := context.Background()
	pool, err := pgxpool.New(ctx, url)
	if err != nil {
		os.Exit(3)
	}
	pid := os.Getpid()
	workers := millrace.NewWorkers()
	millrace.AddWorker(workers, millrace.WorkFunc(func(ctx context.Context, j *millrace.Job[countArgs]) error {
		if _, err := pool.Exec(ctx, "INSERT INTO stress_run (n, pid, event) VALUES ($1, $2, 'start')", j.Args.N, pid); err != nil {
			return err
		}
		time.Sleep(time.Duration(rand.IntN(20)) * time.Millisecond)
		_, err := pool.Exec(ctx, "INSERT INTO stress_run (n, pid, event) VALUES ($1, $2, 'finish')", j.Args.N, pid)
		return err
	}))
	c, err := millrace.NewClient(pool, millrace.Config{Workers: workers, Logger: quietLogger(),
		Queues: map[string]millrace.QueueConfig{"default": {MaxWorkers: 8}}, RotateAfter: 2 * time.Second,
		// A killed process's batch is released a lease after it died: 3 s
		// rather than the default 15 keeps the test's wait for the last
		// jobs short.
		ProcessLease: 3 * time.Second, LeaderLease: 3 * time.Second})
	if err != nil {
		os.Exit(4)
	}
	if err := c.Start(ctx); err != nil {
		os.Exit(5)
	}
	select {}
}

// TestCrashStress runs three worker processes that are SIGKILLed and
// restarted over and over, while producers enqueue: some transactions roll
// back, some commit long after they enqueued while others flow. Every
// committed job must finish; no job of a rolled-back transaction may run;
// a job may run twice only if an earlier run was in a process that was
// killed (the crash window), and those are counted.
func TestCrashStress(t *testing.T) {
	if testing.Short() {
		t.Skip("stress test")
	}
	ctx := context.Background()
	pool := newDB(t)
	url := pool.Config().ConnString()
	if _, err := pool.Exec(ctx, "CREATE TABLE stress_run (n int NOT NULL, pid int NOT NULL, event text NOT NULL, at timestamptz DEFAULT clock_timestamp())"); err != nil {
		t.Fatal(err)
	}
	client, _ := millrace.NewClient(pool, millrace.Config{Logger: quietLogger()})

	var mu sync.Mutex
	procs := map[int]*exec.Cmd{}
	killed := map[int]bool{}
	spawn := func() {
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), "MILLRACE_STRESS_WORKER="+url)
		if err := cmd.Start(); err != nil {
			t.Error(err)
			return
		}
		go cmd.Wait()
		mu.Lock()
		procs[cmd.Process.Pid] = cmd
		mu.Unlock()
	}
	for i := 0; i < 3; i++ {
		spawn()
	}
	defer func() {
		mu.Lock()
		defer mu.Unlock()
		for _, c := range procs {
			c.Process.Kill()
		}
	}()

	// MILLRACE_STRESS_DURATION lengthens the run (and so how long the late
	// committers hold their transactions), e.g. to minutes: 15s by default
	// (four to seven kills; the suite runs it on every change).
	runFor := 15 * time.Second
	if v := os.Getenv("MILLRACE_STRESS_DURATION"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d < 10*time.Second {
			t.Fatalf("MILLRACE_STRESS_DURATION=%q: want a Go duration of at least 10s", v)
		}
		runFor = d
	}
	pctx, stopProducers := context.WithTimeout(ctx, runFor)
	defer stopProducers()
	var next atomic.Int64
	var committed, rolledBack sync.Map
	var wg sync.WaitGroup
	// Flowing producers: single inserts and small transactions, one in
	// five rolled back.
	for p := 0; p < 3; p++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for pctx.Err() == nil {
				tx, err := pool.Begin(ctx)
				if err != nil {
					continue
				}
				var ns []int
				for k := 0; k < 1+rand.IntN(5); k++ {
					n := int(next.Add(1))
					if _, err := client.InsertTx(ctx, tx, countArgs{N: n}, nil); err != nil {
						t.Error(err)
					}
					ns = append(ns, n)
				}
				if rand.IntN(5) == 0 {
					tx.Rollback(ctx)
					for _, n := range ns {
						rolledBack.Store(n, true)
					}
				} else if tx.Commit(ctx) == nil {
					for _, n := range ns {
						committed.Store(n, true)
					}
				}
				time.Sleep(time.Duration(rand.IntN(4)) * time.Millisecond)
			}
		}()
	}
	// Late committers: enqueue, then hold the transaction open for most of
	// the run while everything else flows past, then commit.
	for p := 0; p < 2; p++ {
		wg.Add(1)
		go func(p int) {
			defer wg.Done()
			tx, err := pool.Begin(ctx)
			if err != nil {
				t.Error(err)
				return
			}
			var ns []int
			for k := 0; k < 20; k++ {
				n := int(next.Add(1))
				client.InsertTx(ctx, tx, countArgs{N: n}, nil)
				ns = append(ns, n)
			}
			time.Sleep(runFor - 5*time.Second + time.Duration(p)*2*time.Second)
			if err := tx.Commit(ctx); err != nil {
				t.Error(err)
				return
			}
			for _, n := range ns {
				committed.Store(n, true)
			}
		}(p)
	}
	// The killer: every 2-4 s, SIGKILL one worker process and start another.
	kills := 0
	killDone := make(chan struct{})
	go func() {
		defer close(killDone)
		for pctx.Err() == nil {
			time.Sleep(time.Duration(2000+rand.IntN(2000)) * time.Millisecond)
			mu.Lock()
			for pid, c := range procs {
				c.Process.Signal(syscall.SIGKILL)
				killed[pid] = true
				delete(procs, pid)
				kills++
				break
			}
			mu.Unlock()
			spawn()
		}
	}()
	wg.Wait()
	<-killDone

	var want []int
	committed.Range(func(k, _ any) bool { want = append(want, k.(int)); return true })
	// Wait until every committed job has finished at least once.
	var missing int
	waitFor(t, "every committed job to finish", 90*time.Second, func() bool {
		if err := pool.QueryRow(ctx, `SELECT count(*) FROM unnest($1::int[]) w(n)
			WHERE NOT EXISTS (SELECT 1 FROM stress_run r WHERE r.n = w.n AND r.event = 'finish')`, want).Scan(&missing); err != nil {
			t.Fatal(err)
		}
		return missing == 0
	}, func() string { return fmt.Sprintf("%d of %d committed jobs never finished", missing, len(want)) })
	// Late duplicates come from the batches of killed processes, rescued
	// once their leases lapse: wait until no job is left without its
	// outcome, the ring has turned once more, and a sentinel has run.
	sentinel := int(next.Add(1))
	settle(t, pool, client, sentinel, func(n int) bool {
		var done bool
		pool.QueryRow(ctx, "SELECT EXISTS (SELECT 1 FROM stress_run WHERE n = $1 AND event = 'finish')", n).Scan(&done)
		return done
	}, true)

	var rb []int
	rolledBack.Range(func(k, _ any) bool { rb = append(rb, k.(int)); return true })
	var ranRolledBack int
	pool.QueryRow(ctx, "SELECT count(DISTINCT n) FROM stress_run WHERE n = ANY($1)", rb).Scan(&ranRolledBack)
	if ranRolledBack != 0 {
		t.Errorf("%d jobs of rolled-back transactions ran", ranRolledBack)
	}
	// Duplicates: every run of a job but its last must be in a killed process.
	rows, err := pool.Query(ctx, `SELECT n, array_agg(pid ORDER BY at) FROM stress_run WHERE event = 'start' GROUP BY n HAVING count(*) > 1`)
	if err != nil {
		t.Fatal(err)
	}
	dups := 0
	for rows.Next() {
		var n int
		var pids []int32
		if err := rows.Scan(&n, &pids); err != nil {
			t.Fatal(err)
		}
		dups++
		mu.Lock()
		for _, pid := range pids[:len(pids)-1] {
			if !killed[int(pid)] {
				t.Errorf("job %d ran more than once, and an earlier run (pid %d) was in a process that was not killed: %v", n, pid, pids)
			}
		}
		mu.Unlock()
	}
	if rows.Err() != nil {
		t.Fatal(rows.Err())
	}
	_ = pgx.ErrNoRows
	t.Logf("%d jobs committed, %d rolled back, %d worker kills, %d jobs run more than once (all in flight at a kill)",
		len(want), len(rb), kills, dups)
	if kills < 3 {
		t.Errorf("only %d kills happened", kills)
	}
}
