package storage

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
)

// TestEmptyClaimLooksAtNoJob: a claim of a one-lane queue whose newest
// batch covers every transaction the call can know of returns nothing
// without looking at the job table (most claims of a queue that several
// processes work are woken by a job another claim took); and a job that
// commits after that batch, in flight when it was taken or after it, is
// still claimed.
func TestEmptyClaimLooksAtNoJob(t *testing.T) {
	ctx := context.Background()
	s, pool := newStore(t)
	owner, err := s.Register(ctx, "t", "h", 1, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	req := int64(0)
	others := false // set by claim
	// claim returns the jobs a claim took, and whether it looked at the
	// lane's jobs (lane_take, counted in its own transaction).
	claim := func() (jobs []int64, looked bool) {
		t.Helper()
		req++
		tx, err := pool.Begin(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer tx.Rollback(ctx)
		// The session's counts of lane_take's calls, before and after
		// (they are pending until flushed, not reset per transaction).
		calls := func() int64 {
			t.Helper()
			var n int64
			if err := tx.QueryRow(ctx, "SELECT coalesce(pg_stat_get_xact_function_calls('millrace.lane_take'::regproc), 0)").Scan(&n); err != nil {
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
		// Whether a transaction other than the newest batch's own has
		// taken an xid since that batch was taken, by now (after the
		// claim): an autoanalyze may, and then the claim looks.
		if err := tx.QueryRow(ctx, `SELECT pg_snapshot_xmax(pg_current_snapshot())::text::bigint
			- coalesce((SELECT pg_snapshot_xmax(t.snap)::text::bigint FROM millrace.tick t WHERE t.queue = 'q'
			            ORDER BY t.tick_id DESC LIMIT 1), 0) > 1`).Scan(&others); err != nil {
			t.Fatal(err)
		}
		if err := tx.Commit(ctx); err != nil {
			t.Fatal(err)
		}
		return jobs, looked
	}
	want := func(what string, jobs []int64, looked bool, wantJobs []int64, wantLooked bool) {
		t.Helper()
		if !wantLooked && looked && others {
			t.Logf("%s: another transaction took an xid since the batch; the claim looked", what)
			wantLooked = true
		}
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

	// A transaction the batch could not see commits (it wrote no job):
	// the claim cannot tell, and looks, until a batch covers it.
	burn(t, pool, 1)
	for range 2 {
		jobs, looked = claim()
		want("an unknown transaction since the batch", jobs, looked, nil, true)
	}

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

	// Many transactions since the batch: the claim looks rather than
	// read them one by one.
	burn(t, pool, 100)
	c := enqueue(t, s, pool, "q")
	jobs, looked = claim()
	want("a job after 100 transactions", jobs, looked, []int64{c}, true)
	burn(t, pool, 100)
	jobs, looked = claim()
	want("nothing after 100 transactions", jobs, looked, nil, true)
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
