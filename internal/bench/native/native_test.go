package native

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/millrace/millrace/internal/bench"
	"github.com/millrace/millrace/internal/testkit"
)

func TestMain(m *testing.M) { testkit.Main(m) }

// TestDefaultWorkers: without --workers millrace runs River's benchmark's
// worker count, as the river strategy does, not the 32 of the strategies
// that hold a connection per worker; with it, what it is given.
func TestDefaultWorkers(t *testing.T) {
	if got := (&bench.Config{}).WorkersFor("millrace"); got != bench.GoroutineWorkers {
		t.Errorf("millrace without --workers runs %d workers, want %d", got, bench.GoroutineWorkers)
	}
	if got := (&bench.Config{Workers: 7}).WorkersFor("millrace"); got != 7 {
		t.Errorf("millrace with --workers 7 runs %d workers", got)
	}
}

// TestEachJobOnce puts jobs in by single inserts and COPY while workers run,
// and checks every job is worked exactly once and nothing remains.
func TestEachJobOnce(t *testing.T) {
	ctx := context.Background()
	url := testkit.EmptyDBURL(t)
	s := &Strategy{}
	if err := s.Setup(ctx, url); err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var mu sync.Mutex
	runs := map[int64]int{}
	claims := 0
	env := bench.Env{URL: url, Workers: 8,
		Handle: func(ctx context.Context, j bench.Job) error {
			mu.Lock()
			runs[j.ID]++
			mu.Unlock()
			return nil
		},
		ObserveClaim: func(d time.Duration, n int) { mu.Lock(); claims++; mu.Unlock() },
	}
	wctx, stop := context.WithCancel(ctx)
	done := make(chan error)
	go func() { done <- s.Work(wctx, env) }()
	const n = 3000
	var batch []bench.Job
	for i := int64(0); i < n; i++ {
		j := bench.Job{ID: i, Payload: []byte(`{"x":1}`)}
		if i%3 == 0 {
			if err := s.Enqueue(ctx, []bench.Job{j}); err != nil {
				t.Fatal(err)
			}
			continue
		}
		batch = append(batch, j)
		if len(batch) == 500 {
			if err := s.Enqueue(ctx, batch); err != nil {
				t.Fatal(err)
			}
			batch = nil
		}
	}
	if err := s.Enqueue(ctx, batch); err != nil {
		t.Fatal(err)
	}
	testkit.WaitFor(t, "every job to run", time.Minute, func() bool { mu.Lock(); defer mu.Unlock(); return len(runs) == n })
	testkit.WaitFor(t, "every ack", time.Minute, func() bool { rem, err := s.Remaining(ctx); return err == nil && len(rem) == 0 })
	stop()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	for id, c := range runs {
		if c != 1 {
			t.Fatalf("job %d ran %d times", id, c)
		}
	}
	if claims == 0 {
		t.Fatal("no claim was observed")
	}
	rem, err := s.Remaining(ctx)
	if err != nil || len(rem) != 0 {
		t.Fatalf("Remaining = %v, %v; want none", rem, err)
	}
}

// setup makes a strategy on a fresh database.
func setup(t *testing.T) (*Strategy, string) {
	t.Helper()
	url := testkit.EmptyDBURL(t)
	s := &Strategy{}
	if err := s.Setup(context.Background(), url); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s, url
}

// TestTablesAndRotations checks the sampler's view of the schema: every
// real table of schema millrace (plain tables and partitions), no
// partitioned parent, and a rotation count read through millrace.ReadStats.
func TestTablesAndRotations(t *testing.T) {
	ctx := context.Background()
	s, _ := setup(t)
	tables := s.Tables()
	rows, _ := s.pool.Query(ctx, `SELECT 'millrace.' || c.relname, c.relkind::text FROM pg_class c
		WHERE c.relnamespace = 'millrace'::regnamespace AND c.relkind IN ('r', 'p')`)
	kinds, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) ([2]string, error) {
		var k [2]string
		return k, r.Scan(&k[0], &k[1])
	})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]bool{}
	for _, k := range kinds {
		want[k[0]] = k[1] == "r"
	}
	n := 0
	for _, name := range tables {
		if !want[name] {
			t.Errorf("Tables lists %q, not a plain table or partition of schema millrace", name)
		}
		n++
	}
	for name, real := range want {
		if real && !slices.Contains(tables, name) {
			t.Errorf("Tables leaves out %q", name)
		}
	}
	if n == 0 {
		t.Fatal("no tables")
	}
	r, err := s.Rotations(ctx)
	if err != nil || r < 0 {
		t.Errorf("Rotations = %d, %v", r, err)
	}
}

