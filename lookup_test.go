package millrace_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/millrace/millrace"
)

// TestLookupsReadOnlyTheirBuckets: a unique insert that meets its key, a
// cancel and a job's state look for the job's history only in the buckets
// that can hold it (from its creation until now: at most two of each
// ring), never in all 68. In schema 5 each of them planned and locked
// every bucket, and a reclaim paid that once per unique key while it held
// its slot's ACCESS EXCLUSIVE locks, stalling every producer and claimer
// (measured: 1.3 s per reclaim at 800 jobs/s with the bench's mix).
func TestLookupsReadOnlyTheirBuckets(t *testing.T) {
	ctx := context.Background()
	pool := newDB(t)
	c, err := millrace.NewClient(pool, millrace.Config{})
	if err != nil {
		t.Fatal(err)
	}
	later := &millrace.InsertOpts{RunAt: time.Now().Add(time.Hour)}
	unique := &millrace.InsertOpts{RunAt: later.RunAt, Unique: &millrace.UniqueOpts{ByArgs: true}}
	orig := mustInsert(t, c, countArgs{N: 1}, unique)
	waiting := mustInsert(t, c, countArgs{N: 2}, later)

	// buckets runs f in a transaction and counts the history buckets its
	// statements locked, in any mode (a relation lock is held until the
	// transaction ends, so every bucket planned, read or written is
	// counted once).
	buckets := func(what string, f func(tx pgx.Tx) error) int {
		t.Helper()
		tx, err := pool.Begin(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer tx.Rollback(ctx)
		if err := f(tx); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		var n int
		if err := tx.QueryRow(ctx, `SELECT count(DISTINCT l.relation) FROM pg_locks l JOIN pg_class c ON c.oid = l.relation
			JOIN pg_namespace s ON s.oid = c.relnamespace
			WHERE l.pid = pg_backend_pid() AND s.nspname = 'millrace' AND (c.relname LIKE 'finished\_%' OR c.relname LIKE 'completed\_%')
			  AND c.relkind = 'r'`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	// The range runs from an hour before the job was created to an hour
	// from now: at most three two-hour buckets and two daily ones of
	// finished, and the same three two-hour buckets of completed (of
	// 68 + 36).
	const most = 8
	for _, step := range []struct {
		what string
		f    func(tx pgx.Tx) error
	}{
		{"a unique insert that meets its key", func(tx pgx.Tx) error {
			r, err := c.InsertTx(ctx, tx, countArgs{N: 1}, unique)
			if err == nil && (!r.Duplicate || r.ID != orig.ID) {
				t.Errorf("the insert was not a duplicate of job %d: %+v", orig.ID, r)
			}
			return err
		}},
		{"the state of a scheduled job", func(tx pgx.Tx) error {
			var s string
			return tx.QueryRow(ctx, "SELECT millrace.job_state($1)", waiting.ID).Scan(&s)
		}},
		{"a cancel of a scheduled job", func(tx pgx.Tx) error {
			r, err := millrace.Cancel(ctx, tx, waiting.ID)
			if err == nil && r != millrace.Cancelled {
				t.Errorf("cancel = %v; want %v", r, millrace.Cancelled)
			}
			return err
		}},
	} {
		if n := buckets(step.what, step.f); n > most {
			t.Errorf("%s locked %d history buckets; want at most %d", step.what, n, most)
		}
	}
}

// TestHistoryBucketsCoverTheirRange: every time in a range falls in a
// bucket (of either ring) that history_buckets lists for the range, and a
// range longer than a ring lists the whole ring.
func TestHistoryBucketsCoverTheirRange(t *testing.T) {
	ctx := context.Background()
	pool := newDB(t)
	var missed int
	// 5,000 ranges of up to 80 days starting anywhere in a century, a
	// time inside each, and the bucket each ring gives that time.
	if err := pool.QueryRow(ctx, `
		WITH r AS (
			SELECT a, a + (random() * random() * interval '80 days') AS b
			FROM (SELECT timestamptz '1970-01-02' + random() * interval '100 years' AS a FROM generate_series(1, 5000)) x),
		p AS (SELECT a, b, a + random() * (b - a) AS t FROM r)
		SELECT count(*) FROM p
		WHERE NOT millrace.history_bucket(1::smallint, t) = ANY (millrace.history_buckets(a, b))
		   OR NOT millrace.history_bucket(3::smallint, t) = ANY (millrace.history_buckets(a, b))`).Scan(&missed); err != nil {
		t.Fatal(err)
	}
	if missed != 0 {
		t.Fatalf("%d times fell in a bucket their range did not list", missed)
	}
	for _, c := range []struct {
		from, to string
		want     int
	}{
		{"2026-03-01 10:00Z", "2026-03-01 10:00Z", 2},  // one of each ring
		{"2026-03-01 11:59Z", "2026-03-01 12:01Z", 3},  // across a two-hour boundary
		{"2026-03-01 23:59Z", "2026-03-02 00:01Z", 4},  // across midnight
		{"2026-03-01 00:00Z", "2026-03-05 00:00Z", 41}, // the whole completed ring and five days
		{"2026-03-01 00:00Z", "2026-05-01 00:00Z", 68}, // both rings whole
		{"1960-03-01 10:00Z", "1960-03-01 10:00Z", 2},  // before 1970: still one of each ring
		{"0001-01-01 00:00Z", "2026-11-25 00:00Z", 68}, // a created_at far in the past
		{"-infinity", "2026-11-25 00:00Z", 68},
		{"2026-11-25 00:00Z", "infinity", 68},
	} {
		var n int
		if err := pool.QueryRow(ctx, "SELECT cardinality(millrace.history_buckets($1::timestamptz, $2::timestamptz))",
			c.from, c.to).Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n != c.want {
			t.Errorf("history_buckets(%s, %s) lists %d buckets; want %d", c.from, c.to, n, c.want)
		}
	}
}

// TestQueueCountsFromTally: the completed and discarded counts come from
// the tally rounds plus the history written since the newest one, and are
// exact across rounds: a row whose transaction is still open during a
// round is counted once, after it commits; a rolled-back one never; a
// bucket expired with its tally is no longer counted.
func TestQueueCountsFromTally(t *testing.T) {
	ctx := context.Background()
	pool := newDB(t)
	// history writes n finished attempts of queue q in state s through db.
	history := func(db interface {
		Exec(context.Context, string, ...any) (pgconn.CommandTag, error)
	}, q string, s, n int) {
		t.Helper()
		if _, err := db.Exec(ctx, `INSERT INTO millrace.finished (bucket, id, attempt, state, queue, kind, args, priority,
			max_attempts, created_at, finished_at, owner)
			SELECT millrace.history_bucket($2::smallint, now()), nextval('millrace.job_id_seq'), 1, $2, $1, 'k', '{}', 0, 1, now(), now(), 0
			FROM generate_series(1, $3)`, q, s, n); err != nil {
			t.Fatal(err)
		}
	}
	tally := func() {
		t.Helper()
		var n *int64
		if err := pool.QueryRow(ctx, "SELECT millrace.tally('0s')").Scan(&n); err != nil || n == nil {
			t.Fatalf("tally: %v (ran: %v)", err, n != nil)
		}
	}
	want := func(step string, q string, completed, discarded int64) {
		t.Helper()
		counts, err := millrace.QueueCounts(ctx, pool)
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range counts {
			if c.Queue == q {
				if c.Completed != completed || c.Discarded != discarded {
					t.Fatalf("%s: queue %s counts %d completed, %d discarded; want %d, %d", step, q, c.Completed, c.Discarded, completed, discarded)
				}
				return
			}
		}
		if completed != 0 || discarded != 0 {
			t.Fatalf("%s: queue %s not counted; want %d completed, %d discarded", step, q, completed, discarded)
		}
	}

	history(pool, "a", 1, 30)
	history(pool, "a", 3, 4)
	history(pool, "b", 1, 7)
	history(pool, "a", 2, 9) // failed attempts: neither completed nor discarded
	want("before any round", "a", 30, 4)
	tally()
	want("after a round", "a", 30, 4)
	want("after a round", "b", 7, 0)

	open, err := pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer open.Rollback(ctx)
	history(open, "a", 1, 5)
	rolledBack, err := pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	history(rolledBack, "a", 1, 100)
	history(pool, "a", 1, 2)
	tally() // both transactions are in progress in this round's snapshot
	want("with a transaction open", "a", 32, 4)
	if err := open.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	rolledBack.Rollback(ctx)
	want("after it committed", "a", 37, 4)
	tally()
	tally()
	want("two rounds later", "a", 37, 4)

	// A round refuses a snapshot that would miscount: one that leaves out
	// its own transaction's id, or an older one (REPEATABLE READ).
	for _, begin := range []string{"BEGIN; SELECT pg_current_xact_id()", "BEGIN ISOLATION LEVEL REPEATABLE READ"} {
		conn, err := pool.Acquire(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := conn.Exec(ctx, begin); err != nil {
			t.Fatal(err)
		}
		_, err = conn.Exec(ctx, "SELECT millrace.tally('0s')")
		conn.Exec(ctx, "ROLLBACK")
		conn.Release()
		if err == nil {
			t.Errorf("a tally round after %q was accepted", begin)
		}
	}
	want("after refused rounds", "a", 37, 4)

	// Expiring every bucket truncates history and tally together.
	if _, err := pool.Exec(ctx, "SELECT millrace.set_retention('0s', '0s'); SELECT millrace.expire_history()"); err != nil {
		t.Fatal(err)
	}
	want("after expiry", "a", 0, 0)
	history(pool, "a", 1, 3)
	want("after expiry and new history", "a", 3, 0)
}

// TestCancelWaitsForAClaimInFlight: a cancel that meets a claim of its job
// not yet committed waits for it and then cancels the running job; it
// does not finish the job as cancelled while the claim hands it to a
// worker unmarked (the job would run, and history would hold it both
// cancelled and completed).
func TestCancelWaitsForAClaimInFlight(t *testing.T) {
	ctx := context.Background()
	pool := newDB(t)
	c, err := millrace.NewClient(pool, millrace.Config{})
	if err != nil {
		t.Fatal(err)
	}
	job := mustInsert(t, c, countArgs{N: 1}, &millrace.InsertOpts{Queue: "cq"})
	claimer, err := pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer claimer.Rollback(ctx)
	var id int64
	var marked bool
	if err := claimer.QueryRow(ctx, "SELECT id, cancelled FROM millrace.claim('cq', 1, 1)").Scan(&id, &marked); err != nil || id != job.ID {
		t.Fatalf("claim: job %d, %v; want job %d", id, err, job.ID)
	}
	// The cancel waits on the queue's claim lock while the claim is open
	// (or, wrongly, answers).
	done := waitingCancel(t, pool, job.ID, "the claim of its job")
	if err := claimer.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	a := <-done
	if a.err != nil || a.r != millrace.Cancelling {
		t.Fatalf("cancel after the claim committed = %v, %v; want %v", a.r, a.err, millrace.Cancelling)
	}
	var finished int
	pool.QueryRow(ctx, "SELECT count(*) FROM millrace.history WHERE id = $1", job.ID).Scan(&finished)
	if finished != 0 {
		t.Fatalf("the claimed job has %d history rows; want none until its worker finishes it", finished)
	}
}

// TestConcurrentCancelsOfOneJob: cancels of different jobs share their
// queue's claim lock, so cancels of one job must still wait for each
// other: a second cancel that meets the first one's open transaction waits
// for it, then answers that the job finished; history holds one row.
func TestConcurrentCancelsOfOneJob(t *testing.T) {
	ctx := context.Background()
	pool := newDB(t)
	c, err := millrace.NewClient(pool, millrace.Config{})
	if err != nil {
		t.Fatal(err)
	}
	job := mustInsert(t, c, countArgs{N: 1}, &millrace.InsertOpts{Queue: "cq"})
	other := mustInsert(t, c, countArgs{N: 2}, &millrace.InsertOpts{Queue: "cq"})
	first, err := pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer first.Rollback(ctx)
	var r string
	if err := first.QueryRow(ctx, "SELECT millrace.cancel($1)", job.ID).Scan(&r); err != nil || r != "cancelled" {
		t.Fatalf("first cancel: %q, %v", r, err)
	}
	// A cancel of another job of the queue does not wait for it (10 s:
	// a bound on a broken run).
	octx, cancel := context.WithTimeout(ctx, 10*time.Second)
	res, err := millrace.Cancel(octx, pool, other.ID)
	cancel()
	if err != nil || res != millrace.Cancelled {
		t.Fatalf("a cancel of another job while the first is open: %v, %v", res, err)
	}
	done := waitingCancel(t, pool, job.ID, "the first cancel")
	if err := first.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if a := <-done; a.err != nil || a.r != millrace.Finished {
		t.Fatalf("the second cancel = %v, %v; want %v", a.r, a.err, millrace.Finished)
	}
	var rows int
	pool.QueryRow(ctx, "SELECT count(*) FROM millrace.history WHERE id = $1", job.ID).Scan(&rows)
	if rows != 1 {
		t.Fatalf("the job has %d history rows; want 1", rows)
	}
}

// cancelAnswer is what a cancel answered.
type cancelAnswer struct {
	r   millrace.CancelResult
	err error
}

// waitingCancel cancels job id on a connection of its own and returns once
// that cancel waits on an advisory lock held by what (an open
// transaction of the test's); it fails the test if the cancel answers
// instead. The answer comes on the channel once what commits.
func waitingCancel(t *testing.T, pool *pgxpool.Pool, id int64, what string) <-chan cancelAnswer {
	t.Helper()
	ctx := context.Background()
	conn, err := pool.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(conn.Release)
	var pid int
	conn.QueryRow(ctx, "SELECT pg_backend_pid()").Scan(&pid)
	done := make(chan cancelAnswer, 1)
	go func() {
		r, err := millrace.Cancel(ctx, conn, id)
		done <- cancelAnswer{r, err}
	}()
	waitFor(t, "the cancel to wait for "+what, 10*time.Second, func() bool {
		var waiting bool
		pool.QueryRow(ctx, "SELECT EXISTS (SELECT 1 FROM pg_locks WHERE pid = $1 AND NOT granted AND locktype = 'advisory')", pid).Scan(&waiting)
		return waiting || len(done) > 0
	})
	select {
	case a := <-done:
		t.Fatalf("the cancel answered %v, %v while %s was not committed", a.r, a.err, what)
	default:
	}
	return done
}

// TestCancelOfAScheduledJobWaitsForNoClaim: a job still in the schedule
// can be taken by no claim, so its cancel does not wait for the queue's
// claim lock (in the bench's full mix, claims held each such cancel 32 ms);
// it waits instead for a promote round in flight, the only way a
// scheduled job reaches its queue, and then cancels what the round left.
func TestCancelOfAScheduledJobWaitsForNoClaim(t *testing.T) {
	ctx := context.Background()
	pool := newDB(t)
	c, err := millrace.NewClient(pool, millrace.Config{})
	if err != nil {
		t.Fatal(err)
	}
	later := &millrace.InsertOpts{Queue: "cq", RunAt: time.Now().Add(time.Hour)}
	job := mustInsert(t, c, countArgs{N: 1}, later)
	other := mustInsert(t, c, countArgs{N: 2}, later)
	// A claim of the queue in flight: its lock held.
	claimer, err := pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer claimer.Rollback(ctx)
	if _, err := claimer.Exec(ctx, "SELECT pg_advisory_xact_lock(millrace.claim_space(), hashtext('cq'))"); err != nil {
		t.Fatal(err)
	}
	// 10 s: a bound on a broken run, where the cancel waits for the claim.
	octx, cancel := context.WithTimeout(ctx, 10*time.Second)
	res, err := millrace.Cancel(octx, pool, job.ID)
	cancel()
	if err != nil || res != millrace.Cancelled {
		t.Fatalf("a cancel of a scheduled job while a claim of its queue is open: %v, %v; want %v", res, err, millrace.Cancelled)
	}
	if err := claimer.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	// A promote round in flight: its lock held.
	round, err := pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer round.Rollback(ctx)
	if _, err := round.Exec(ctx, "SELECT pg_advisory_xact_lock(millrace.maint_space(), 2)"); err != nil {
		t.Fatal(err)
	}
	done := waitingCancel(t, pool, other.ID, "a promote round")
	if err := round.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	if a := <-done; a.err != nil || a.r != millrace.Cancelled {
		t.Fatalf("the cancel after the round = %v, %v; want %v", a.r, a.err, millrace.Cancelled)
	}
	for _, id := range []int64{job.ID, other.ID} {
		if s := jobState(t, pool, id); s != millrace.JobCancelled {
			t.Errorf("job %d: %s, want cancelled", id, s)
		}
	}
}

// TestAPromoteRoundLeavesOutACancelInFlight: a promote round that meets
// the cancel of a due job not yet committed waits for it, and does not
// move the job to its queue: no claim takes it.
func TestAPromoteRoundLeavesOutACancelInFlight(t *testing.T) {
	ctx := context.Background()
	pool := newDB(t)
	c, err := millrace.NewClient(pool, millrace.Config{})
	if err != nil {
		t.Fatal(err)
	}
	due := time.Now().Add(200 * time.Millisecond)
	job := mustInsert(t, c, countArgs{N: 1}, &millrace.InsertOpts{Queue: "cq", RunAt: due})
	canceller, err := pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer canceller.Rollback(ctx)
	var r string
	if err := canceller.QueryRow(ctx, "SELECT millrace.cancel($1)", job.ID).Scan(&r); err != nil || r != "cancelled" {
		t.Fatalf("cancel: %q, %v", r, err)
	}
	waitFor(t, "the job to come due", 10*time.Second, func() bool { return time.Now().After(due) })
	conn, err := pool.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Release()
	var pid int
	conn.QueryRow(ctx, "SELECT pg_backend_pid()").Scan(&pid)
	promoted := make(chan error, 1)
	go func() {
		var n int64
		promoted <- conn.QueryRow(ctx, "SELECT millrace.promote()").Scan(&n)
	}()
	waitFor(t, "the round to wait for the cancel", 10*time.Second, func() bool {
		var waiting bool
		pool.QueryRow(ctx, "SELECT EXISTS (SELECT 1 FROM pg_locks WHERE pid = $1 AND NOT granted AND locktype = 'advisory')", pid).Scan(&waiting)
		return waiting || len(promoted) > 0
	})
	if len(promoted) > 0 {
		t.Fatalf("the round finished while a cancel of its due job was open: %v", <-promoted)
	}
	if err := canceller.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-promoted; err != nil {
		t.Fatal(err)
	}
	var rows int
	pool.QueryRow(ctx, "SELECT count(*) FROM millrace.job WHERE id = $1", job.ID).Scan(&rows)
	if rows != 0 {
		t.Fatalf("the round moved the cancelled job to its queue (%d job rows)", rows)
	}
}

// countingTracer counts the statements a connection sends.
type countingTracer struct{ n atomic.Int64 }

func (c *countingTracer) TraceQueryStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceQueryStartData) context.Context {
	c.n.Add(1)
	return ctx
}

func (c *countingTracer) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}

// TestADuplicateInsertIsOneStatement: the insert of a unique job that
// meets its key reports the blocking job's state from insert_many, read
// under the key's lock, instead of asking job_state in a second statement
// (2.8 ms a call under the bench's full mix, and a round trip).
func TestADuplicateInsertIsOneStatement(t *testing.T) {
	ctx := context.Background()
	cfg, err := pgxpool.ParseConfig(newDB(t).Config().ConnString())
	if err != nil {
		t.Fatal(err)
	}
	tr := &countingTracer{}
	cfg.ConnConfig.Tracer = tr
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	c, err := millrace.NewClient(pool, millrace.Config{})
	if err != nil {
		t.Fatal(err)
	}
	unique := &millrace.InsertOpts{RunAt: time.Now().Add(time.Hour), Unique: &millrace.UniqueOpts{ByArgs: true}}
	orig := mustInsert(t, c, countArgs{N: 1}, unique)
	tx, err := pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx)
	before := tr.n.Load()
	r, err := c.InsertTx(ctx, tx, countArgs{N: 1}, unique)
	if err != nil || !r.Duplicate || r.ID != orig.ID || r.State != millrace.JobScheduled {
		t.Fatalf("duplicate insert: %+v, %v; want a duplicate of job %d, scheduled", r, err, orig.ID)
	}
	if n := tr.n.Load() - before; n != 1 {
		t.Errorf("a duplicate insert sent %d statements; want 1", n)
	}
}
