package ops_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/millrace/millrace/internal/ops"
	"github.com/millrace/millrace/internal/storage"
	"github.com/millrace/millrace/internal/testkit"
	"github.com/millrace/millrace/internal/testkit/clientkit"
)

func TestMain(m *testing.M) { testkit.Main(m) }

func TestListJobsFilters(t *testing.T) {
	pool := testkit.DB(t)
	ctx := context.Background()
	var ids []int64
	for i := 0; i < 5; i++ {
		ids = append(ids, testkit.Enqueue(t, pool, "k", "q", `{}`, 0))
	}
	jobs, err := ops.ListJobs(ctx, pool, ops.Filter{Limit: 2})
	if err != nil || len(jobs) != 2 || jobs[0].ID != ids[4] || jobs[1].ID != ids[3] {
		t.Fatalf("limit 2: %+v %v", jobs, err)
	}
	jobs, err = ops.ListJobs(ctx, pool, ops.Filter{ID: ids[2]})
	if err != nil || len(jobs) != 1 || jobs[0].ID != ids[2] || !jobs[0].Live || jobs[0].State != "available" {
		t.Fatalf("by id: %+v %v", jobs, err)
	}
	if _, err := ops.ListJobs(ctx, pool, ops.Filter{State: "gone"}); err == nil {
		t.Fatal("an unknown state was accepted")
	}
	if _, err := ops.GetJob(ctx, pool, 1<<40); err != ops.ErrNotFound {
		t.Fatalf("an unknown job: %v", err)
	}
	s, err := ops.SampleSince(ctx, pool, time.Time{})
	if err != nil || s.At.Sub(s.Since) < 900*time.Millisecond || s.Completed != 0 {
		t.Fatalf("an idle second: %+v %v", s, err)
	}
}

// Completed attempts reach history: the sample counts them, with their
// latencies, and the queue's rate is not zero (schema version 5).
func TestSampleCountsCompleted(t *testing.T) {
	pool := testkit.DB(t)
	ctx := context.Background()
	start := time.Now().Add(-time.Second)
	clientkit.Work(t, pool, "work", 50)
	var s ops.Sample
	testkit.WaitFor(t, "20 completed attempts in history", 20*time.Second, func() bool {
		var err error
		if s, err = ops.SampleSince(ctx, pool, start); err != nil {
			t.Fatal(err)
		}
		return s.Completed >= 20
	}, func() string { return fmt.Sprintf("sample %+v", s) })
	if s.RunP50 <= 0 || s.WaitP50 <= 0 || s.RunP95 < s.RunP50 {
		t.Errorf("latencies: %+v", s)
	}
	qs, err := ops.Queues(ctx, pool)
	if err != nil || len(qs) != 1 || qs[0].Rate <= 0 || qs[0].Completed <= 0 {
		t.Fatalf("queues: %+v %v", qs, err)
	}
}

// The actions answer as the schema's functions do, on a pool and inside a
// caller's transaction: cancel a waiting job, then nothing to cancel;
// retry it as a new job, idempotently; nothing to retry of a live job;
// an unknown job; pause and resume a queue.
func TestActions(t *testing.T) {
	pool := testkit.DB(t)
	ctx := context.Background()
	id := testkit.Enqueue(t, pool, "k", "q", `{}`, 0)
	if out, err := ops.Cancel(ctx, pool, id); err != nil || out != "cancelled" {
		t.Fatalf("cancel a waiting job = %q, %v", out, err)
	}
	if out, err := ops.Cancel(ctx, pool, id); err != nil || out != "finished" {
		t.Fatalf("cancel a cancelled job = %q, %v", out, err)
	}
	n, out, err := ops.Retry(ctx, pool, id)
	if err != nil || n == 0 || n == id || out != fmt.Sprintf("retried as job %d", n) {
		t.Fatalf("retry a cancelled job = %d, %q, %v", n, out, err)
	}
	if again, _, err := ops.Retry(ctx, pool, id); err != nil || again != n {
		t.Fatalf("retry it again = %d, %v; want job %d", again, err, n)
	}
	if m, out, err := ops.Retry(ctx, pool, n); err != nil || m != 0 || out != "not finished" {
		t.Fatalf("retry a live job = %d, %q, %v", m, out, err)
	}
	if out, err := ops.Cancel(ctx, pool, 1<<40); err != nil || out != "unknown" {
		t.Fatalf("cancel an unknown job = %q, %v", out, err)
	}
	tx, err := pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx)
	if out, err := ops.Cancel(ctx, tx, n); err != nil || out != "cancelled" {
		t.Fatalf("cancel in a transaction = %q, %v", out, err)
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if err := ops.Pause(ctx, pool, "q"); err != nil {
		t.Fatal(err)
	}
	if p, err := ops.Paused(ctx, pool, "q"); err != nil || !p {
		t.Fatalf("paused after pause = %v, %v", p, err)
	}
	if err := ops.Resume(ctx, pool, "q"); err != nil {
		t.Fatal(err)
	}
	if p, err := ops.Paused(ctx, pool, "q"); err != nil || p {
		t.Fatalf("paused after resume = %v, %v", p, err)
	}
}

