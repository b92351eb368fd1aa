package classic

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/millrace/millrace/internal/bench"
	"github.com/millrace/millrace/internal/testkit"
)

func TestMain(m *testing.M) { testkit.Main(m) }

var names = []string{"que", "skiplocked", "skiplocked-batch", "skiplocked-lifo", "cursor"}

// counter records the runs of each job and the claims observed.
type counter struct {
	mu     sync.Mutex
	runs   map[int64]int
	procs  map[int]int // jobs run per Job.Process
	claims int
	work   time.Duration
}

func (c *counter) env(url string) bench.Env {
	c.runs = map[int64]int{}
	c.procs = map[int]int{}
	return bench.Env{URL: url, Workers: 8,
		Handle: func(ctx context.Context, j bench.Job) error {
			c.mu.Lock()
			c.runs[j.ID]++
			c.procs[j.Process]++
			c.mu.Unlock()
			time.Sleep(c.work)
			return nil
		},
		ObserveClaim: func(d time.Duration, n int) {
			c.mu.Lock()
			c.claims++
			c.mu.Unlock()
		},
	}
}

func (c *counter) worked() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.runs)
}

// waitFor polls until at least n distinct jobs have run.
func (c *counter) waitFor(t *testing.T, n int) {
	t.Helper()
	testkit.WaitFor(t, fmt.Sprintf("%d jobs to run", n), time.Minute, func() bool { return c.worked() >= n },
		func() string { return fmt.Sprintf("%d ran", c.worked()) })
}

// check fails unless jobs 0..n-1 each ran exactly once, a claim was
// observed and nothing remains.
func (c *counter) check(t *testing.T, s bench.Strategy, n int) {
	t.Helper()
	c.mu.Lock()
	defer c.mu.Unlock()
	for id := int64(0); id < int64(n); id++ {
		if c.runs[id] != 1 {
			t.Errorf("job %d ran %d times", id, c.runs[id])
		}
	}
	if len(c.runs) != n {
		t.Errorf("%d distinct jobs ran, want %d", len(c.runs), n)
	}
	if c.claims == 0 {
		t.Error("no claim was observed")
	}
	rem, err := s.Remaining(context.Background())
	if err != nil || len(rem) != 0 {
		t.Errorf("Remaining = %v, %v; want none", rem, err)
	}
}

func setup(t *testing.T, name string) (bench.Strategy, string) {
	t.Helper()
	f, err := bench.Lookup(name)
	if err != nil {
		t.Fatal(err)
	}
	url := testkit.EmptyDBURL(t)
	s := f()
	if err := s.Setup(context.Background(), url); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	if s.Name() != name || len(s.Tables()) != 1 || s.MaxBatch() != 1000 {
		t.Fatalf("%s: Name %q Tables %v MaxBatch %d", name, s.Name(), s.Tables(), s.MaxBatch())
	}
	return s, url
}

// startWork runs s.Work in the background; the returned func cancels it and
// returns how long Work took to return.
func startWork(t *testing.T, s bench.Strategy, env bench.Env) func() time.Duration {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Work(ctx, env) }()
	return func() time.Duration {
		start := time.Now()
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
		return time.Since(start)
	}
}

// enqueue puts jobs lo..hi-1 in, every third singly and the rest in
// batches of batch.
func enqueue(t *testing.T, s bench.Strategy, lo, hi int64, batch int) {
	t.Helper()
	ctx := context.Background()
	var b []bench.Job
	for i := lo; i < hi; i++ {
		j := bench.Job{ID: i, Payload: []byte(`{"x":1}`)}
		if i%3 == 0 {
			if err := s.Enqueue(ctx, []bench.Job{j}); err != nil {
				t.Fatal(err)
			}
			continue
		}
		if b = append(b, j); len(b) == batch {
			if err := s.Enqueue(ctx, b); err != nil {
				t.Fatal(err)
			}
			b = nil
		}
	}
	if err := s.Enqueue(ctx, b); err != nil {
		t.Fatal(err)
	}
}

