package storage

import (
	"context"
	"testing"
	"time"
)

// TestCompletedJobsShareARow: a flush writes its completed jobs as rows of
// millrace.completed, one per queue and block of 32 ids, with the values
// every job shares kept once; each job is still found by id (final_state,
// job_history, the history view, the tally), and a failed job of the same
// flush keeps its own row of finished, args and error included.
func TestCompletedJobsShareARow(t *testing.T) {
	ctx := context.Background()
	s, pool := newStore(t)
	const n = 70
	for i := 0; i < n; i++ {
		enqueue(t, s, pool, "q")
	}
	failed, err := s.Enqueue(ctx, pool, NewJob{Queue: "q", Kind: "k", Args: []byte(`{"x":1}`), Priority: 1, MaxAttempts: 3}, false)
	if err != nil {
		t.Fatal(err)
	}
	b, err := s.claimBatch(ctx, "q", 1, 1, false, noLimit)
	if err != nil || b == nil || len(b.Jobs) != n+1 {
		t.Fatalf("claim: %v, %d jobs; want %d", err, len(b.Jobs), n+1)
	}
	now := time.Now()
	var acks []Ack
	blocks := map[int64]bool{}
	for i := range b.Jobs {
		j := &b.Jobs[i]
		if j.ID == failed {
			acks = append(acks, Ack{Batch: b, Job: j, State: AckRetried, Err: "boom", RetryAt: now.Add(time.Hour), Started: now, Finished: now})
			continue
		}
		blocks[j.ID/32] = true
		acks = append(acks, Ack{Batch: b, Job: j, State: AckCompleted, Started: now.Add(-time.Millisecond), Finished: now})
	}
	if _, err := s.Flush(ctx, 1, 1, true, acks, []*Batch{b}); err != nil {
		t.Fatal(err)
	}

	var rows, jobs, kinds int
	if err := pool.QueryRow(ctx, `SELECT count(*), coalesce(sum(cardinality(ids)), 0), coalesce(max(cardinality(kind)), 0)
		FROM millrace.completed`).Scan(&rows, &jobs, &kinds); err != nil {
		t.Fatal(err)
	}
	if rows != len(blocks) || jobs != n || kinds != 1 {
		t.Fatalf("completed: %d rows holding %d jobs, kind kept %d times a row; want %d rows (one a block of 32 ids), %d jobs, kind once",
			rows, jobs, kinds, len(blocks), n)
	}
	var finished int
	var args, errText string
	if err := pool.QueryRow(ctx, `SELECT count(*), max(args::text), max(error) FROM millrace.finished`).Scan(&finished, &args, &errText); err != nil {
		t.Fatal(err)
	}
	if finished != 1 || args != `{"x": 1}` || errText != "boom" {
		t.Fatalf("finished: %d rows, args %s, error %q; want the failed attempt alone, with its args and error", finished, args, errText)
	}
	for _, j := range b.Jobs {
		if j.ID == failed {
			continue
		}
		var final, bounded *int16
		var hist, viewed int
		var started, ended time.Time
		if err := pool.QueryRow(ctx, `SELECT millrace.final_state($1), millrace.final_state($1, now() - interval '1 minute'),
			(SELECT count(*) FROM millrace.job_history($1) h WHERE h.state = 'completed' AND h.kind = 'k' AND h.attempt = $2),
			(SELECT count(*) FROM millrace.history h WHERE h.id = $1 AND h.state = 'completed')`, j.ID, j.Attempt+1).Scan(&final, &bounded, &hist, &viewed); err != nil {
			t.Fatal(err)
		}
		if final == nil || *final != 1 || bounded == nil || *bounded != 1 || hist != 1 || viewed != 1 {
			t.Fatalf("job %d: final_state %v (bounded %v), job_history %d, history view %d; want completed, found once each",
				j.ID, final, bounded, hist, viewed)
		}
		if err := pool.QueryRow(ctx, `SELECT started_at, finished_at FROM millrace.job_history($1)`, j.ID).Scan(&started, &ended); err != nil {
			t.Fatal(err)
		}
		if d := ended.Sub(started); d < 500*time.Microsecond || d > 2*time.Millisecond {
			t.Fatalf("job %d ran %v by its history; want its own start and end (1ms apart)", j.ID, d)
		}
	}
	var state *int16
	if err := pool.QueryRow(ctx, `SELECT millrace.final_state($1)`, failed).Scan(&state); err != nil || state != nil {
		t.Fatalf("the failed job's final state: %v, %v; want none (it runs again)", state, err)
	}
	// The tally counts the jobs of the rows, not the rows.
	var counted int64
	if err := pool.QueryRow(ctx, `SELECT coalesce(sum(n), 0) FROM millrace.history_new('1:1:'::pg_snapshot, pg_current_snapshot())
		WHERE state = 1`).Scan(&counted); err != nil || counted != n {
		t.Fatalf("history_new counted %d completed jobs (%v); want %d", counted, err, n)
	}
}