// TestSampleReadsItsWindow: the dashboard's sample of the last second
// reads the attempts finished in its window through the finished_at
// index, not every row of history. Its bounds were clock_timestamp()
// expressions, each guessed to keep a third of the rows, and every bucket
// was read whole at each call: 385 ms of server CPU a read after a minute
// at full speed, and growing with history.
func TestSampleReadsItsWindow(t *testing.T) {
	pool := testkit.DB(t)
	ctx := context.Background()
	testkit.RequireServerVersion(t, pool, 150000) // pg_stat_force_next_flush
	// 50,000 attempts finished five minutes ago, in the bucket of now, then
	// three just now.
	if _, err := pool.Exec(ctx, `INSERT INTO millrace.finished (bucket, id, attempt, state, queue, kind, args, priority,
		max_attempts, created_at, started_at, finished_at, owner)
		SELECT millrace.history_bucket(1::smallint, now()), g, 1, 1, 'q', 'k', '{}', 0, 1,
		       now() - interval '6 minutes', now() - interval '6 minutes', now() - interval '5 minutes', 0
		FROM generate_series(1000000000, 1000050000) g`); err != nil {
		t.Fatal(err)
	}
	if _, err := pool.Exec(ctx, `INSERT INTO millrace.finished (bucket, id, attempt, state, queue, kind, args, priority,
		max_attempts, created_at, started_at, finished_at, owner)
		SELECT millrace.history_bucket(1::smallint, now()), g, 1, 1, 'q', 'k', '{}', 0, 1, now(), now(), now(), 0
		FROM generate_series(1, 3) g`); err != nil {
		t.Fatal(err)
	}
	// One session, so that the statistics counted are its own.
	conn, err := pool.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Release()
	read := func() int64 {
		t.Helper()
		for _, q := range []string{"SELECT pg_stat_force_next_flush()", "SELECT 1"} {
			if _, err := conn.Exec(ctx, q); err != nil {
				t.Fatal(err)
			}
		}
		var n int64
		if err := conn.QueryRow(ctx, `SELECT coalesce(sum(coalesce(seq_tup_read, 0) + coalesce(idx_tup_fetch, 0)), 0)
			FROM pg_stat_user_tables WHERE schemaname = 'millrace' AND relname ~ '^finished_[0-9]+$'`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	before := read()
	s, err := ops.SampleSince(ctx, conn, time.Now().Add(-time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	if d := read() - before; d > 1000 {
		t.Errorf("a sample of the last minute read %d history rows; want about the 3 finished in it", d)
	}
	if s.Completed != 3 {
		t.Errorf("sample: %d completed, want 3: %+v", s.Completed, s)
	}
}

// Every read of the queues says how long the oldest available job has
// waited (queue_counts and live_counts give its creation time): a queue
// with a job waiting says more than zero and no more than since before
// it was inserted; a queue whose only job is scheduled says zero.
func TestQueuesSayTheOldestWaitingJob(t *testing.T) {
	pool := testkit.DB(t)
	ctx := context.Background()
	before := time.Now()
	testkit.Enqueue(t, pool, "k", "waits", `{}`, 0)
	testkit.Enqueue(t, pool, "k", "later", `{}`, time.Hour)
	for name, read := range map[string]func(context.Context, ops.DB) ([]ops.Queue, error){
		"Queues": ops.Queues, "QueueCounts": ops.QueueCounts, "LiveCounts": ops.LiveCounts,
	} {
		qs, err := read(ctx, pool)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		bound := time.Since(before)
		got := map[string]time.Duration{}
		for _, q := range qs {
			got[q.Name] = q.OldestWaiting
		}
		if w, ok := got["waits"]; !ok || w <= 0 || w > bound {
			t.Errorf("%s: queue waits: oldest waiting %v; want more than 0 and at most %v", name, w, bound)
		}
		if w, ok := got["later"]; !ok || w != 0 {
			t.Errorf("%s: queue later (a scheduled job only): oldest waiting %v (listed %v); want 0", name, w, ok)
		}
	}
}

// The sample's percentiles are those of the newest 1,000 attempts of its
// window (its counts are of every one): 1,000 attempts that ran 1 ms, after
// 500 that ran 100 ms earlier in the window, give a run p95 of 1 ms.
func TestSamplePercentilesOfTheNewest(t *testing.T) {
	pool := testkit.DB(t)
	ctx := context.Background()
	for _, q := range []string{
		// 500 attempts of 100 ms, finished 20 s ago.
		`INSERT INTO millrace.finished (bucket, id, attempt, state, queue, kind, args, priority, max_attempts, created_at, started_at, finished_at, owner)
		 SELECT millrace.history_bucket(1::smallint, now()), g, 1, 1, 'q', 'k', '{}', 0, 1,
		        now() - interval '21 seconds', now() - interval '20.1 seconds', now() - interval '20 seconds', 0
		 FROM generate_series(1, 500) g`,
		// 1,000 attempts of 1 ms, finished 10 s ago.
		`INSERT INTO millrace.finished (bucket, id, attempt, state, queue, kind, args, priority, max_attempts, created_at, started_at, finished_at, owner)
		 SELECT millrace.history_bucket(1::smallint, now()), g, 1, 1, 'q', 'k', '{}', 0, 1,
		        now() - interval '11 seconds', now() - interval '10.001 seconds', now() - interval '10 seconds', 0
		 FROM generate_series(1001, 2000) g`,
	} {
		if _, err := pool.Exec(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	s, err := ops.SampleSince(ctx, pool, time.Now().Add(-time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	if s.Completed != 1500 {
		t.Errorf("completed %d, want 1500 (every attempt of the window)", s.Completed)
	}
	if s.RunP95 < 0.5 || s.RunP95 > 2 {
		t.Errorf("run p95 %.1f ms, want 1 (the newest 1,000 ran 1 ms)", s.RunP95)
	}
}

// hookDB runs before the statement after its first (a job finishing
// between GetJob's two statements).
type hookDB struct {
	ops.DB
	n      int
	before func()
}

func (h *hookDB) Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error) {
	if h.n++; h.n == 2 {
		h.before()
	}
	return h.DB.Query(ctx, sql, args...)
}

// TestGetJobNeverShowsAFinishedJobLive (issue 31.1): a job that completes
// between GetJob's read of its live row and its read of history was shown
// running, with a completed attempt; its final attempt ends it.
func TestGetJobNeverShowsAFinishedJobLive(t *testing.T) {
	pool := testkit.DB(t)
	ctx := context.Background()
	id := testkit.Enqueue(t, pool, "k", "q", `{}`, 0)
	s := &storage.Store{Pool: pool}
	bs, err := s.Claim(ctx, "q", 1, 1, false, storage.Limits{MaxJobs: 10, MaxBytes: 1 << 20})
	if err != nil || len(bs) != 1 || len(bs[0].Jobs) != 1 || bs[0].Jobs[0].ID != id {
		t.Fatalf("claim: %+v %v", bs, err)
	}
	b := bs[0]
	db := &hookDB{DB: pool, before: func() {
		if _, err := s.Flush(ctx, 1, 1, false, []storage.Ack{{Batch: b, Job: &b.Jobs[0], State: storage.AckCompleted,
			Started: time.Now(), Finished: time.Now()}}, []*storage.Batch{b}); err != nil {
			t.Fatal(err)
		}
	}}
	d, err := ops.GetJob(ctx, db, id)
	if err != nil {
		t.Fatal(err)
	}
	if d.Live != nil {
		t.Errorf("job %d completed, shown live as %s with attempts %+v", id, d.Live.State, d.Attempts)
	}
	if len(d.Attempts) != 1 || d.Attempts[0].State != "completed" {
		t.Errorf("attempts %+v; want one completed", d.Attempts)
	}
}
