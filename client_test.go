package millrace_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/millrace/millrace"
	"github.com/millrace/millrace/internal/testkit"
)

func TestMain(m *testing.M) {
	if url := os.Getenv("MILLRACE_STRESS_WORKER"); url != "" {
		stressWorker(url) // a worker process of TestCrashStress; never returns
	}
	if url := os.Getenv("MILLRACE_LEASE_CHILD"); url != "" {
		leaseChild(url) // a client process of lease_test.go; never returns
	}
	if url := os.Getenv("MILLRACE_TEST_WORKER"); url != "" {
		testWorker(url, os.Getenv("MILLRACE_TEST_QUEUE")) // a worker process of faults_test.go; never returns
	}
	testkit.Main(m)
}

type countArgs struct {
	N    int    `json:"n"`
	Fail int    `json:"fail,omitempty"` // fail this many attempts first
	Pad  string `json:"pad,omitempty"`
}

func (countArgs) Kind() string { return "count" }

// newDB and waitFor are the kit's, under the names this package's tests
// have always used: a pool on a fresh database at the current schema, and
// a wait for a condition (polled, with a deadline).
var (
	newDB   = testkit.DB
	waitFor = testkit.WaitFor
)

// quietLogger discards the client's logs; MILLRACE_TEST_LOG=1 shows them.
func quietLogger() *slog.Logger {
	if os.Getenv("MILLRACE_TEST_LOG") != "" {
		return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	return slog.New(slog.NewTextHandler(io.Discard, nil))
}

// seen records how many times each job ran.
type seen struct {
	mu   sync.Mutex
	runs map[int]int
	n    atomic.Int64
}

func (s *seen) add(n int) {
	s.mu.Lock()
	s.runs[n]++
	s.mu.Unlock()
	s.n.Add(1)
}

// ran reports whether job n has run.
func (s *seen) ran(n int) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.runs[n] > 0
}

// countingWorkers is a worker set whose "count" worker records each run in
// s, after sleeping for work.
func countingWorkers(s *seen, work time.Duration) *millrace.Workers {
	workers := millrace.NewWorkers()
	millrace.AddWorker(workers, millrace.WorkFunc(func(ctx context.Context, j *millrace.Job[countArgs]) error {
		time.Sleep(work)
		s.add(j.Args.N)
		return nil
	}))
	return workers
}

// settle waits until a test that counts runs has seen every run it will
// ever see, without a sleep: every job of the database has its outcome
// (none available, running or scheduled: a job runs again only from a
// batch without its ack, or from the schedule); if rotations, the ring has
// turned once more since (a rotation moves what is unfinished forward);
// and a sentinel job (countArgs{N: sentinel}) inserted after that has run
// (ran reports it). The caller then stops its workers, which wait for the
// jobs they run.
func settle(t *testing.T, pool *pgxpool.Pool, client *millrace.Client, sentinel int, ran func(n int) bool, rotations bool) {
	t.Helper()
	ctx := context.Background()
	var counts []millrace.QueueCount
	waitFor(t, "every job to have its outcome", 60*time.Second, func() bool {
		var err error
		if counts, err = millrace.QueueCounts(ctx, pool); err != nil {
			if isCode(err, "57014") {
				// The leader cancelled the read: it kept a slot of the
				// ring past its time (a loaded machine, a strict default
				// isolation; docs/deploy.md). Read again.
				return false
			}
			t.Fatal(err)
		}
		for _, c := range counts {
			if c.Available+c.Running+c.Scheduled > 0 {
				return false
			}
		}
		return true
	}, func() string { return fmt.Sprintf("counts %+v", counts) })
	if rotations {
		st, err := millrace.ReadStats(ctx, pool)
		if err != nil {
			t.Fatal(err)
		}
		waitFor(t, "one more rotation", 60*time.Second, func() bool {
			now, err := millrace.ReadStats(ctx, pool)
			return err == nil && now.Rotations > st.Rotations
		})
	}
	if _, err := client.Insert(ctx, countArgs{N: sentinel}, nil); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the sentinel job", 60*time.Second, func() bool { return ran(sentinel) })
}