// TestRemaining enqueues on the main queue, on a queue of its own and in
// transactions (one committed, one rolled back) with no worker running:
// Remaining lists exactly the committed jobs.
func TestRemaining(t *testing.T) {
	ctx := context.Background()
	s, _ := setup(t)
	job := func(id int64) []bench.Job { return []bench.Job{{ID: id, Payload: []byte(`{"x":1}`)}} }
	for id := int64(1); id <= 3; id++ {
		if err := s.Enqueue(ctx, job(id)); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Enqueue(ctx, []bench.Job{{ID: 4}, {ID: 5}}); err != nil {
		t.Fatal(err)
	}
	if err := s.EnqueueQueue(ctx, "elsewhere", []bench.Job{{ID: 6}, {ID: 7}}); err != nil {
		t.Fatal(err)
	}
	for id, commit := range map[int64]bool{8: true, 9: false} {
		tx, err := s.pool.Begin(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if err := s.EnqueueTx(ctx, tx, job(id)[0]); err != nil {
			t.Fatal(err)
		}
		if commit {
			err = tx.Commit(ctx)
		} else {
			err = tx.Rollback(ctx)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	rem, err := s.Remaining(ctx)
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(rem)
	if want := []int64{1, 2, 3, 4, 5, 6, 7, 8}; !slices.Equal(rem, want) {
		t.Errorf("Remaining = %v, want %v", rem, want)
	}

}

// TestProcesses runs 6 workers as 3 clients: each has connections of its
// own (its pool and its listener, named by process), every job runs once,
// and each job carries the index of a process.
func TestProcesses(t *testing.T) {
	ctx := context.Background()
	s, url := setup(t)
	var mu sync.Mutex
	runs := map[int64]int{}
	procs := map[int]int{}
	env := bench.Env{URL: url, Workers: 6, Processes: 3,
		Handle: func(ctx context.Context, j bench.Job) error {
			mu.Lock()
			runs[j.ID]++
			procs[j.Process]++
			mu.Unlock()
			return nil
		},
	}
	wctx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- s.Work(wctx, env) }()

	apps := func() []string {
		rows, _ := s.pool.Query(ctx, `SELECT DISTINCT application_name FROM pg_stat_activity
			WHERE datname = current_database() AND application_name LIKE 'millrace-bench-p%' ORDER BY 1`)
		names, _ := pgx.CollectRows(rows, pgx.RowTo[string])
		return names
	}
	testkit.WaitFor(t, "a connection of each process", time.Minute, func() bool { return len(apps()) == 3 })
	if got := apps(); !slices.Equal(got, []string{"millrace-bench-p0", "millrace-bench-p1", "millrace-bench-p2"}) {
		t.Errorf("process connections %v", got)
	}

	const n = 600
	for i := int64(1); i <= n; i++ {
		if err := s.Enqueue(ctx, []bench.Job{{ID: i}}); err != nil {
			t.Fatal(err)
		}
	}
	testkit.WaitFor(t, "every job to run", time.Minute, func() bool { mu.Lock(); defer mu.Unlock(); return len(runs) == n })
	testkit.WaitFor(t, "every ack", time.Minute, func() bool { rem, err := s.Remaining(ctx); return err == nil && len(rem) == 0 })
	stop()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	for id, c := range runs {
		if c != 1 {
			t.Errorf("job %d ran %d times", id, c)
		}
	}
	for p := range procs {
		if p < 0 || p > 2 {
			t.Errorf("a job ran under process %d", p)
		}
	}
	t.Logf("jobs per process: %v", procs)
}

// TestServe serves a queue of its own on demand: its jobs run, the main
// queue's do not, and cancelling returns once the acks are written.
func TestServe(t *testing.T) {
	ctx := context.Background()
	s, _ := setup(t)
	if err := s.Enqueue(ctx, []bench.Job{{ID: 1}}); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var ran []int64
	sctx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() {
		done <- s.Serve(sctx, "side", 2, func(ctx context.Context, j bench.Job) error {
			mu.Lock()
			ran = append(ran, j.ID)
			mu.Unlock()
			return nil
		})
	}()
	if err := s.EnqueueQueue(ctx, "side", []bench.Job{{ID: 2}, {ID: 3}, {ID: 4}}); err != nil {
		t.Fatal(err)
	}
	testkit.WaitFor(t, "the side queue's jobs", time.Minute, func() bool { mu.Lock(); defer mu.Unlock(); return len(ran) == 3 })
	stop()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	slices.Sort(ran)
	if !slices.Equal(ran, []int64{2, 3, 4}) {
		t.Errorf("Serve ran %v, want 2, 3, 4", ran)
	}
	if rem, err := s.Remaining(ctx); err != nil || !slices.Equal(rem, []int64{1}) {
		t.Errorf("Remaining = %v, %v; want the main queue's job 1 only", rem, err)
	}
}

// TestRetrying: the chaos check's jobs that wait for a retry are those
// scheduled in the future, scheduled in the last grace (3 s here), or
// promoted to a later attempt in it; a first attempt ready now, and a
// retry due longer ago, are not.
func TestRetrying(t *testing.T) {
	ctx := context.Background()
	s, _ := setup(t)
	enqueue := func(id int64, runAt time.Time) {
		t.Helper()
		if _, err := s.EnqueueMix(ctx, []bench.Job{{ID: id, RunAt: runAt}}); err != nil {
			t.Fatal(err)
		}
	}
	enqueue(1, time.Now().Add(time.Minute)) // due in a minute
	enqueue(2, time.Time{})                 // a first attempt, ready now
	enqueue(3, time.Time{})                 // a retry ready a second ago
	enqueue(4, time.Time{})                 // a retry ready a minute ago
	enqueue(5, time.Now().Add(time.Minute)) // a retry due a second ago, not yet promoted
	for _, q := range []string{
		`UPDATE millrace.job SET attempt = 1, ready_at = now() - interval '1 second' WHERE args->>'id' = '3'`,
		`UPDATE millrace.job SET attempt = 1, ready_at = now() - interval '1 minute' WHERE args->>'id' = '4'`,
		`UPDATE millrace.sched SET due_at = now() - interval '1 second' WHERE args->>'id' = '5'`,
	} {
		if tag, err := s.pool.Exec(ctx, q); err != nil || tag.RowsAffected() != 1 {
			t.Fatalf("%s: %v, %d rows", q, err, tag.RowsAffected())
		}
	}
	got, err := s.Retrying(ctx, []int64{1, 2, 3, 4, 5}, 3*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	want := map[int64]bool{1: true, 3: true, 5: true}
	if len(got) != len(want) || !got[1] || !got[3] || !got[5] {
		t.Errorf("Retrying: %v, want %v", got, want)
	}
}

// TestExplain: the chaos check's account of an unfinished job names its
// live row (not yet in a batch) or its schedule row.
func TestExplain(t *testing.T) {
	ctx := context.Background()
	s, _ := setup(t)
	if _, err := s.EnqueueMix(ctx, []bench.Job{{ID: 1}, {ID: 2, RunAt: time.Now().Add(time.Minute)}}); err != nil {
		t.Fatal(err)
	}
	got, err := s.Explain(ctx, []int64{1, 2})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(got[1], "job row id") || !strings.Contains(got[1], "batch none") {
		t.Errorf("job 1: %q, want its live row in no batch yet", got[1])
	}
	if !strings.Contains(got[2], "scheduled attempt 0") || strings.Contains(got[2], "job row") {
		t.Errorf("job 2: %q, want its schedule row only", got[2])
	}
}

// TestEnqueueMixBatch: one EnqueueMix call stores scheduled, unique and
// plain jobs together and returns their ids in order; a second call with
// the unique keys of stored jobs returns each as a duplicate of its own
// original, and a job to cancel is cancelled while it waits.
func TestEnqueueMixBatch(t *testing.T) {
	ctx := context.Background()
	s, _ := setup(t)
	at := time.Now().Add(time.Minute)
	orig, err := s.EnqueueMix(ctx, []bench.Job{{ID: 1, RunAt: at, UniqueKey: 1}, {ID: 2, RunAt: at}, {ID: 3, RunAt: at, UniqueKey: 3}, {ID: 4}})
	if err != nil {
		t.Fatal(err)
	}
	if len(orig) != 4 {
		t.Fatalf("%d results for 4 jobs", len(orig))
	}
	for i, r := range orig {
		if r.Duplicate || r.Ref == 0 {
			t.Errorf("job %d: %+v, want stored", i+1, r)
		}
	}
	dups, err := s.EnqueueMix(ctx, []bench.Job{{ID: 5, RunAt: at, UniqueKey: 3}, {ID: 6, RunAt: at, UniqueKey: 1}, {ID: 7, RunAt: at, UniqueKey: 7}})
	if err != nil {
		t.Fatal(err)
	}
	want := []bench.MixResult{{Ref: orig[2].Ref, Duplicate: true}, {Ref: orig[0].Ref, Duplicate: true}}
	if len(dups) != 3 || dups[0] != want[0] || dups[1] != want[1] || dups[2].Duplicate {
		t.Errorf("duplicates: %+v, want %+v and a stored job", dups, want)
	}
	if ok, what, err := s.Cancel(ctx, orig[1].Ref); err != nil || !ok {
		t.Errorf("Cancel of the waiting job 2: %v, %q, %v", ok, what, err)
	}
	rem, err := s.Remaining(ctx)
	slices.Sort(rem)
	if err != nil || !slices.Equal(rem, []int64{1, 3, 4, 7}) {
		t.Errorf("Remaining = %v, %v; want 1, 3, 4, 7", rem, err)
	}
}

// TestArgsCarryTheKey: under a per-key limit the job's args hold its key
// in the field the limit names; without one they are as before.
func TestArgsCarryTheKey(t *testing.T) {
	b, err := json.Marshal(argsOf(bench.Job{ID: 7, Payload: []byte(`{"x":1}`), Key: 3, KeyArg: "customer_id"}))
	if err != nil || string(b) != `{"id":7,"p":{"x":1},"customer_id":3}` {
		t.Fatalf("keyed args: %s, %v", b, err)
	}
	b, err = json.Marshal(argsOf(bench.Job{ID: 7, Payload: []byte(`{"x":1}`)}))
	if err != nil || string(b) != `{"id":7,"p":{"x":1}}` {
		t.Fatalf("plain args: %s, %v", b, err)
	}
}
