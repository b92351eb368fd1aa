package storage

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/millrace/millrace/internal/testkit"
)

// oneSession is a pool of a single connection to a new migrated database,
// with the given run-time settings: the plan cache and the statistics
// that matter to a test are that session's.
func oneSession(t *testing.T, settings map[string]string) *pgxpool.Pool {
	t.Helper()
	cfg, err := pgxpool.ParseConfig(testkit.DBURL(t))
	if err != nil {
		t.Fatal(err)
	}
	cfg.MaxConns = 1
	for k, v := range settings {
		cfg.ConnConfig.RuntimeParams[k] = v
	}
	pool, err := pgxpool.NewWithConfig(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	testkit.RequireServerVersion(t, pool, 150000) // pg_stat_force_next_flush
	return pool
}

// indexReads is the index entries read so far (idx_tup_read) by the
// schema's indexes that match where (a condition on pg_stat_user_indexes),
// with the session's counts flushed first.
func indexReads(t *testing.T, pool *pgxpool.Pool, where string) int64 {
	t.Helper()
	flushStats(t, pool)
	var n int64
	if err := pool.QueryRow(context.Background(), `SELECT coalesce(sum(idx_tup_read), 0) FROM pg_stat_user_indexes
		WHERE schemaname = 'millrace' AND `+where).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// flushStats makes the session's statistics counts visible to its next
// transaction: they reach the shared statistics at the end of the
// transaction after pg_stat_force_next_flush.
func flushStats(t *testing.T, pool *pgxpool.Pool) {
	t.Helper()
	for _, q := range []string{"SELECT pg_stat_force_next_flush()", "SELECT 1"} {
		if _, err := pool.Exec(context.Background(), q); err != nil {
			t.Fatal(err)
		}
	}
}

// TestHotPathProbesNeverScan: the statements of a claim, a start mark, a
// flush and a promote round look up the done, ack and cancel rows of the
// batches and jobs they handle by index, whatever those tables hold. A correlated EXISTS
// in a cached plan may be planned as a hashed subplan, which reads every
// row of the table at each call: a 4-process burn-down spent 6 ms of each
// flush hashing some 14,000 done rows. The test fills the three tables,
// runs each call on one session with generic plans, and asserts that none of their partitions was scanned.
func TestHotPathProbesNeverScan(t *testing.T) {
	ctx := context.Background()
	// Generic plans from the first call, as a server or role default may
	// ask (and as PL/pgSQL chooses by itself after a few calls when their
	// estimated cost is near the custom plans').
	pool := oneSession(t, map[string]string{"plan_cache_mode": "force_generic_plan"})
	s := &Store{Pool: pool}

	scans := func() map[string]int64 {
		t.Helper()
		flushStats(t, pool)
		got := map[string]int64{}
		rows, err := pool.Query(ctx, `SELECT relname, coalesce(seq_scan, 0) FROM pg_stat_user_tables
			WHERE schemaname = 'millrace' AND relname ~ '^(done|ack|cancel)_[0-9]+$'`)
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		for rows.Next() {
			var name string
			var n int64
			if err := rows.Scan(&name, &n); err != nil {
				t.Fatal(err)
			}
			got[name] = n
		}
		if err := rows.Err(); err != nil {
			t.Fatal(err)
		}
		return got
	}
	lim := Limits{MaxJobs: 2, MaxBytes: 1 << 20}
	round := func(i int) {
		t.Helper()
		enqueue(t, s, pool, "q")
		enqueue(t, s, pool, "q")
		// Start marks: one in the claim, one on its own.
		lim.Start = 1
		bs, err := s.Claim(ctx, "q", 1, int64(i+1), false, lim)
		if err != nil || len(bs) != 1 || len(bs[0].Jobs) != 2 {
			t.Fatalf("claim %d: %v, %v; want one batch of 2 jobs", i, bs, err)
		}
		b := bs[0]
		if fenced, err := s.MarkStarted(ctx, 1, []Start{{Batch: b, Job: &b.Jobs[1]}}); err != nil || len(fenced) != 0 {
			t.Fatalf("mark %d: fenced %v, %v", i, fenced, err)
		}
		now := time.Now()
		acks := []Ack{
			{Batch: b, Job: &b.Jobs[0], State: AckCompleted, Started: now, Finished: now},
			{Batch: b, Job: &b.Jobs[1], State: AckCompleted, Started: now, Finished: now},
		}
		if fenced, err := s.Flush(ctx, 1, int64(i+1), true, acks, []*Batch{b}); err != nil || len(fenced) != 0 {
			t.Fatalf("flush %d: fenced %v, %v", i, fenced, err)
		}
		// A promote round that moves a due job (it asks whether the job
		// was cancelled while scheduled).
		if _, err := pool.Exec(ctx, `
			INSERT INTO millrace.sched (gen, id, queue, kind, args, priority, attempt, max_attempts, created_at, due_at, timeout_ms)
			VALUES (millrace.current_gen(), nextval('millrace.job_id_seq'), 'p', 'k', '{}', 0, 0, 1, now(), now() - interval '1 second', 0)`); err != nil {
			t.Fatal(err)
		}
		var n int64
		if err := pool.QueryRow(ctx, "SELECT millrace.promote()").Scan(&n); err != nil || n != 1 {
			t.Fatalf("promote %d: %d promoted, %v; want 1", i, n, err)
		}
	}
	// The plans are made while the tables are nearly empty, as in a fresh
	// ring (the planner then takes each partition for 10 pages), and kept
	// while the tables grow: a hashed subplan read then grows with them.
	round(0)
	// Then rows of other batches and jobs, as a busy ring holds them.
	if _, err := pool.Exec(ctx, `
		INSERT INTO millrace.done (slot, queue, tick_id)
		SELECT millrace.current_segment(), 'other', g FROM generate_series(1000000000, 1000020000) g;
		INSERT INTO millrace.ack (slot, job_id, tick_id, token, state, attempt)
		SELECT millrace.current_segment(), g, 1000000000 + g, 1000000000 + g, 1, 1 FROM generate_series(1000000000, 1000020000) g;
		INSERT INTO millrace.cancel (slot, job_id)
		SELECT millrace.current_segment(), g FROM generate_series(1000000000, 1000020000) g`); err != nil {
		t.Fatal(err)
	}
	before := scans()
	for i := 1; i <= 12; i++ {
		round(i)
	}

	after := scans()
	for name, n := range after {
		if d := n - before[name]; d != 0 {
			t.Errorf("%s: %d sequential scans during 12 claims, start marks, flushes and promote rounds; want 0 (a probe by index per batch or job)", name, d)
		}
	}
	if len(after) != 12 {
		t.Fatalf("statistics for %d partitions of done, ack and cancel; want 12: %v", len(after), after)
	}
}

// TestClaimFlagsCancelledJobs: a claim flags the jobs cancelled while they
// waited (their cancellations are looked up for the whole claim at once)
// and returns every job in the order it took them.
func TestClaimFlagsCancelledJobs(t *testing.T) {
	ctx := context.Background()
	s, pool := newStore(t)
	var ids []int64
	for i := 0; i < 6; i++ {
		ids = append(ids, enqueue(t, s, pool, "q"))
	}
	for _, id := range []int64{ids[1], ids[4]} {
		var res string
		if err := pool.QueryRow(ctx, "SELECT millrace.cancel($1)", id).Scan(&res); err != nil {
			t.Fatal(err)
		}
	}
	bs, err := s.Claim(ctx, "q", 1, 1, false, Limits{MaxJobs: 100, MaxBytes: 1 << 20, Start: 6})
	if err != nil || len(bs) != 1 {
		t.Fatalf("claim: %v, %v; want one batch", bs, err)
	}
	var got []int64
	for _, j := range bs[0].Jobs {
		got = append(got, j.ID)
		if want := j.ID == ids[1] || j.ID == ids[4]; j.Cancelled != want {
			t.Errorf("job %d: cancelled %v, want %v", j.ID, j.Cancelled, want)
		}
	}
	if len(got) != len(ids) {
		t.Fatalf("claimed %v, want %v", got, ids)
	}
	for i := range ids {
		if got[i] != ids[i] {
			t.Fatalf("claimed %v, want %v (the order they were enqueued in)", got, ids)
		}
	}
}

// TestScheduleLookupsByIDUseTheIDIndex: the lookups of one job's schedule
// row (the newest by due time) find it by id, whatever the schedule
// holds: a duplicate of a scheduled unique job, cancel, and live_job.
// With the schedule's statistics unknown (it is never analyzed) the
// planner walked the due_at index backwards filtering for the id: 38 ms
// over 37,000 rows in a full-mix bench, a cancel holding the queue's claim
// lock meanwhile. The test counts the due_at index entries read.
func TestScheduleLookupsByIDUseTheIDIndex(t *testing.T) {
	ctx := context.Background()
	pool := oneSession(t, nil)
	// Other jobs' schedule rows, all due after the one looked up.
	if _, err := pool.Exec(ctx, `
		INSERT INTO millrace.sched (gen, id, queue, kind, args, priority, attempt, max_attempts, created_at, due_at, timeout_ms)
		SELECT millrace.current_gen(), g, 'other', 'k', '{}', 0, 0, 1, now(), now() + interval '1 year' + g * interval '1 ms', 0
		FROM generate_series(1000000000, 1000020000) g`); err != nil {
		t.Fatal(err)
	}
	enqueue := func() (id int64) {
		t.Helper()
		if err := pool.QueryRow(ctx, `SELECT millrace.enqueue('k', '{}', 'q', 0, now() + interval '1 hour', 3, true, 'the-key', 14)`).Scan(&id); err != nil {
			t.Fatal(err)
		}
		return id
	}
	read := func() int64 { return indexReads(t, pool, `indexrelname ~ '^sched_[0-9]+_due_at_idx$'`) }
	id := enqueue()
	before := read()
	if dup := enqueue(); dup != id {
		t.Fatalf("the duplicate's id: %d, want %d", dup, id)
	}
	var queue string
	if err := pool.QueryRow(ctx, "SELECT queue FROM millrace.live_job($1)", id).Scan(&queue); err != nil || queue != "q" {
		t.Fatalf("live_job: %q, %v", queue, err)
	}
	var res string
	if err := pool.QueryRow(ctx, "SELECT millrace.cancel($1)", id).Scan(&res); err != nil || res != "cancelled" {
		t.Fatalf("cancel: %q, %v", res, err)
	}
	if d := read() - before; d > 100 {
		t.Fatalf("a duplicate insert, live_job and cancel of one scheduled job read %d entries of the schedule's due_at index; want a few (a lookup by id)", d)
	}
}

// TestClaimOfManyLanesReadsNoBacklog (issue 33): a claim of a queue with
// several lanes looks at each lane's first waiting job (lanes_waiting). It
// found the jobs of the xids in flight at the lane's newest tick with
// txid = ANY (...) and ORDER BY txid, id, which the generic plan ran as a
// read of the whole lane with the xids as a filter: every claim read the
// lane's backlog (81 ms for 260,000 jobs). A claim of one job now reads a
// few index entries whatever the backlog.
func TestClaimOfManyLanesReadsNoBacklog(t *testing.T) {
	ctx := context.Background()
	pool := oneSession(t, map[string]string{"plan_cache_mode": "force_generic_plan"})
	s := &Store{Pool: pool}
	job := func(priority int16) NewJob {
		return NewJob{Queue: "lanes", Kind: "k", Args: []byte(`{}`), Priority: priority, MaxAttempts: 1}
	}
	// Lane 0 gets a tick below its cap, then a backlog after it; lane 1
	// makes the queue one of several lanes.
	if _, err := s.Enqueue(ctx, pool, job(0), false); err != nil {
		t.Fatal(err)
	}
	if bs, err := s.Claim(ctx, "lanes", 1, 1, false, Limits{MaxJobs: 10, MaxBytes: 1 << 20, Starve: time.Hour}); err != nil || len(bs) != 1 {
		t.Fatalf("first claim: %v %v", bs, err)
	}
	const backlog = 3000
	jobs := make([]NewJob, backlog)
	for i := range jobs {
		jobs[i] = job(0)
	}
	if _, err := EnqueueMany(ctx, pool, append(jobs, job(1))); err != nil {
		t.Fatal(err)
	}
	read := func() int64 { return indexReads(t, pool, `relname ~ '^job_[0-9]+$'`) }
	for i := 0; i < 3; i++ { // the generic plan from the first call, and again
		before := read()
		bs, err := s.Claim(ctx, "lanes", 1, int64(i+2), false, Limits{MaxJobs: 1, MaxBytes: 1 << 20, Starve: time.Hour})
		if err != nil || len(bs) != 1 || len(bs[0].Jobs) != 1 {
			t.Fatalf("claim %d: %v %v", i, bs, err)
		}
		if n := read() - before; n > 100 {
			t.Fatalf("claim %d of one job from a queue of two lanes read %d index entries of job (a backlog of %d waits in a lane); want a few", i, n, backlog)
		}
	}
}

// TestPromoteReadsOnlyWhatIsNew: a promote round reads, by index, the
// schedule's rows that fell due since the last round and those written
// since it, not every promoted row the schedule still holds until its
// next compaction. With generic plans, the round's look for late commits
// (rows written since the last round, due by its time) was planned on
// the due-time index and read every promoted row: the full mix at 800/s
// in four processes spent 5 ms of a round reading 4,500 of them.
func TestPromoteReadsOnlyWhatIsNew(t *testing.T) {
	ctx := context.Background()
	pool := oneSession(t, map[string]string{"plan_cache_mode": "force_generic_plan"})
	s := &Store{Pool: pool}
	schedule := func(n int) {
		t.Helper()
		due := time.Now().Add(200 * time.Millisecond)
		jobs := make([]NewJob, n)
		for i := range jobs {
			jobs[i] = NewJob{Queue: "q", Kind: "k", Args: []byte(`{}`), MaxAttempts: 3, RunAt: due}
		}
		ins, err := Insert(ctx, pool, jobs, false)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range ins {
			if !r.Scheduled {
				t.Fatalf("a job due in 200 ms was not scheduled: %+v", r)
			}
		}
		testkit.WaitFor(t, "the jobs to fall due", 10*time.Second, func() bool { return time.Now().After(due) })
	}
	promote := func(want int64) {
		t.Helper()
		n, err := s.Promote(ctx, 0, 1<<40) // no compaction: the promoted rows stay
		if err != nil || n != want {
			t.Fatalf("promote: %d, %v; want %d", n, err, want)
		}
	}
	// Rounds with a round before them, as the promoter runs them.
	promote(0)
	schedule(2000)
	promote(2000)
	for round := range 3 {
		schedule(1)
		before := indexReads(t, pool, "relname LIKE 'sched%'")
		promote(1)
		if read := indexReads(t, pool, "relname LIKE 'sched%'") - before; read > 100 {
			t.Fatalf("round %d: promoting one job read %d schedule index entries (2,000 promoted rows are kept until compaction)", round, read)
		}
	}
}