func TestInsertWorkExactlyOnce(t *testing.T) {
	ctx := context.Background()
	pool := newDB(t)
	s := &seen{runs: map[int]int{}}
	workers := countingWorkers(s, 0)
	client, err := millrace.NewClient(pool, millrace.Config{Workers: workers, Logger: quietLogger(),
		Queues: map[string]millrace.QueueConfig{"default": {MaxWorkers: 8}}, RotateAfter: 300 * time.Millisecond,
		MaintenanceEvery: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if err := client.Start(ctx); err != nil {
		t.Fatal(err)
	}
	const single, bulk = 300, 1700
	var wg sync.WaitGroup
	for p := 0; p < 3; p++ {
		wg.Add(1)
		go func(p int) {
			defer wg.Done()
			for i := p; i < single; i += 3 {
				if _, err := client.Insert(ctx, countArgs{N: i}, nil); err != nil {
					t.Error(err)
					return
				}
			}
		}(p)
	}
	params := make([]millrace.InsertManyParams, bulk)
	for i := range params {
		params[i] = millrace.InsertManyParams{Args: countArgs{N: single + i}}
	}
	if n, err := client.InsertMany(ctx, params); err != nil || len(n) != bulk {
		t.Fatalf("InsertMany = %d, %v", len(n), err)
	}
	wg.Wait()
	waitFor(t, "all jobs to run", 60*time.Second, func() bool { return s.n.Load() >= single+bulk })
	settle(t, pool, client, single+bulk, s.ran, true)
	if err := client.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < single+bulk; i++ {
		if s.runs[i] != 1 {
			t.Fatalf("job %d ran %d times, want 1", i, s.runs[i])
		}
	}
}

func TestRolledBackInsertNeverRuns(t *testing.T) {
	ctx := context.Background()
	pool := newDB(t)
	s := &seen{runs: map[int]int{}}
	workers := countingWorkers(s, 0)
	client, _ := millrace.NewClient(pool, millrace.Config{Workers: workers, Logger: quietLogger(),
		Queues: map[string]millrace.QueueConfig{"default": {MaxWorkers: 2}}})
	if err := client.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer client.Stop(ctx)
	tx, _ := pool.Begin(ctx)
	if _, err := client.InsertTx(ctx, tx, countArgs{N: 1}, nil); err != nil {
		t.Fatal(err)
	}
	tx.Rollback(ctx)
	// A transaction that commits late: enqueued first, committed after
	// others have been claimed; it must not be skipped.
	late, _ := pool.Begin(ctx)
	client.InsertTx(ctx, late, countArgs{N: 2}, nil)
	client.Insert(ctx, countArgs{N: 3}, nil)
	waitFor(t, "job 3", 10*time.Second, func() bool { return s.n.Load() >= 1 })
	if err := late.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "late job 2", 10*time.Second, func() bool { return s.n.Load() >= 2 })
	settle(t, pool, client, 4, s.ran, false)
	if err := client.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.runs[1] != 0 || s.runs[2] != 1 || s.runs[3] != 1 {
		t.Fatalf("runs = %v: want job 1 never (rolled back), 2 and 3 once", s.runs)
	}
}

func TestRetryThenDiscard(t *testing.T) {
	ctx := context.Background()
	pool := newDB(t)
	var attempts sync.Map
	workers := millrace.NewWorkers()
	millrace.AddWorker(workers, millrace.WorkFunc(func(ctx context.Context, j *millrace.Job[countArgs]) error {
		attempts.Store(j.Args.N, j.Attempt)
		if j.Attempt <= j.Args.Fail {
			return errors.New("boom")
		}
		return nil
	}))
	client, _ := millrace.NewClient(pool, millrace.Config{Workers: workers, Logger: quietLogger(),
		Queues:           map[string]millrace.QueueConfig{"default": {MaxWorkers: 2}},
		Backoff:          func(int) time.Duration { return 50 * time.Millisecond },
		MaintenanceEvery: 50 * time.Millisecond})
	if err := client.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer client.Stop(ctx)
	client.Insert(ctx, countArgs{N: 1, Fail: 2}, &millrace.InsertOpts{MaxAttempts: 5}) // succeeds on attempt 3
	client.Insert(ctx, countArgs{N: 2, Fail: 9}, &millrace.InsertOpts{MaxAttempts: 2}) // discarded after 2
	waitFor(t, "retries", 20*time.Second, func() bool {
		a, _ := attempts.Load(1)
		var n int
		pool.QueryRow(ctx, "SELECT count(*) FROM millrace.history WHERE state = 'discarded' AND attempt = 2 AND error = 'boom'").Scan(&n)
		return a == 3 && n == 1
	})
}

func TestBadInput(t *testing.T) {
	ctx := context.Background()
	pool := newDB(t)
	client, err := millrace.NewClient(pool, millrace.Config{MaxArgsBytes: 100})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := client.Insert(ctx, countArgs{Pad: string(make([]byte, 200))}, nil); !errors.Is(err, millrace.ErrArgsTooLarge) {
		t.Fatalf("oversized args: err = %v, want ErrArgsTooLarge", err)
	}
	if _, err := client.Insert(ctx, countArgs{}, &millrace.InsertOpts{MaxAttempts: -1}); err == nil {
		t.Fatal("negative MaxAttempts accepted")
	}
	if _, err := pool.Exec(ctx, "SELECT millrace.enqueue('')"); err == nil {
		t.Fatal("SQL enqueue of an empty kind accepted")
	}
	if _, err := millrace.NewClient(pool, millrace.Config{Queues: map[string]millrace.QueueConfig{"q": {MaxWorkers: 1}}}); err == nil {
		t.Fatal("queues without workers accepted")
	}
	var n int
	pool.QueryRow(ctx, "SELECT count(*) FROM millrace.job_0").Scan(&n)
	if n != 0 {
		t.Fatalf("%d jobs stored after rejected inserts", n)
	}
}

func newPool(ctx context.Context, url string) (*pgxpool.Pool, error) {
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		return nil, err
	}
	cfg.MaxConns = 20
	return pgxpool.NewWithConfig(ctx, cfg)
}

