package storage

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
)

// TestEmptyClaimLooksAtNoJob: a claim of a one-lane queue with no job
// past its newest batch in the call's first snapshot returns nothing by
// a few index probes, without range_jobs (most claims of a queue that
// several processes work are woken by a job another claim took); and a
// job that commits after that batch, in flight when it was taken or
// after it, is still claimed.
func TestEmptyClaimLooksAtNoJob(t *testing.T) {
	ctx := context.Background()
	s, pool := newStore(t)
	owner, err := s.Register(ctx, "t", "h", 1, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	req := int64(0)
	// claim returns the jobs a claim took, and whether it looked at the
	// lane's jobs (range_jobs, counted in its own transaction).
	claim := func() (jobs []int64, looked bool) {
		t.Helper()
		req++
		tx, err := pool.Begin(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer tx.Rollback(ctx)
		// The session's counts of range_jobs's calls, before and after
		// (they are pending until flushed, not reset per transaction).
		calls := func() int64 {
			t.Helper()
			var n int64
			if err := tx.QueryRow(ctx, "SELECT coalesce(pg_stat_get_xact_function_calls('millrace.range_jobs'::regproc), 0)").Scan(&n); err != nil {
				t.Fatal(err)
			}
			return n
		}
		if _, err := tx.Exec(ctx, "SET LOCAL track_functions = 'all'"); err != nil {
			t.Fatal(err)
		}
		before := calls()
		rows, err := tx.Query(ctx, `SELECT id FROM millrace.claim_start(p_queue => 'q', p_owner => $1, p_req => $2,
			p_retry => false, p_max_jobs => 10, p_max_bytes => 1000000, p_starve => '5s', p_start => 10)`, owner, req)
		if err != nil {
			t.Fatal(err)
		}
		for rows.Next() {
			var id int64
			if err := rows.Scan(&id); err != nil {
				t.Fatal(err)
			}
			jobs = append(jobs, id)
		}
		if err := rows.Err(); err != nil {
			t.Fatal(err)
		}
		looked = calls() > before
		if err := tx.Commit(ctx); err != nil {
			t.Fatal(err)
		}
		return jobs, looked
	}
	want := func(what string, jobs []int64, looked bool, wantJobs []int64, wantLooked bool) {
		t.Helper()
		if len(jobs) != len(wantJobs) || looked != wantLooked {
			t.Fatalf("%s: claimed %v, looked at the lane %v; want %v, %v", what, jobs, looked, wantJobs, wantLooked)
		}
		for i := range jobs {
			if jobs[i] != wantJobs[i] {
				t.Fatalf("%s: claimed %v, want %v", what, jobs, wantJobs)
			}
		}
	}

	a := enqueue(t, s, pool, "q")
	jobs, looked := claim()
	want("a job waiting", jobs, looked, []int64{a}, true)
	jobs, looked = claim()
	want("nothing since the batch", jobs, looked, nil, false)

	// Transactions the batch could not see commit, none with a job of
	// the lane: a few index probes say so.
	burn(t, pool, 1)
	jobs, looked = claim()
	want("a transaction since the batch", jobs, looked, nil, false)

	// A job in flight when a batch is taken commits after it.
	tx, err := pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx)
	late := enqueue(t, s, tx, "q")
	b := enqueue(t, s, pool, "q")
	jobs, looked = claim()
	want("a job beside one in flight", jobs, looked, []int64{b}, true)
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	jobs, looked = claim()
	want("the job that was in flight at the batch", jobs, looked, []int64{late}, true)
	jobs, looked = claim()
	want("nothing since the batch", jobs, looked, nil, false)

	// A job among many transactions since the batch.
	burn(t, pool, 100)
	c := enqueue(t, s, pool, "q")
	burn(t, pool, 100)
	jobs, looked = claim()
	want("a job among 200 transactions", jobs, looked, []int64{c}, true)
	burn(t, pool, 100)
	jobs, looked = claim()
	want("nothing after 100 transactions", jobs, looked, nil, false)
}

// burn commits n transactions that each take an xid and write nothing.
func burn(t *testing.T, pool *pgxpool.Pool, n int) {
	t.Helper()
	for range n {
		if _, err := pool.Exec(context.Background(), "SELECT pg_current_xact_id()"); err != nil {
			t.Fatal(err)
		}
	}
}

// TestClaimSeenNamesWhoTookTheBatch: a claim that returns nothing by its
// short cut says which process took the batch that covers the queue; a
// claim that looked at the lane, or took jobs, names none.
func TestClaimSeenNamesWhoTookTheBatch(t *testing.T) {
	ctx := context.Background()
	s, pool := newStore(t)
	a, err := s.Register(ctx, "a", "h", 1, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	b, err := s.Register(ctx, "b", "h", 2, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	lim := Limits{MaxJobs: 10, MaxBytes: 1 << 20, Start: 10}
	claim := func(owner int32, req int64) (int, int32) {
		t.Helper()
		bs, seen, err := s.ClaimSeen(ctx, "q", owner, req, false, lim)
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for _, x := range bs {
			n += len(x.Jobs)
		}
		return n, seen.TakenBy
	}
	enqueue(t, s, pool, "q")
	if n, by := claim(a, 1); n != 1 || by != 0 {
		t.Fatalf("a's claim of a job: %d jobs, taken by %d; want 1, 0", n, by)
	}
	if n, by := claim(b, 1); n != 0 || by != a {
		t.Fatalf("b's claim after a's: %d jobs, taken by %d; want 0, %d", n, by, a)
	}
	if n, by := claim(a, 2); n != 0 || by != a {
		t.Fatalf("a's claim after its own: %d jobs, taken by %d; want 0, %d", n, by, a)
	}
	// A batch cut at its cap: the next claim looks at the lane.
	lim.MaxJobs, lim.Start = 1, 1
	enqueue(t, s, pool, "q")
	if n, by := claim(a, 3); n != 1 || by != 0 {
		t.Fatalf("a's capped claim: %d jobs, taken by %d; want 1, 0", n, by)
	}
	if n, by := claim(b, 2); n != 0 || by != 0 {
		t.Fatalf("b's claim after a capped batch: %d jobs, taken by %d; want 0, 0 (it looked)", n, by)
	}
}

// TestPeekAgreesWithTheClaim: claim_peek repeats the claim's short cut
// outside its lock, so the two must agree. Before each claim a peek: when
// it names a process, the claim returns nothing and names the same one;
// when the claim returns jobs, or returns nothing without naming one, the
// peek said 0. The states: a job waiting, the newest batch holding
// everything (another's and one's own), a batch cut at its cap, a job in
// flight when the newest batch was taken, a second lane, and a released
// batch waiting to be adopted.
func TestPeekAgreesWithTheClaim(t *testing.T) {
	ctx := context.Background()
	s, pool := newStore(t)
	a, err := s.Register(ctx, "a", "h", 1, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	b, err := s.Register(ctx, "b", "h", 2, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	lim := Limits{MaxJobs: 10, MaxBytes: 1 << 20, Start: 10}
	req := int64(0)
	claim := func(what string, owner int32, wantJobs bool) {
		t.Helper()
		peek, err := s.Peek(ctx, "q")
		if err != nil {
			t.Fatal(err)
		}
		req++
		bs, seen, err := s.ClaimSeen(ctx, "q", owner, req, false, lim)
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for _, x := range bs {
			n += len(x.Jobs)
		}
		if (n > 0) != wantJobs {
			t.Fatalf("%s: the claim took %d jobs; want jobs: %v", what, n, wantJobs)
		}
		if n > 0 && peek != 0 || n == 0 && peek != seen.TakenBy {
			t.Fatalf("%s: the peek said %d, the claim took %d jobs and named %d", what, peek, n, seen.TakenBy)
		}
	}
	enqueue(t, s, pool, "q")
	claim("a job waiting", a, true)
	claim("another's batch holds everything", b, false)
	claim("one's own batch holds everything", a, false)

	lim.MaxJobs, lim.Start = 1, 1
	enqueue(t, s, pool, "q")
	enqueue(t, s, pool, "q")
	claim("a job waiting", a, true)
	claim("a batch cut at its cap", b, true)
	claim("everything taken", a, false)
	lim.MaxJobs, lim.Start = 10, 10

	// A job whose transaction is in flight when the newest batch is taken.
	tx, err := pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	enqueue(t, s, tx, "q")
	enqueue(t, s, pool, "q")
	claim("a job committed while another is in flight", b, true)
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	claim("the job in flight at the newest batch, committed", a, true)
	claim("everything taken", b, false)

	// At a stricter default isolation the peek answers 0 (its statements
	// would read with a snapshot taken before their locks): a claim decides.
	if by, err := s.Peek(ctx, "q"); err != nil || by != a {
		t.Fatalf("peek at READ COMMITTED after a's batch: %d, %v; want %d", by, err, a)
	}
	cfg := pool.Config().Copy()
	cfg.ConnConfig.RuntimeParams["default_transaction_isolation"] = "repeatable read"
	rr, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer rr.Close()
	if by, err := (&Store{Pool: rr}).Peek(ctx, "q"); err != nil || by != 0 {
		t.Fatalf("peek at a REPEATABLE READ default: %d, %v; want 0", by, err)
	}

	// A batch released by its holder waits for a claim to adopt it (in a queue of
	// one lane, where nothing else would make the peek answer 0).
	enqueue(t, s, pool, "q")
	claim("a job waiting", b, true)
	if n, err := s.Release(ctx, b); err != nil || n == 0 {
		t.Fatalf("release: %d, %v", n, err)
	}
	claim("a released batch", a, true)

	// A second lane: the claim looks.
	if _, err := s.Enqueue(ctx, pool, NewJob{Queue: "q", Kind: "k", Args: []byte(`{}`), Priority: 2, MaxAttempts: 3}, false); err != nil {
		t.Fatal(err)
	}
	claim("a job in a second lane", a, true)
}
