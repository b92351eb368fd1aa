package millrace_test

import (
	"bytes"
	"context"
	"errors"
	"github.com/millrace/millrace/internal/testkit"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/millrace/millrace"
	"github.com/millrace/millrace/internal/ops"
)

// logBuffer captures a client's log lines.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}

func (l *logBuffer) logger() *slog.Logger {
	return slog.New(slog.NewTextHandler(l, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

// chargeArgs is a job whose argument is a 64-bit integer.
type chargeArgs struct {
	OrderID int64 `json:"order_id"`
}

func (chargeArgs) Kind() string { return "charge" }

// TestUniqueByArgsKeepsIntegersApart: jobs unique by arguments whose
// arguments differ only in a 64-bit integer a float64 cannot tell apart
// are two jobs; the same value spelled another way is one.
func TestUniqueByArgsKeepsIntegersApart(t *testing.T) {
	ctx := context.Background()
	pool := newDB(t)
	c, err := millrace.NewClient(pool, millrace.Config{Logger: quietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	for _, keys := range [][]string{nil, {"order_id"}} {
		opts := &millrace.InsertOpts{Unique: &millrace.UniqueOpts{ByArgs: true, ArgKeys: keys}}
		for _, pair := range [][2]int64{{1234567890123456789, 1234567890123456700}, {9007199254740993, 9007199254740992}} {
			a := mustInsert(t, c, chargeArgs{pair[0]}, opts)
			b := mustInsert(t, c, chargeArgs{pair[1]}, opts)
			if a.Duplicate || b.Duplicate || a.ID == b.ID {
				t.Errorf("arg keys %v: order %d after order %d: duplicate %v of job %d (job %d)", keys, pair[1], pair[0], b.Duplicate, b.ID, a.ID)
			}
			if again := mustInsert(t, c, chargeArgs{pair[1]}, opts); !again.Duplicate || again.ID != b.ID {
				t.Errorf("arg keys %v: order %d inserted twice: job %d, then job %d (duplicate %v)", keys, pair[1], b.ID, again.ID, again.Duplicate)
			}
			if _, err := pool.Exec(ctx, "SELECT millrace.cancel(id) FROM unnest($1::bigint[]) id", []int64{a.ID, b.ID}); err != nil {
				t.Fatal(err)
			}
		}
	}
	// One value, two spellings: one key.
	opts := &millrace.InsertOpts{Unique: &millrace.UniqueOpts{ByArgs: true}}
	a := mustInsert(t, c, rawArgs{"n", `{"n": 1.0, "m": [1e2]}`}, opts)
	b := mustInsert(t, c, rawArgs{"n", `{"m":[100],"n":1}`}, opts)
	if !b.Duplicate || b.ID != a.ID {
		t.Errorf("the same value spelled twice made two jobs: %d and %d", a.ID, b.ID)
	}
}

// TestRetentionIsTheAdministrators: the worker role expires history by the
// retention the database holds and cannot shorten it (as the worker,
// expire_history('0', '0') emptied history: a cancelled job then showed
// running and could not be retried). An administrator sets it; a client
// configured with a retention sets it when its role may, and otherwise
// leaves the database's.
func TestRetentionIsTheAdministrators(t *testing.T) {
	ctx := context.Background()
	owner := newDB(t)
	c, err := millrace.NewClient(owner, millrace.Config{Logger: quietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	job := mustInsert(t, c, chargeArgs{1}, nil)
	if r, err := millrace.Cancel(ctx, owner, job.ID); err != nil || r != millrace.Cancelled {
		t.Fatalf("cancel: %v, %v", r, err)
	}
	worker, err := pgxpool.New(ctx, testkit.LoginAs(t, owner, "millrace_worker"))
	if err != nil {
		t.Fatal(err)
	}
	defer worker.Close()
	for _, q := range []string{
		"SELECT millrace.expire_history('0', '0')",
		"SELECT millrace.expire_history('0 s'::interval, '0 s'::interval)",
		"SELECT millrace.set_retention('0', '0')",
	} {
		if _, err := worker.Exec(ctx, q); err == nil {
			t.Errorf("the worker role ran %s", q)
		}
	}
	if _, _, err := millrace.SetRetention(ctx, worker, time.Second, time.Second); !isDenied(err) {
		t.Errorf("the worker role set the retention: %v", err)
	}
	var n int
	if err := worker.QueryRow(ctx, "SELECT millrace.expire_history()").Scan(&n); err != nil || n != 0 {
		t.Fatalf("expire_history as the worker: %d buckets, %v; want 0 (nothing is older than a week)", n, err)
	}
	if st := jobState(t, worker, job.ID); st != millrace.JobCancelled {
		t.Fatalf("the cancelled job is %q after the worker's expiry", st)
	}

	// A worker client configured with a retention leaves the database's,
	// and says so.
	logs := &logBuffer{}
	wc, err := millrace.NewClient(worker, millrace.Config{Logger: logs.logger(), CompletedRetention: time.Minute,
		DiscardedRetention: time.Minute, Workers: millrace.NewWorkers(), Queues: map[string]millrace.QueueConfig{"w": {MaxWorkers: 1}}})
	if err != nil {
		t.Fatal(err)
	}
	if err := wc.Start(ctx); err != nil {
		t.Fatal(err)
	}
	wc.StopAndCancel(ctx)
	if completed, other, err := millrace.Retention(ctx, worker); err != nil || completed != millrace.DefaultCompletedRetention ||
		other != millrace.DefaultDiscardedRetention {
		t.Fatalf("retention after a worker's client started: %v, %v, %v; want the defaults", completed, other, err)
	}
	if !strings.Contains(logs.String(), "not applied") {
		t.Errorf("the worker's client did not say its retention was not applied: %s", logs)
	}

	// The administrator sets it: a client of the schema's owner, then
	// millrace_admin.
	oc, err := millrace.NewClient(owner, millrace.Config{Logger: quietLogger(), DiscardedRetention: 48 * time.Hour,
		Workers: millrace.NewWorkers(), Queues: map[string]millrace.QueueConfig{"o": {MaxWorkers: 1}}})
	if err != nil {
		t.Fatal(err)
	}
	if err := oc.Start(ctx); err != nil {
		t.Fatal(err)
	}
	oc.StopAndCancel(ctx)
	if completed, other, err := millrace.Retention(ctx, worker); err != nil || completed != millrace.DefaultCompletedRetention ||
		other != 48*time.Hour {
		t.Fatalf("retention after the owner's client started: %v, %v, %v; want 24h and 48h", completed, other, err)
	}
	admin, err := pgxpool.New(ctx, testkit.LoginAs(t, owner, "millrace_admin"))
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	if _, _, err := millrace.SetRetention(ctx, admin, 100*time.Hour, 0); err == nil {
		t.Error("a completed retention of 100h was accepted")
	}
	if completed, other, err := millrace.SetRetention(ctx, admin, time.Hour, 0); err != nil || completed != time.Hour || other != 48*time.Hour {
		t.Fatalf("set_retention as millrace_admin: %v, %v, %v", completed, other, err)
	}
}

// TestRetryIsIdempotent: a retry of a job already retried answers with the
// job it made, one after the other or at once (two retries of job 1 made
// jobs 2, 3, 4 and 5).
func TestRetryIsIdempotent(t *testing.T) {
	ctx := context.Background()
	pool := newDB(t)
	c, err := millrace.NewClient(pool, millrace.Config{Logger: quietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	cancelled := func() int64 {
		job := mustInsert(t, c, chargeArgs{7}, &millrace.InsertOpts{Queue: "r"})
		if r, err := millrace.Cancel(ctx, pool, job.ID); err != nil || r != millrace.Cancelled {
			t.Fatalf("cancel: %v, %v", r, err)
		}
		return job.ID
	}
	live := func() (n int) {
		if err := pool.QueryRow(ctx, "SELECT count(*) FROM millrace.jobs WHERE queue = 'r' AND state = 'available'").Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}

	// One after the other.
	id := cancelled()
	first, r, err := millrace.Retry(ctx, pool, id)
	if err != nil || first == 0 {
		t.Fatalf("retry: %d %q %v", first, r, err)
	}
	for i := 0; i < 2; i++ {
		if again, r, err := millrace.Retry(ctx, pool, id); err != nil || again != first {
			t.Fatalf("retry again: job %d (%q, %v); want job %d, the one the first retry made", again, r, err, first)
		}
	}
	if n := live(); n != 1 {
		t.Fatalf("%d jobs waiting after three retries of one job; want 1", n)
	}

	// At once: the second waits for the first and answers with its job.
	id = cancelled()
	tx, err := pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx)
	var r1 string
	if err := tx.QueryRow(ctx, "SELECT millrace.retry($1)", id).Scan(&r1); err != nil {
		t.Fatal(err)
	}
	conn, err := pool.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Release()
	pid := conn.Conn().PgConn().PID()
	second := make(chan string, 1)
	go func() {
		var r2 string
		if err := conn.QueryRow(ctx, "SELECT millrace.retry($1)", id).Scan(&r2); err != nil {
			r2 = err.Error()
		}
		second <- r2
	}()
	// Commit the first once the second waits for it (or has answered
	// without waiting, which is the defect).
	var r2 string
	waitFor(t, "the second retry to wait or answer", 10*time.Second, func() bool {
		select {
		case r2 = <-second:
			return true
		default:
		}
		var waiting bool
		pool.QueryRow(ctx, "SELECT wait_event_type = 'Lock' FROM pg_stat_activity WHERE pid = $1", pid).Scan(&waiting)
		return waiting
	})
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if r2 == "" {
		r2 = <-second
	}
	if r2 != r1 {
		t.Fatalf("two retries at once: %q and %q; want the same job", r1, r2)
	}
	if n := live(); n != 2 {
		t.Fatalf("%d jobs waiting after retries of two jobs; want 2", n)
	}
}

// TestRunAtRules: a due time is finite, in years 1 to 9999, in SQL and in
// Go with the same message ('infinity' made `millrace jobs list`, the
// dashboard and its API fail for as long as the job existed, and the job
// never came due). A row written before the rule is still listed.
func TestRunAtRules(t *testing.T) {
	ctx := context.Background()
	pool := newDB(t)
	c, err := millrace.NewClient(pool, millrace.Config{Logger: quietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	const msg = "millrace: run_at must be a finite time in years 1 to 9999 (UTC)"
	for _, q := range []string{
		"SELECT millrace.enqueue('k', '{}', p_run_at => 'infinity')",
		"SELECT millrace.enqueue('k', '{}', p_run_at => '-infinity')",
		"SELECT millrace.enqueue('k', '{}', p_run_at => '10000-01-01 00:00:00+00')",
		"SELECT millrace.enqueue('k', '{}', p_run_at => '200000-06-01 00:00:00+00')",
		"SELECT millrace.enqueue('k', '{}', p_run_at => '0001-12-31 23:59:59+00 BC')",
		"SELECT millrace.enqueue_many('{k,k}', '{\"{}\",\"{}\"}', '{q,q}', '{0,0}', '{NULL,infinity}', '{1,1}')",
	} {
		_, err := pool.Exec(ctx, q)
		var pgErr *pgconn.PgError
		if !errors.As(err, &pgErr) || pgErr.Message != msg {
			t.Errorf("%s: %v; want %q", q, err, msg)
		}
	}
	for _, at := range []time.Time{time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC), time.Date(0, 12, 31, 0, 0, 0, 0, time.UTC),
		time.Date(9999, 12, 31, 23, 0, 0, 0, time.FixedZone("", -3600))} {
		if _, err := c.Insert(ctx, chargeArgs{1}, &millrace.InsertOpts{RunAt: at}); err == nil || err.Error() != msg {
			t.Errorf("Insert at %v: %v; want %q", at, err, msg)
		}
	}
	last := time.Date(9999, 12, 31, 23, 59, 59, 0, time.UTC)
	job := mustInsert(t, c, chargeArgs{1}, &millrace.InsertOpts{RunAt: last})
	if !job.ScheduledAt.Equal(last) {
		t.Fatalf("a job due at %v is due at %v", last, job.ScheduledAt)
	}

	// A row of the schedule written with 'infinity' (as version 6 let
	// anyone): every reader lists it, due at the end of year 9999.
	var old int64
	if err := pool.QueryRow(ctx, `INSERT INTO millrace.sched (gen, id, queue, kind, args, priority, attempt, max_attempts, created_at, due_at)
		VALUES (millrace.current_gen(), nextval('millrace.job_id_seq'), 'default', 'k', '{}', 0, 0, 1, now(), 'infinity') RETURNING id`).Scan(&old); err != nil {
		t.Fatal(err)
	}
	end := time.Date(9999, 12, 31, 23, 59, 59, 999999000, time.UTC)
	jobs, err := ops.ListJobs(ctx, pool, ops.Filter{})
	if err != nil {
		t.Fatalf("jobs list: %v", err)
	}
	found := false
	for _, j := range jobs {
		if j.ID == old {
			found = j.RunAt != nil && j.RunAt.Equal(end)
		}
	}
	if !found {
		t.Errorf("jobs list: the job due at infinity is not listed due at %v: %+v", end, jobs)
	}
	if d, err := ops.GetJob(ctx, pool, old); err != nil || d.Live == nil || d.Live.RunAt == nil || !d.Live.RunAt.Equal(end) {
		t.Errorf("jobs show: %+v, %v", d, err)
	}
	if j, err := millrace.JobByID(ctx, pool, old); err != nil || j.State != millrace.JobScheduled || !j.RunAt.Equal(end) {
		t.Errorf("JobByID: %+v, %v", j, err)
	}
	if _, err := millrace.QueueCounts(ctx, pool); err != nil {
		t.Errorf("QueueCounts: %v", err)
	}
}

// TestErrorAfterCompleteTxIsReportedAsSuch: a worker that commits
// CompleteTx and then returns an error is not logged "job failed;
// retrying" (the job completed and is not retried): the log says it
// completed in its transaction and gives the error returned after.
func TestErrorAfterCompleteTxIsReportedAsSuch(t *testing.T) {
	pool := newDB(t)
	var handled atomic.Int64
	workers := millrace.NewWorkers()
	millrace.AddWorker(workers, millrace.WorkFunc(func(ctx context.Context, j *millrace.Job[chargeArgs]) error {
		tx, err := pool.Begin(ctx)
		if err != nil {
			return err
		}
		defer tx.Rollback(ctx)
		if err := millrace.CompleteTx(ctx, tx, j); err != nil {
			return err
		}
		if err := tx.Commit(ctx); err != nil {
			return err
		}
		return errors.New("notifying the shop failed after the commit")
	}))
	logs := &logBuffer{}
	c := startClient(t, pool, workers, millrace.Config{Logger: logs.logger(),
		ErrorHandler: func(context.Context, *millrace.JobError) { handled.Add(1) }})
	job := mustInsert(t, c, chargeArgs{3}, nil)
	waitFor(t, "the error's log line", 10*time.Second, func() bool {
		return strings.Contains(logs.String(), "notifying the shop failed")
	})
	out := logs.String()
	if strings.Contains(out, "job failed") || !strings.Contains(out, "completed in its own transaction") {
		t.Errorf("log of a job completed in its transaction whose worker then returned an error:\n%s", out)
	}
	if n := handled.Load(); n != 0 {
		t.Errorf("ErrorHandler told of %d failed attempts; the attempt completed", n)
	}
	if st := jobState(t, pool, job.ID); st != millrace.JobCompleted {
		t.Errorf("job is %q", st)
	}
}

// TestBatchBytesCountWhatTheWorkerHolds: a claim's byte cap counts the
// arguments as the worker receives them, not as Postgres stores them
// (compressed): a claim capped at 8 MiB returned 198 MB of highly
// compressible arguments.
func TestBatchBytesCountWhatTheWorkerHolds(t *testing.T) {
	ctx := context.Background()
	pool := newDB(t)
	const n, size = 40, 900000 // each about 10 KB once compressed
	if _, err := pool.Exec(ctx, `SELECT millrace.enqueue_many(array_fill('big'::text, ARRAY[$1::int]),
		array_fill(jsonb_build_object('pad', repeat('a', $2::int)), ARRAY[$1::int]), array_fill('big'::text, ARRAY[$1::int]),
		array_fill(0, ARRAY[$1::int]), array_fill(NULL::timestamptz, ARRAY[$1::int]), array_fill(1, ARRAY[$1::int]))`, n, size); err != nil {
		t.Fatal(err)
	}
	var stored int64
	if err := pool.QueryRow(ctx, "SELECT pg_column_size(args) FROM millrace.job WHERE queue = 'big' LIMIT 1").Scan(&stored); err != nil {
		t.Fatal(err)
	}
	if stored > size/10 {
		t.Fatalf("args of %d bytes are stored in %d: not compressed, the test shows nothing", size, stored)
	}
	const cap = 8 << 20
	var jobs int
	var bytes int64
	if err := pool.QueryRow(ctx, "SELECT count(*), coalesce(sum(octet_length(args::text)), 0) FROM millrace.claim('big', 1, 1, false, 1000, $1)",
		cap).Scan(&jobs, &bytes); err != nil {
		t.Fatal(err)
	}
	one := int64(size + len(`{"pad": ""}`))
	if jobs == 0 || bytes > cap+one {
		t.Fatalf("a claim capped at %d bytes returned %d jobs, %d bytes of args", cap, jobs, bytes)
	}
	t.Logf("a claim capped at %d bytes returned %d jobs, %d bytes of args (%d stored each)", cap, jobs, bytes, stored)
}

// claimAndComplete claims every job of the queues named prefix1 to
// prefixN as process 1 and completes them in one flush.
func claimAndComplete(t *testing.T, pool *pgxpool.Pool, prefix string, n int) int {
	t.Helper()
	ctx := context.Background()
	var done int
	err := pool.QueryRow(ctx, `
		WITH c AS MATERIALIZED (SELECT $1 || g AS q, x.* FROM generate_series(1, $2::int) g
		                        CROSS JOIN LATERAL millrace.claim($1 || g, 1, g) x),
		f AS (SELECT millrace.flush(1, nextval('millrace.tick_id_seq'), array_agg(id ORDER BY id), array_agg(tick_id ORDER BY id),
		             array_agg(token ORDER BY id), array_agg(1::smallint ORDER BY id), array_agg(attempt + 1 ORDER BY id),
		             array_agg(NULL::text ORDER BY id), array_agg(NULL::timestamptz ORDER BY id), array_agg(q ORDER BY id),
		             array_agg(kind ORDER BY id), array_agg(args ORDER BY id), array_agg(priority ORDER BY id),
		             array_agg(max_attempts ORDER BY id), array_agg(created_at ORDER BY id), array_agg(timeout_ms ORDER BY id),
		             array_agg(now() ORDER BY id), array_agg(now() ORDER BY id), array_agg(DISTINCT tick_id),
		             array_agg(DISTINCT tick_id), (SELECT array_agg(q ORDER BY t) FROM (SELECT DISTINCT q, tick_id AS t FROM c) d), false)
		      FROM c)
		SELECT (SELECT count(*) FROM c) + (SELECT count(*) FROM f) * 0`, prefix, n).Scan(&done)
	if err != nil {
		t.Fatal(err)
	}
	return done
}

// TestIdleLanesAreForgotten: the newest tick of every lane ever claimed
// was carried by every reclaim, forever (2,000 queues used once left 2,000
// rows copied at every turn). A lane with no job left is forgotten within
// a couple of rotations; and forgetting a lane skips no job committed late
// and runs no job twice.
func TestIdleLanesAreForgotten(t *testing.T) {
	ctx := context.Background()
	pool := newDB(t)
	const queues = 2000
	if _, err := pool.Exec(ctx, `SELECT millrace.enqueue_many(array_agg('k'::text), array_agg('{}'::jsonb), array_agg('q' || g),
		array_agg(0), array_agg(NULL::timestamptz), array_agg(1)) FROM generate_series(1, $1::int) g`, queues); err != nil {
		t.Fatal(err)
	}
	if n := claimAndComplete(t, pool, "q", queues); n != queues {
		t.Fatalf("claimed %d jobs of %d queues", n, queues)
	}
	ticks := func() (n int) {
		if err := pool.QueryRow(ctx, "SELECT count(*) FROM millrace.tick").Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	rotate := func() {
		if _, err := pool.Exec(ctx, "SELECT count(*) FROM millrace.rotate('0s')"); err != nil {
			t.Fatal(err)
		}
	}
	if n := ticks(); n != queues {
		t.Fatalf("%d ticks after claiming %d queues", n, queues)
	}
	for i := 0; i < 3; i++ {
		rotate()
	}
	if n := ticks(); n > queues/100 {
		t.Fatalf("%d ticks carried after three rotations of %d idle queues; want about none", n, queues)
	}

	// A lane forgotten while a job of it is being inserted: the job, once
	// committed, is claimed (once), and the job claimed before the lane
	// was forgotten is not claimed again.
	if _, err := pool.Exec(ctx, "SELECT millrace.enqueue('k', '{\"n\": 1}', 'late1')"); err != nil {
		t.Fatal(err)
	}
	if n := claimAndComplete(t, pool, "late", 1); n != 1 {
		t.Fatalf("claimed %d jobs of queue late1", n)
	}
	rotate() // the lane's tick is in a slot no longer current
	producer, err := pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer producer.Rollback(ctx)
	var late int64
	if err := producer.QueryRow(ctx, "SELECT millrace.enqueue('k', '{\"n\": 2}', 'late1')").Scan(&late); err != nil {
		t.Fatal(err)
	}
	rotate() // reclaims the tick's slot while the insert is in progress
	var left int
	pool.QueryRow(ctx, "SELECT count(*) FROM millrace.tick WHERE queue = 'late1'").Scan(&left)
	if err := producer.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	rows, err := pool.Query(ctx, "SELECT id FROM millrace.claim('late1', 2, 1)")
	if err != nil {
		t.Fatal(err)
	}
	got, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[0] != late {
		t.Fatalf("claim after the lane was forgotten (%d ticks left): jobs %v; want the late job %d only", left, got, late)
	}
	t.Logf("ticks of the lane left after its reclaim: %d", left)
}

// TestClaimCostIsBoundedInLanes: a producer spreading jobs over 5,000
// priorities made a claim of 10 call lane_take for every lane (a second a
// claim). A claim calls it only for the lanes it takes jobs from (the
// others are looked at with a few index probes each, a bounded number of
// them), takes the highest priorities first, and every job is claimed
// once in the end.
func TestClaimCostIsBoundedInLanes(t *testing.T) {
	ctx := context.Background()
	pool := newDB(t)
	const lanes = 5000
	if _, err := pool.Exec(ctx, `SELECT millrace.enqueue_many(array_agg('k'::text), array_agg('{}'::jsonb), array_agg('spread'::text),
		array_agg(g), array_agg(NULL::timestamptz), array_agg(1)) FROM generate_series(0, $1::int - 1) g`, lanes); err != nil {
		t.Fatal(err)
	}
	seen := map[int64]bool{}
	for claim := 1; len(seen) < lanes; claim++ {
		if claim > 100 {
			t.Fatalf("%d jobs of %d claimed after %d claims", len(seen), lanes, claim)
		}
		max := 10 // then 1000, to take every job
		if claim > 5 {
			max = 1000
		}
		tx, err := pool.Begin(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := tx.Exec(ctx, "SET LOCAL track_functions = 'pl'"); err != nil {
			t.Fatal(err)
		}
		// Calls not yet flushed to the statistics accumulate over
		// transactions: count this claim's as a difference.
		callsSQL := "SELECT coalesce(sum(calls), 0) FROM pg_stat_xact_user_functions WHERE funcname = 'lane_take'"
		var before int64
		if err := tx.QueryRow(ctx, callsSQL).Scan(&before); err != nil {
			t.Fatal(err)
		}
		rows, err := tx.Query(ctx, "SELECT id, priority FROM millrace.claim('spread', 1, $1, false, $2)", claim, max)
		if err != nil {
			t.Fatal(err)
		}
		type job struct {
			ID       int64
			Priority int16
		}
		got, err := pgx.CollectRows(rows, pgx.RowToStructByPos[job])
		if err != nil {
			t.Fatal(err)
		}
		var calls int64
		if err := tx.QueryRow(ctx, callsSQL).Scan(&calls); err != nil {
			t.Fatal(err)
		}
		calls -= before
		if err := tx.Commit(ctx); err != nil {
			t.Fatal(err)
		}
		if calls > int64(len(got))+10 {
			t.Fatalf("claim %d of a queue of %d lanes took %d jobs and called lane_take %d times", claim, lanes, len(got), calls)
		}
		if claim == 1 {
			if len(got) != 10 {
				t.Fatalf("the first claim of 10 took %d jobs", len(got))
			}
			for i, j := range got {
				if j.Priority != int16(i) {
					t.Fatalf("the first claim took priorities %v; want 0 to 9", got)
				}
			}
		}
		for _, j := range got {
			if seen[j.ID] {
				t.Fatalf("job %d claimed twice", j.ID)
			}
			seen[j.ID] = true
		}
	}
}