// unfinished is the number of jobs not yet finished in counts.
func unfinished(counts []millrace.QueueCount) int64 {
	var n int64
	for _, c := range counts {
		n += c.Available + c.Running + c.Scheduled
	}
	return n
}

// TestRetryDueSoonIsAnnounced: a job that fails and is due again within
// the promoter's wait is announced on millrace_sched once its failure is
// flushed, so that the leader's promoter moves it at once rather than at
// its next look a second later. The client's Sender sends it after the
// flush commits (a NOTIFY in the flush held the notification lock through
// its WAL flush).
func TestRetryDueSoonIsAnnounced(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	pool := newDB(t)
	l, err := pool.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Release()
	if _, err := l.Exec(ctx, "LISTEN millrace_sched"); err != nil {
		t.Fatal(err)
	}
	failed := make(chan struct{})
	workers := millrace.NewWorkers()
	millrace.AddWorker(workers, millrace.WorkFunc(func(ctx context.Context, j *millrace.Job[countArgs]) error {
		if j.Attempt == 1 {
			close(failed)
			return errors.New("boom")
		}
		return nil
	}))
	client, _ := millrace.NewClient(pool, millrace.Config{Workers: workers, Logger: quietLogger(),
		Queues:  map[string]millrace.QueueConfig{"default": {MaxWorkers: 1}},
		Backoff: func(int) time.Duration { return 10 * time.Millisecond }})
	if err := client.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer client.Stop(context.Background())
	if _, err := client.Insert(ctx, countArgs{N: 1}, &millrace.InsertOpts{MaxAttempts: 3}); err != nil {
		t.Fatal(err)
	}
	<-failed
	if _, err := l.Conn().WaitForNotification(ctx); err != nil {
		t.Fatalf("no NOTIFY on millrace_sched after a failure due again in 10 ms: %v", err)
	}
}