// TestEachJobOnce enqueues singly and in batches while 8 workers run, and
// checks every job is worked exactly once and nothing remains.
func TestEachJobOnce(t *testing.T) {
	for _, name := range names {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			s, url := setup(t, name)
			var c counter
			stop := startWork(t, s, c.env(url))
			const n = 2000
			start := time.Now()
			enqueue(t, s, 0, n, 250)
			c.waitFor(t, n)
			took := time.Since(start)
			waitEmpty(t, s) // the last deletes have committed
			stop()
			c.check(t, s, n)
			t.Logf("%s: %d jobs in %v, %d claims", name, n, took, c.claims)
		})
	}
}

// TestCancelLosesNothing cancels Work mid-run and restarts it: Work must
// return promptly, and every job runs exactly once over both runs.
func TestCancelLosesNothing(t *testing.T) {
	for _, name := range names {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			s, url := setup(t, name)
			const n = 500
			enqueue(t, s, 0, n, 100)
			c := counter{work: 2 * time.Millisecond}
			env := c.env(url)
			stop := startWork(t, s, env)
			c.waitFor(t, 100)
			took := stop()
			if took > 2*time.Second {
				t.Errorf("Work took %v to return after cancel", took)
			}
			first := c.worked()
			if first == n {
				t.Fatalf("all %d jobs ran before the cancel", n)
			}
			stop = startWork(t, s, env)
			c.waitFor(t, n)
			waitEmpty(t, s)
			stop()
			c.check(t, s, n)
			t.Logf("%s: %d jobs before the cancel; Work returned %v after it", name, first, took)
		})
	}
}

// TestReconnect terminates the workers' connections mid-run: the workers
// must reconnect and work every job (at least once: a job whose connection
// dies between its work and its commit is worked again).
func TestReconnect(t *testing.T) {
	for _, name := range names {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			s, url := setup(t, name)
			const n = 500
			enqueue(t, s, 0, n, 100)
			killer, err := pgx.Connect(context.Background(), url)
			if err != nil {
				t.Fatal(err)
			}
			defer killer.Close(context.Background())
			c := counter{work: time.Millisecond}
			stop := startWork(t, s, c.env(url))
			for _, at := range []int{50, 200} {
				c.waitFor(t, at)
				// Right after a kill the workers may be between connections:
				// try again until one has reconnected.
				testkit.WaitFor(t, fmt.Sprintf("a worker connection to terminate after %d jobs", at), 5*time.Second, func() bool {
					var killed int
					err := killer.QueryRow(context.Background(), `SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity
						WHERE application_name = 'millrace-bench' AND datname = current_database()`).Scan(&killed)
					if err != nil {
						t.Fatal(err)
					}
					return killed > 0
				})
			}
			c.waitFor(t, n)
			waitEmpty(t, s)
			stop()
			c.mu.Lock()
			defer c.mu.Unlock()
			again := 0
			for _, r := range c.runs {
				again += r - 1
			}
			t.Logf("%s: %d jobs worked again after a dropped connection", name, again)
		})
	}
}

// waitEmpty polls Remaining until the strategy stores no job: the last
// job's DELETE has committed.
func waitEmpty(t *testing.T, s bench.Strategy) {
	t.Helper()
	var rem []int64
	testkit.WaitFor(t, "no job left stored", 30*time.Second, func() bool {
		var err error
		if rem, err = s.Remaining(context.Background()); err != nil {
			t.Fatal(err)
		}
		return len(rem) == 0
	}, func() string { return fmt.Sprintf("%d jobs still stored", len(rem)) })
}

// TestProcesses splits 6 workers into 3 processes: every job runs once,
// and each process's workers run jobs under their own index.
func TestProcesses(t *testing.T) {
	for _, name := range names {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			s, url := setup(t, name)
			if m, ok := s.(bench.Multiprocess); !ok || !m.Multiprocess() {
				t.Fatalf("%s does not run several processes", name)
			}
			c := counter{work: 2 * time.Millisecond}
			env := c.env(url)
			env.Workers, env.Processes = 6, 3
			stop := startWork(t, s, env)
			const n = 300
			enqueue(t, s, 0, n, 50)
			c.waitFor(t, n)
			waitEmpty(t, s)
			stop()
			c.check(t, s, n)
			c.mu.Lock()
			defer c.mu.Unlock()
			for p := range 3 {
				if c.procs[p] == 0 {
					t.Errorf("process %d ran no job: %v", p, c.procs)
				}
			}
			if len(c.procs) != 3 {
				t.Errorf("jobs ran under processes %v, want 0, 1, 2", c.procs)
			}
		})
	}
}
