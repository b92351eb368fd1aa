package storage

import (
	"context"
	"github.com/millrace/millrace/internal/testkit"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// TestLeaderTermFencing: a leader term is a lease. While it runs, nobody
// else takes over; once it runs out, another process does, and from then
// on every maintenance step called with the old term is refused (MR001,
// IsFenced) and changes nothing, and the old term cannot be renewed. A
// resigned term is taken over at once.
func TestLeaderTermFencing(t *testing.T) {
	ctx := context.Background()
	s, pool := newStore(t)
	p1, err := s.Register(ctx, "p1", "h", 1, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	p2, _ := s.Register(ctx, "p2", "h", 2, time.Hour)
	t1, err := s.Lead(ctx, p1, 0, time.Second)
	if err != nil || t1 == 0 {
		t.Fatalf("first takeover: %d %v", t1, err)
	}
	if got, err := s.Lead(ctx, p2, 0, time.Second); err != nil || got != 0 {
		t.Fatalf("a second process took over a running term: %d %v", got, err)
	}
	if got, err := s.Lead(ctx, p2, t1, time.Second); err != nil || got != 0 {
		t.Fatalf("a process that does not hold the term renewed it: %d %v", got, err)
	}
	steps := func(term int64) map[string]error {
		out := map[string]error{}
		_, out["rotate"] = s.Rotate(ctx, term, time.Hour, 0)
		_, out["promote"] = s.Promote(ctx, term, 10000)
		_, out["rescue"] = s.Rescue(ctx, term, time.Hour)
		_, _, out["tally"] = s.Tally(ctx, term, 0)
		_, out["expire_history"] = s.ExpireHistory(ctx, term)
		_, _, out["periodic_run"] = s.PeriodicRun(ctx, term, "p", time.Unix(1e9, 0), NewJob{Queue: "q", Kind: "k", Args: []byte(`{}`), MaxAttempts: 1})
		return out
	}
	for name, err := range steps(t1) {
		if err != nil {
			t.Fatalf("%s under the running term: %v", name, err)
		}
	}
	// The term runs out (no renewal); p2 takes over.
	var t2 int64
	testkit.WaitFor(t, "the term to run out and p2 to take over", 10*time.Second, func() bool {
		if t2, err = s.Lead(ctx, p2, 0, time.Hour); err != nil {
			t.Fatal(err)
		}
		return t2 != 0
	})
	if t2 <= t1 {
		t.Fatalf("new term %d is not above the old one %d", t2, t1)
	}
	var periodic int
	pool.QueryRow(ctx, "SELECT count(*) FROM millrace.periodic").Scan(&periodic)
	for name, err := range steps(t1) {
		if !IsFenced(err) || !strings.Contains(err.Error(), "no longer leads") {
			t.Errorf("%s under the old term: %v; want it refused (fenced)", name, err)
		}
	}
	var after int
	pool.QueryRow(ctx, "SELECT count(*) FROM millrace.periodic").Scan(&after)
	if after != periodic {
		t.Errorf("the old leader's refused periodic_run enqueued a slot")
	}
	if got, err := s.Lead(ctx, p1, t1, time.Hour); err != nil || got != 0 {
		t.Fatalf("the old leader renewed its term after another took over: %d %v", got, err)
	}
	for name, err := range steps(t2) {
		if err != nil {
			t.Errorf("%s under the new term: %v", name, err)
		}
	}
	// An operator's call (no term) is not fenced.
	for name, err := range steps(0) {
		if err != nil {
			t.Errorf("%s without a term: %v", name, err)
		}
	}
	// A resigned term is taken over at once.
	if err := s.Resign(ctx, p2, t2); err != nil {
		t.Fatal(err)
	}
	if t3, err := s.Lead(ctx, p1, 0, time.Hour); err != nil || t3 <= t2 {
		t.Fatalf("takeover after a resignation: %d %v", t3, err)
	}
}

// TestProcessLease: a process is alive while it renews its lease; once the
// lease ran out a heartbeat is refused (the process must register again),
// a dead process cannot take a leader term, and rescue forgets it.
func TestProcessLease(t *testing.T) {
	ctx := context.Background()
	s, pool := newStore(t)
	p, err := s.Register(ctx, "p", "h", 1, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if ok, err := s.Beat(ctx, p, time.Second); err != nil || !ok {
		t.Fatalf("heartbeat of a live process: %v %v", ok, err)
	}
	waitDead(t, pool, p)
	if ok, err := s.Beat(ctx, p, time.Hour); err != nil || ok {
		t.Fatalf("heartbeat after the lease ran out: %v %v; want refused", ok, err)
	}
	if term, err := s.Lead(ctx, p, 0, time.Hour); err != nil || term != 0 {
		t.Fatalf("a dead process took a leader term: %d %v", term, err)
	}
	if _, err := s.Rescue(ctx, 0, time.Hour); err != nil {
		t.Fatal(err)
	}
	var n int
	pool.QueryRow(ctx, "SELECT count(*) FROM millrace.process").Scan(&n)
	if n != 0 {
		t.Fatalf("%d processes registered after rescue; want the dead one forgotten", n)
	}
	if _, err := s.Register(ctx, "p", "h", 1, 500*time.Millisecond); err == nil {
		t.Fatal("a lease under a second was accepted")
	}
}

// TestRescueChargesStartedJobs: when a dead holder's batch is released,
// the jobs it had started and not finished use an attempt (retried, or
// discarded after their last, with an error that says why); the job it
// had not started is released as before and runs with its attempt
// uncounted; a start mark for a released batch is refused.
func TestRescueChargesStartedJobs(t *testing.T) {
	ctx := context.Background()
	s, pool := newStore(t)
	var ids []int64
	for _, max := range []int{1, 3, 3} {
		id, err := s.Enqueue(ctx, pool, NewJob{Queue: "q", Kind: "k", Args: []byte(`{}`), Priority: 1, MaxAttempts: max}, false)
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	p, _ := s.Register(ctx, "p", "h", 1, time.Second)
	b, err := s.claimBatch(ctx, "q", p, 1, false, noLimit)
	if err != nil || b == nil || len(b.Jobs) != 3 {
		t.Fatalf("claim: %v %+v", err, b)
	}
	// Jobs 1 and 2 start; job 3 waits for a worker when the process dies.
	fenced, err := s.MarkStarted(ctx, p, []Start{{Batch: b, Job: &b.Jobs[0]}, {Batch: b, Job: &b.Jobs[1]}})
	if err != nil || len(fenced) != 0 {
		t.Fatalf("start marks: %v, fenced %v", err, fenced)
	}
	waitDead(t, pool, p)
	rel, err := s.Rescue(ctx, 0, time.Hour)
	if err != nil || len(rel) != 1 || rel[0].Reason != "dead" || rel[0].Charged != 2 {
		t.Fatalf("rescue: %v %+v; want one batch released, 2 jobs charged", err, rel)
	}
	if fenced, err := s.MarkStarted(ctx, p, []Start{{Batch: b, Job: &b.Jobs[2]}}); err != nil || len(fenced) != 1 || fenced[0] != b.TickID {
		t.Fatalf("start mark for a released batch: %v, fenced %v; want it refused", err, fenced)
	}
	for i, want := range []struct{ state, err string }{
		{"discarded", "millrace: the process died while running the job (attempt 1 of 1)"},
		{"failed", "millrace: the process died while running the job (attempt 1 of 3)"},
	} {
		var state, e string
		if err := pool.QueryRow(ctx, "SELECT state, error FROM millrace.history WHERE id = $1", ids[i]).Scan(&state, &e); err != nil {
			t.Fatalf("job %d has no history: %v", ids[i], err)
		}
		if state != want.state || e != want.err {
			t.Errorf("job %d: %s %q; want %s %q", ids[i], state, e, want.state, want.err)
		}
	}
	var attempt, sched int
	pool.QueryRow(ctx, "SELECT count(*), max(attempt) FROM millrace.sched WHERE id = $1", ids[1]).Scan(&sched, &attempt)
	if sched != 1 || attempt != 1 {
		t.Errorf("job %d: %d schedule rows, attempt %d; want its retry scheduled with one attempt used", ids[1], sched, attempt)
	}
	var hist int
	pool.QueryRow(ctx, "SELECT count(*) FROM millrace.history WHERE id = $1", ids[2]).Scan(&hist)
	if hist != 0 {
		t.Errorf("the job that had not started has %d history rows; want none", hist)
	}
	adopted, err := s.claimBatch(ctx, "q", 9, 1, false, noLimit)
	if err != nil || adopted == nil || len(adopted.Jobs) != 1 || adopted.Jobs[0].ID != ids[2] || adopted.Jobs[0].Attempt != 0 {
		t.Fatalf("adoption: %v %+v; want only job %d, no attempt used", err, adopted, ids[2])
	}
}

// TestLeaseCallsSurviveALostConnection: the pool's only connection is
// ended by the server while idle (as idle_session_timeout or a pooler's
// restart would) just before each lease call. Each call is a protocol
// transaction sent again on a lost connection: it succeeds on a new one,
// instead of costing the process a heartbeat or the leader a renewal.
func TestLeaseCallsSurviveALostConnection(t *testing.T) {
	ctx := context.Background()
	_, admin := newStore(t)
	cfg := admin.Config().Copy()
	cfg.MaxConns = 1
	one, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer one.Close()
	s := &Store{Pool: one}
	// cut ends the backend of the pool's connection and waits until it
	// is gone; the pool does not know yet.
	cut := func() {
		t.Helper()
		var pid int32
		if err := one.QueryRow(ctx, "SELECT pg_backend_pid()").Scan(&pid); err != nil {
			t.Fatal(err)
		}
		var ended bool
		if err := admin.QueryRow(ctx, "SELECT pg_terminate_backend($1, 5000)", pid).Scan(&ended); err != nil || !ended {
			t.Fatalf("ending backend %d: %v %v", pid, ended, err)
		}
	}
	cut()
	p, err := s.Register(ctx, "p", "h", 1, time.Hour)
	if err != nil {
		t.Fatalf("register after a lost connection: %v", err)
	}
	cut()
	if ok, err := s.Beat(ctx, p, time.Hour); err != nil || !ok {
		t.Fatalf("heartbeat after a lost connection: %v %v", ok, err)
	}
	term, err := s.Lead(ctx, p, 0, time.Hour)
	if err != nil || term == 0 {
		t.Fatalf("takeover: %d %v", term, err)
	}
	cut()
	if got, err := s.Lead(ctx, p, term, time.Hour); err != nil || got != term {
		t.Fatalf("renewal after a lost connection: %d %v", got, err)
	}
	cut()
	if err := s.Resign(ctx, p, term); err != nil {
		t.Fatalf("resignation after a lost connection: %v", err)
	}
	var until, now time.Time
	admin.QueryRow(ctx, "SELECT until, clock_timestamp() FROM millrace.leader ORDER BY id DESC LIMIT 1").Scan(&until, &now)
	if until.After(now) {
		t.Errorf("the term still runs after the resignation")
	}
}

// TestStuckReleaseChargesStartedJobs (issue 31.5): a batch released
// because its lease is older than StuckAfter, while its holder still
// counts as alive, charges the jobs it had started: a job that kills its
// process, whose supervisor restarts it before the dead one's lease runs
// out, with StuckAfter shorter than the lease, ran forever at attempt 1.
func TestStuckReleaseChargesStartedJobs(t *testing.T) {
	ctx := context.Background()
	s, pool := newStore(t)
	id, err := s.Enqueue(ctx, pool, NewJob{Queue: "q", Kind: "k", Args: []byte(`{}`), Priority: 1, MaxAttempts: 2}, false)
	if err != nil {
		t.Fatal(err)
	}
	for attempt := 1; attempt <= 2; attempt++ {
		p, err := s.Register(ctx, "crashes", "h", attempt, time.Hour) // alive all along
		if err != nil {
			t.Fatal(err)
		}
		if attempt == 2 {
			// The retry's backoff (2 s), cut short.
			if _, err := pool.Exec(ctx, "UPDATE millrace.sched SET due_at = now() WHERE id = $1", id); err != nil {
				t.Fatal(err)
			}
			if n, err := s.Promote(ctx, 0, 10000); err != nil || n != 1 {
				t.Fatalf("promote of the retry: %d %v", n, err)
			}
		}
		b, err := s.claimBatch(ctx, "q", p, 1, false, noLimit)
		if err != nil || b == nil || len(b.Jobs) != 1 || b.Jobs[0].Attempt != attempt-1 {
			t.Fatalf("claim of attempt %d: %+v %v", attempt, b, err)
		}
		if fenced, err := s.MarkStarted(ctx, p, []Start{{Batch: b, Job: &b.Jobs[0]}}); err != nil || len(fenced) != 0 {
			t.Fatalf("start mark: %v %v", fenced, err)
		}
		rel, err := s.Rescue(ctx, 0, time.Nanosecond)
		if err != nil || len(rel) != 1 || rel[0].Reason != "stuck" {
			t.Fatalf("rescue: %+v %v", rel, err)
		}
		if rel[0].Charged != 1 {
			t.Fatalf("attempt %d: a stuck batch released with %d running job(s) charged; want 1", attempt, rel[0].Charged)
		}
	}
	var state string
	if err := pool.QueryRow(ctx, "SELECT millrace.job_state($1)", id).Scan(&state); err != nil || state != "discarded" {
		t.Fatalf("after its 2 attempts were given up: %q %v; want discarded", state, err)
	}
	if b, err := s.claimBatch(ctx, "q", 9, 1, false, noLimit); err != nil || b != nil {
		t.Fatalf("the discarded job was claimed again: %+v %v", b, err)
	}
}

// TestRescueNeverWaitsOnAnOpenCompleteTx (issue 31.6): a process claims,
// opens a transaction that completes a job (CompleteTx, which holds the
// batch's fence lock shared to its end) and stops, its lease running out.
// The leader's rescue waited for that lock, and every maintenance step
// after it (rotation too) with it. It now says the batch is held and goes
// on; once the transaction commits, the batch is released at the next
// round and the completed job is not run again.
func TestRescueNeverWaitsOnAnOpenCompleteTx(t *testing.T) {
	ctx := context.Background()
	s, pool := newStore(t)
	for i := 0; i < 2; i++ {
		enqueue(t, s, pool, "q")
	}
	p, err := s.Register(ctx, "stops", "h", 1, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	b, err := s.claimBatch(ctx, "q", p, 1, false, noLimit)
	if err != nil || b == nil || len(b.Jobs) != 2 {
		t.Fatalf("claim: %+v %v", b, err)
	}
	tx, err := pool.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.ReadCommitted})
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx)
	if err := Complete(ctx, tx, p, b, &b.Jobs[0], time.Now()); err != nil {
		t.Fatal(err)
	}
	waitDead(t, pool, p)
	rctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	rel, err := s.Rescue(rctx, 0, time.Hour)
	if err != nil {
		t.Fatalf("rescue with a CompleteTx open: %v (it waited for the transaction)", err)
	}
	if len(rel) != 1 || rel[0].Reason != "held" || rel[0].TickID != b.TickID {
		t.Fatalf("rescue with a CompleteTx open: %+v; want the batch said held", rel)
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	rel, err = s.Rescue(ctx, 0, time.Hour)
	if err != nil || len(rel) != 1 || rel[0].Reason != "dead" {
		t.Fatalf("rescue after the commit: %+v %v", rel, err)
	}
	got := claimAll(t, s, "q", 7, noLimit)
	if len(got) != 1 || got[b.Jobs[1].ID] != 1 {
		t.Fatalf("after the release: %v; want only job %d, not the completed %d", got, b.Jobs[1].ID, b.Jobs[0].ID)
	}
}

// TestAClaimThatStartsEveryJobMarksItsTick (issue 33): a claim whose
// every job goes to an idle worker (Start at least MaxJobs) marks its new
// batch started as a whole on the tick and writes no start row. A rescue
// of the batch charges an attempt to each of its jobs but the one
// cancelled before the claim (handed over cancelled, never run). A claim
// with fewer idle workers than jobs writes start rows for those it starts,
// and a rescue charges only them.
func TestAClaimThatStartsEveryJobMarksItsTick(t *testing.T) {
	ctx := context.Background()
	s, pool := newStore(t)
	for _, c := range []struct {
		name             string
		start            int
		rows, charged    int
		tickStarted      bool
		cancelBeforeTake bool
	}{
		{name: "every job to an idle worker", start: 10, rows: 0, charged: 2, tickStarted: true, cancelBeforeTake: true},
		{name: "one idle worker", start: 1, rows: 1, charged: 1},
	} {
		t.Run(c.name, func(t *testing.T) {
			queue := "q" + strconv.Itoa(c.start)
			var ids []int64
			for i := 0; i < 3; i++ {
				ids = append(ids, enqueue(t, s, pool, queue))
			}
			if c.cancelBeforeTake {
				var res string
				if err := pool.QueryRow(ctx, "SELECT millrace.cancel($1)", ids[2]).Scan(&res); err != nil || res != "cancelled" {
					t.Fatalf("cancel: %q %v", res, err)
				}
			}
			p, err := s.Register(ctx, "claims", "h", c.start, time.Hour)
			if err != nil {
				t.Fatal(err)
			}
			bs, err := s.Claim(ctx, queue, p, 1, false, Limits{MaxJobs: 10, MaxBytes: 1 << 20, Starve: time.Hour, Start: c.start})
			if err != nil || len(bs) != 1 || len(bs[0].Jobs) != 3 {
				t.Fatalf("claim: %+v %v", bs, err)
			}
			tick := bs[0].TickID
			var rows int
			var started bool
			if err := pool.QueryRow(ctx, `SELECT (SELECT count(*) FROM millrace.start WHERE tick_id = $1),
				(SELECT t.started FROM millrace.tick t WHERE t.tick_id = $1)`, tick).Scan(&rows, &started); err != nil {
				t.Fatal(err)
			}
			if rows != c.rows || started != c.tickStarted {
				t.Fatalf("start rows %d, tick started %v; want %d, %v", rows, started, c.rows, c.tickStarted)
			}
			rel, err := s.Rescue(ctx, 0, time.Nanosecond)
			if err != nil || len(rel) != 1 || rel[0].TickID != tick {
				t.Fatalf("rescue: %+v %v", rel, err)
			}
			if rel[0].Charged != c.charged {
				t.Fatalf("the rescue charged %d job(s) an attempt; want %d", rel[0].Charged, c.charged)
			}
		})
	}
}

// TestAClaimOfSeveralLanesMarksEachTick: in a queue of several lanes
// (priorities), a claim whose every job goes to an idle worker marks
// each lane's new batch started on its tick, with no start row, as the
// one-lane claim does; with one idle worker, no tick is marked and the
// job that starts gets a start row.
func TestAClaimOfSeveralLanesMarksEachTick(t *testing.T) {
	ctx := context.Background()
	s, pool := newStore(t)
	p, err := s.Register(ctx, "claims", "h", 1, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		start   int
		started bool
		rows    int
	}{{10, true, 0}, {1, false, 1}} {
		queue := "lanes" + strconv.Itoa(c.start)
		for _, prio := range []int16{1, 2} {
			if _, err := s.Enqueue(ctx, pool, NewJob{Queue: queue, Kind: "k", Args: []byte(`{}`), Priority: prio, MaxAttempts: 3}, false); err != nil {
				t.Fatal(err)
			}
		}
		bs, err := s.Claim(ctx, queue, p, int64(c.start), false, Limits{MaxJobs: 10, MaxBytes: 1 << 20, Starve: time.Hour, Start: c.start})
		if err != nil || len(bs) != 2 {
			t.Fatalf("start %d: claim %+v %v; want a batch of each lane", c.start, bs, err)
		}
		rows := 0
		for _, b := range bs {
			var n int
			var started bool
			if err := pool.QueryRow(ctx, `SELECT (SELECT count(*) FROM millrace.start WHERE tick_id = $1),
				(SELECT t.started FROM millrace.tick t WHERE t.tick_id = $1)`, b.TickID).Scan(&n, &started); err != nil {
				t.Fatal(err)
			}
			if started != c.started {
				t.Fatalf("start %d: lane %d's tick started %v; want %v", c.start, b.Jobs[0].Priority, started, c.started)
			}
			rows += n
		}
		if rows != c.rows {
			t.Fatalf("start %d: %d start rows; want %d", c.start, rows, c.rows)
		}
	}
}
