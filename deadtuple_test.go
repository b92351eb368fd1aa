package millrace_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/millrace/millrace"
	"github.com/millrace/millrace/internal/storage"
	"github.com/millrace/millrace/internal/testkit"
)

// budget reads docs/dead-tuple-budget.md: table name → budget unit.
func budget(t *testing.T) map[string]string {
	t.Helper()
	f, err := os.Open("docs/dead-tuple-budget.md")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	out := map[string]string{}
	in := false
	row := regexp.MustCompile(`^\|\s*([a-z_0-9, ]+?)\s*\|[^|]*\|\s*([a-z0-9]+)\s*\|$`)
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.Contains(line, "budget:begin"):
			in = true
		case strings.Contains(line, "budget:end"):
			in = false
		case in:
			m := row.FindStringSubmatch(line)
			if m == nil || m[1] == "table" {
				continue
			}
			for _, name := range strings.Split(m[1], ",") {
				out[strings.TrimSpace(name)] = m[2]
			}
		}
	}
	if len(out) == 0 {
		t.Fatal("no budget rows found in docs/dead-tuple-budget.md")
	}
	return out
}

// TestDeadTupleContract drives every path of the queue while another session
// holds an xid open, then reads n_dead_tup of every table in the schema:
// hot-path tables must show exactly 0, the others stay within the budget.
func TestDeadTupleContract(t *testing.T) {
	ctx := context.Background()
	pool := newDB(t)
	testkit.RequireServerVersion(t, pool, 150000) // pg_stat_force_next_flush
	url := pool.Config().ConnString()

	// The pin: an xid held open for the whole test.
	holder, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer holder.Close(ctx)
	holdTx, _ := holder.Begin(ctx)
	var heldXid string
	if err := holdTx.QueryRow(ctx, "SELECT pg_current_xact_id()::text").Scan(&heldXid); err != nil {
		t.Fatal(err)
	}

	const (
		nBulk, nSingle, nSQL, nTx = 6000, 2000, 1000, 1000
		total                     = nBulk + nSingle + nSQL + nTx
	)
	var ran, failedOnce sync.Map
	var completed atomic.Int64
	workers := millrace.NewWorkers()
	millrace.AddWorker(workers, millrace.WorkFunc(func(ctx context.Context, j *millrace.Job[countArgs]) error {
		if j.Args.Fail > 0 && j.Attempt <= j.Args.Fail {
			failedOnce.Store(j.Args.N, true)
			return errors.New("planned failure")
		}
		if _, dup := ran.LoadOrStore(j.Args.N, true); !dup {
			completed.Add(1)
		}
		return nil
	}))
	cfg := millrace.Config{Workers: workers, Logger: quietLogger(),
		Queues: map[string]millrace.QueueConfig{"default": {MaxWorkers: 16}, "victim": {MaxWorkers: 4},
			// every limit: slots, a buffer, a rate's window, keys' totals, a key's window and deferred jobs
			"limited": {MaxWorkers: 8, Limit: &millrace.Limit{Running: 6, Rate: 5000, Per: time.Second, PerKey: 2, Key: []string{"pad"},
				KeyRate: 40, KeyPer: time.Second}}},
		Backoff:          func(int) time.Duration { return 100 * time.Millisecond },
		RotateAfter:      300 * time.Millisecond,
		MaintenanceEvery: 50 * time.Millisecond}
	client, err := millrace.NewClient(pool, cfg)
	if err != nil {
		t.Fatal(err)
	}

	// A second process, killed (SIGKILL) while it runs jobs: its batches
	// must be rescued by the leader once its lease runs out, the jobs it
	// was running charged an attempt.
	for i := 0; i < 50; i++ {
		if _, err := client.Insert(ctx, countArgs{N: total + i}, &millrace.InsertOpts{Queue: "victim"}); err != nil {
			t.Fatal(err)
		}
	}
	victim := startWorkerProcess(t, pool, "victim", 10, "MILLRACE_TEST_LEASE=2s")
	victim.Process.Kill()
	victim.Wait()
	if err := client.Start(ctx); err != nil {
		t.Fatal(err)
	}

	opts := func(i int) (countArgs, *millrace.InsertOpts) {
		a := countArgs{N: i}
		o := &millrace.InsertOpts{}
		switch {
		case i%20 == 1:
			a.Fail = 1 // retried once
		case i%100 == 2:
			a.Fail = 1
			o.MaxAttempts = 1 // discarded
		case i%50 == 3:
			o.RunAt = time.Now().Add(300 * time.Millisecond) // scheduled
		}
		return a, o
	}
	discards := 0
	for i := 0; i < total; i++ {
		if i%100 == 2 {
			discards++
		}
	}
	params := make([]millrace.InsertManyParams, 0, nBulk)
	for i := 0; i < nBulk; i++ {
		a, o := opts(i)
		params = append(params, millrace.InsertManyParams{Args: a, Opts: o})
	}
	for off := 0; off < nBulk; off += 1000 {
		if _, err := client.InsertMany(ctx, params[off:off+1000]); err != nil {
			t.Fatal(err)
		}
	}
	for i := nBulk; i < nBulk+nSingle; i++ {
		a, o := opts(i)
		if _, err := client.Insert(ctx, a, o); err != nil {
			t.Fatal(err)
		}
	}
	for i := nBulk + nSingle; i < nBulk+nSingle+nSQL; i++ {
		a, o := opts(i)
		var runAt any
		if !o.RunAt.IsZero() {
			runAt = o.RunAt
		}
		maxA := 25
		if o.MaxAttempts > 0 {
			maxA = o.MaxAttempts
		}
		if _, err := pool.Exec(ctx, "SELECT millrace.enqueue('count', $1::jsonb, 'default', 1::smallint, $2, $3)",
			fmt.Sprintf(`{"n":%d,"fail":%d}`, a.N, a.Fail), runAt, maxA); err != nil {
			t.Fatal(err)
		}
	}
	for i := nBulk + nSingle + nSQL; i < total; i += 10 {
		err := pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
			for k := i; k < i+10; k++ {
				a, o := opts(k)
				if _, err := client.InsertTx(ctx, tx, a, o); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	// A limited queue: 300 jobs over 5 keys of 2 (most of them deferred
	// at least once) under a running and a rate limit.
	const nLimited = 300
	lp := make([]millrace.InsertManyParams, nLimited)
	for i := range lp {
		lp[i] = millrace.InsertManyParams{Args: countArgs{N: total + 50 + i, Pad: fmt.Sprint(i % 5)}, Opts: &millrace.InsertOpts{Queue: "limited"}}
	}
	if _, err := client.InsertMany(ctx, lp); err != nil {
		t.Fatal(err)
	}
	want := int64(total - discards + 50 + nLimited)
	waitFor(t, "every job to complete", 120*time.Second, func() bool { return completed.Load() >= want },
		func() string {
			var missing []int
			for i := 0; i < total+50+nLimited && len(missing) < 20; i++ {
				if _, ok := ran.Load(i); !ok && !(i < total && i%100 == 2) {
					missing = append(missing, i)
				}
			}
			return fmt.Sprintf("%d of %d completed; first missing: %v", completed.Load(), want, missing)
		})
	var rotations int64
	waitFor(t, "four rotations", 30*time.Second, func() bool {
		st, err := millrace.ReadStats(ctx, pool)
		rotations = st.Rotations + st.Reclaims
		return err == nil && st.Rotations >= 4
	})
	var nDiscarded int
	waitFor(t, "discards recorded", 10*time.Second, func() bool {
		pool.QueryRow(ctx, "SELECT count(*) FROM millrace.history WHERE state = 'discarded'").Scan(&nDiscarded)
		return nDiscarded == discards
	})
	protocolPaths(t, pool)
	semanticPaths(t, pool)
	if err := client.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < total+50+nLimited; i++ {
		if _, ok := ran.Load(i); !ok && !(i < total && i%100 == 2) {
			t.Fatalf("job %d never completed", i)
		}
	}
	// The hold was real: the xid is still open and still the horizon.
	var stillHeld bool
	if err := pool.QueryRow(ctx, "SELECT EXISTS (SELECT 1 FROM pg_stat_activity WHERE backend_xid::text = $1)", heldXid).Scan(&stillHeld); err != nil || !stillHeld {
		t.Fatalf("the xid holder is gone (%v): the test did not run under a pinned horizon", err)
	}

	// Flush every backend's table statistics: closing the pools ends the
	// backends, which flush on exit (before they leave pg_stat_activity);
	// then read from a fresh session. Statistics that were not flushed
	// would read as no dead tuples at all, so a flush that cannot happen
	// fails the test rather than let it pass.
	client.Stop(ctx)
	pool.Reset()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	// A backend flushes its statistics before it leaves pg_stat_activity:
	// wait until only the xid holder and this session are left.
	var others int
	waitFor(t, "the closed pools' backends to exit", 30*time.Second, func() bool {
		if err := conn.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity WHERE datname = current_database()
			AND backend_type = 'client backend' AND pid <> pg_backend_pid() AND backend_xid::text IS DISTINCT FROM $1`, heldXid).Scan(&others); err != nil {
			t.Fatal(err)
		}
		return others == 0
	}, func() string { return fmt.Sprintf("%d backends left", others) })
	if err := flushStatistics(ctx, conn); err != nil {
		t.Fatal(err)
	}
	rows, err := conn.Query(ctx, "SELECT relname, n_dead_tup, n_tup_ins FROM pg_stat_user_tables WHERE schemaname = 'millrace' ORDER BY relname")
	if err != nil {
		t.Fatal(err)
	}
	type stat struct {
		dead, ins int64
	}
	stats := map[string]stat{}
	for rows.Next() {
		var name string
		var s stat
		if err := rows.Scan(&name, &s.dead, &s.ins); err != nil {
			t.Fatal(err)
		}
		stats[name] = s
	}
	b := budget(t)
	var dead processes
	conn.QueryRow(ctx, "SELECT count(*) FROM millrace.process").Scan(&dead.left)
	for name, s := range stats {
		unit, ok := b[name]
		if !ok {
			t.Errorf("table millrace.%s is not in docs/dead-tuple-budget.md", name)
			continue
		}
		var limit int64
		switch unit {
		case "0":
			limit = 0
		case "rotation":
			limit = rotations
		case "process":
			limit = 3 // the victim's identity, plus the identities ended by Stop
		case "migration":
			limit = 0 // nothing was reverted here
		case "periodic":
			limit = 0 // no slot is a week old here
		case "retry":
			limit = 0 // no retry is 33 days old here
		default:
			t.Errorf("unknown budget unit %q for %s", unit, name)
		}
		t.Logf("%-12s n_dead_tup=%d (budget %s), inserted=%d", name, s.dead, unit, s.ins)
		if s.dead > limit {
			t.Errorf("millrace.%s has %d dead tuples, budget %s allows %d", name, s.dead, unit, limit)
		}
	}
	for _, hot := range []string{"job_0", "ack_0", "tick_0", "sched_0", "done_0", "lease_0", "flush_0"} {
		if _, ok := stats[hot]; !ok {
			t.Errorf("no statistics for hot table %s", hot)
		}
	}
	// The statistics saw the work: every job was inserted into a slot of
	// job (as many more again for the retries and the scheduled ones).
	var inserted int64
	for _, s := range []string{"job_0", "job_1", "job_2", "job_3"} {
		inserted += stats[s].ins
	}
	if inserted < total {
		t.Errorf("the statistics count %d rows inserted into job, fewer than the %d jobs enqueued: they were not flushed, so n_dead_tup proves nothing", inserted, total)
	}
	var claims int64
	for _, s := range []string{"lease_0", "lease_1", "lease_2", "lease_3"} {
		claims += stats[s].ins
	}
	if claims < 2 {
		t.Error("no release and adoption lease was written: the killed process's batch was not rescued")
	}
	t.Logf("%d jobs + 50 rescued, %d rotations, %d discarded, %d rescue claims, under held xid %s", total, rotations, nDiscarded, claims, heldXid)
	holdTx.Rollback(ctx)
}

type processes struct{ left int }

// flushStatistics makes this session's table statistics visible and its
// next read of them fresh. pg_stat_force_next_flush needs PostgreSQL 15,
// the version this contract is tested on: on an older server this fails
// rather than let the contract pass on statistics that were never flushed.
func flushStatistics(ctx context.Context, conn *pgx.Conn) error {
	var version int
	if err := conn.QueryRow(ctx, "SELECT current_setting('server_version_num')::int").Scan(&version); err != nil {
		return err
	}
	if version < 150000 {
		return fmt.Errorf("the dead-tuple contract needs PostgreSQL 15 or newer to flush statistics (pg_stat_force_next_flush); this server is %d", version)
	}
	if _, err := conn.Exec(ctx, "SELECT pg_stat_force_next_flush()"); err != nil {
		return fmt.Errorf("cannot flush statistics: %w", err)
	}
	if _, err := conn.Exec(ctx, "SELECT pg_stat_clear_snapshot()"); err != nil {
		return fmt.Errorf("cannot clear the statistics snapshot: %w", err)
	}
	return nil
}

// protocolPaths drives, through the storage protocol directly, the paths a
// healthy client rarely takes: a claim retried after a lost reply, a
// replayed ack flush, a batch released for being stuck and adopted, and a
// compaction of the schedule.
func protocolPaths(t *testing.T, pool *pgxpool.Pool) {
	t.Helper()
	ctx := context.Background()
	s := &storage.Store{Pool: pool}
	lim := storage.Limits{MaxJobs: 10, MaxBytes: 1 << 20}
	for _, q := range []string{"paths-retry", "paths-stuck"} {
		if _, err := s.Enqueue(ctx, pool, storage.NewJob{Queue: q, Kind: "count", Args: []byte(`{"n":-1}`), Priority: 1, MaxAttempts: 3}, false); err != nil {
			t.Fatal(err)
		}
	}
	b, err := claimOne(s, ctx, "paths-retry", 900001, 1, false, lim)
	if err != nil || b == nil {
		t.Fatalf("claim: %v", err)
	}
	if again, err := claimOne(s, ctx, "paths-retry", 900001, 1, true, lim); err != nil || again == nil || again.TickID != b.TickID {
		t.Fatalf("retried claim: %v %+v", err, again)
	}
	for i := 0; i < 2; i++ { // the second is a replay
		if _, err := s.Flush(ctx, 900001, 1, true, []storage.Ack{{Batch: b, Job: &b.Jobs[0], State: storage.AckCompleted}}, []*storage.Batch{b}); err != nil {
			t.Fatal(err)
		}
	}
	live, err := s.Register(ctx, "live", "h", 1, time.Hour) // a live holder
	if err != nil {
		t.Fatal(err)
	}
	if ok, err := s.Beat(ctx, live, time.Hour); err != nil || !ok {
		t.Fatalf("heartbeat: %v %v", ok, err)
	}
	stuck, err := claimOne(s, ctx, "paths-stuck", live, 1, false, lim)
	if err != nil || stuck == nil {
		t.Fatalf("claim: %v", err)
	}
	if rel, err := s.Rescue(ctx, 0, time.Nanosecond); err != nil || len(rel) == 0 {
		t.Fatalf("stuck release: %v %+v", err, rel)
	}
	adopted, err := claimOne(s, ctx, "paths-stuck", 900003, 1, false, lim)
	if err != nil || adopted == nil {
		t.Fatalf("adoption: %v", err)
	}
	if _, err := s.Flush(ctx, 900003, 1, true, []storage.Ack{{Batch: adopted, Job: &adopted.Jobs[0], State: storage.AckCompleted}}, []*storage.Batch{adopted}); err != nil {
		t.Fatal(err)
	}
	var gens int
	if _, err := s.Promote(ctx, 0, 1); err != nil {
		t.Fatal(err)
	}
	pool.QueryRow(ctx, "SELECT count(*) FROM millrace.sched_gen").Scan(&gens)
	if gens < 2 {
		t.Fatalf("the schedule was never compacted (%d generations)", gens)
	}
}

// claimOne is Store.Claim for a queue of one lane: its one batch, or nil.
func claimOne(s *storage.Store, ctx context.Context, queue string, owner int32, req int64, retry bool, lim storage.Limits) (*storage.Batch, error) {
	bs, err := s.Claim(ctx, queue, owner, req, retry, lim)
	if err != nil || len(bs) == 0 {
		return nil, err
	}
	return bs[0], nil
}

type semArgs struct {
	N  int    `json:"n"`
	Do string `json:"do"`
}

func (semArgs) Kind() string { return "sem" }

// semanticPaths drives the job semantics of schema 5 through the client:
// priorities, snooze, cancel and discard from a worker, cancel from
// outside (queued, scheduled and running), unique inserts and their
// duplicates, pause and resume, transactional completion, periodic slots,
// retry of a discarded job, tally rounds of history counts, the expiry
// of history, and a queue's running and rate limits.
func semanticPaths(t *testing.T, pool *pgxpool.Pool) {
	t.Helper()
	ctx := context.Background()
	var mu sync.Mutex
	done := map[int]bool{}
	running := make(chan int64, 1)
	workers := millrace.NewWorkers()
	millrace.AddWorker(workers, millrace.WorkFunc(func(ctx context.Context, j *millrace.Job[semArgs]) error {
		finish := func(err error) error {
			mu.Lock()
			done[j.Args.N] = true
			mu.Unlock()
			return err
		}
		switch j.Args.Do {
		case "snooze":
			if j.ReadyAt.Equal(j.CreatedAt) {
				return millrace.JobSnooze(10 * time.Millisecond)
			}
		case "cancel":
			return finish(millrace.JobCancel(nil))
		case "discard":
			return finish(millrace.JobDiscard(errors.New("no")))
		case "block":
			running <- j.ID
			<-ctx.Done()
			return finish(ctx.Err())
		case "tx":
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
		}
		return finish(nil)
	}))
	millrace.AddWorker(workers, millrace.WorkFunc(func(ctx context.Context, j *millrace.Job[tickArgs]) error { return nil }))
	c, err := millrace.NewClient(pool, millrace.Config{Workers: workers, Logger: quietLogger(), Name: "semantic",
		Queues: map[string]millrace.QueueConfig{
			// Limits (version 12): every claim of sem reads and writes what
			// the process holds and what it took.
			"sem":                 {MaxWorkers: 4, Limit: &millrace.Limit{Running: 3, Rate: 1000, Per: time.Second}},
			millrace.DefaultQueue: {MaxWorkers: 1}},
		MaintenanceEvery: 50 * time.Millisecond, StarveAfter: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer c.Stop(ctx)
	q := func(prio int) *millrace.InsertOpts { return &millrace.InsertOpts{Queue: "sem", Priority: prio} }
	want := 0
	for i, do := range []string{"", "snooze", "cancel", "discard", "tx", "", "snooze", "tx"} {
		if _, err := c.Insert(ctx, semArgs{N: i, Do: do}, q(i%3)); err != nil {
			t.Fatal(err)
		}
		want++
	}
	// Unique: one inserted, one duplicate.
	u := &millrace.InsertOpts{Queue: "sem", Unique: &millrace.UniqueOpts{ByArgs: true}, RunAt: time.Now().Add(2 * time.Second)}
	first, err := c.Insert(ctx, semArgs{N: 100}, u)
	if err != nil {
		t.Fatal(err)
	}
	if dup, err := c.Insert(ctx, semArgs{N: 100}, u); err != nil || !dup.Duplicate || dup.ID != first.ID {
		t.Fatalf("unique insert: %+v %v", dup, err)
	}
	want++
	// Cancel from outside: scheduled, then running.
	sched, _ := c.Insert(ctx, semArgs{N: 200}, &millrace.InsertOpts{Queue: "sem", RunAt: time.Now().Add(2 * time.Second)})
	millrace.Cancel(ctx, pool, sched.ID)
	if _, err := c.Insert(ctx, semArgs{N: 201, Do: "block"}, q(0)); err != nil {
		t.Fatal(err)
	}
	id := <-running
	millrace.Cancel(ctx, pool, id)
	want++
	// Pause and resume.
	c.PauseQueue(ctx, "sem")
	c.Insert(ctx, semArgs{N: 300}, q(1))
	c.ResumeQueue(ctx, "sem")
	want++
	waitFor(t, "the semantic paths", 30*time.Second, func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(done) >= want
	}, func() string { mu.Lock(); defer mu.Unlock(); return fmt.Sprintf("done %v", done) })
	waitFor(t, "the cancelled scheduled job to finish", 10*time.Second, func() bool {
		j, err := millrace.JobByID(ctx, pool, sched.ID)
		return err == nil && j.State == millrace.JobCancelled
	}, func() string {
		j, err := millrace.JobByID(ctx, pool, sched.ID)
		return fmt.Sprintf("job %d: %+v %v", sched.ID, j, err)
	})
	// Periodic slots (run by the leader, which here is another client):
	// the same slot twice enqueues once.
	for i := 0; i < 2; i++ {
		if _, err := pool.Exec(ctx, "SELECT millrace.periodic_run('dt', '2026-01-01', 'tick', '{}', 'default', 0, 1)"); err != nil {
			t.Fatal(err)
		}
	}
	var discarded int64
	pool.QueryRow(ctx, "SELECT id FROM millrace.history WHERE kind = 'sem' AND state = 'discarded' LIMIT 1").Scan(&discarded)
	if n, r, err := millrace.Retry(ctx, pool, discarded); err != nil || n == 0 {
		t.Fatalf("retry: %v %v", r, err)
	}
	// Tally rounds of history counts, and a count read from them.
	for i := 0; i < 2; i++ {
		if _, err := pool.Exec(ctx, "SELECT millrace.tally('0s')"); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := millrace.QueueCounts(ctx, pool); err != nil {
		t.Fatal(err)
	}
	if _, err := pool.Exec(ctx, "SELECT millrace.set_retention('1 hour', '1 hour'); SELECT millrace.expire_history()"); err != nil {
		t.Fatal(err)
	}
}
