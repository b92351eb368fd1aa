package storage

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"
)

// fullLiveJobs is millrace.live_jobs as it was before it read only what a
// lane's frontier may leave unclaimed: every job row of the ring, tested
// against the newest tick of its lane. TestLiveJobsMatchesFullScan holds
// the bounded read to it.
const fullLiveJobs = `
    WITH f AS (
        SELECT DISTINCT ON (t.queue, t.priority) t.queue, t.priority, t.prev_snap, t.snap, t.more, t.upto_txid, t.upto_id
        FROM millrace.tick t ORDER BY t.queue, t.priority, t.tick_id DESC),
    o AS (SELECT * FROM millrace.open_batches()),
    running AS (
        SELECT b.id, CASE WHEN o.owner = 0 THEN 'available' ELSE 'running' END AS state
        FROM o CROSS JOIN LATERAL millrace.batch_jobs(o.tick_id) b),
    lastp AS (SELECT p.upto, p.snap FROM millrace.promote p ORDER BY p.round DESC LIMIT 1)
    SELECT DISTINCT ON (j.id) j.id, 'available'
    FROM millrace.job j LEFT JOIN f ON f.queue = j.queue AND f.priority = j.priority
    WHERE (f.snap IS NULL OR NOT pg_visible_in_snapshot(j.txid, f.snap)
           OR (f.more AND NOT pg_visible_in_snapshot(j.txid, f.prev_snap) AND (j.txid, j.id) > (f.upto_txid, f.upto_id)))
      AND NOT EXISTS (SELECT 1 FROM running r WHERE r.id = j.id)
      AND NOT EXISTS (SELECT 1 FROM millrace.cancel c WHERE c.job_id = j.id)
    UNION ALL
    SELECT id, state FROM running
    UNION ALL
    SELECT s.id, 'scheduled'
    FROM millrace.sched s LEFT JOIN lastp ON true
    WHERE NOT (coalesce(pg_visible_in_snapshot(s.txid, lastp.snap), false) AND s.due_at <= lastp.upto)
      AND NOT EXISTS (SELECT 1 FROM millrace.cancel c WHERE c.job_id = s.id)`

// TestLiveJobsMatchesFullScan: live_jobs reads, per lane, only the job
// rows above its frontier snapshot's xmin, yet lists exactly what a scan
// of every row lists, through capped claims (ticks with more to take), a
// job committed late by a transaction open across claims, two lanes and
// two queues, a lane never claimed, and a queue drained.
func TestLiveJobsMatchesFullScan(t *testing.T) {
	s, pool := newStore(t)
	ctx := context.Background()
	owner, err := s.Register(ctx, "p", "h", 1, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	states := func(sql string) []string {
		t.Helper()
		rows, err := pool.Query(ctx, sql)
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		var out []string
		for rows.Next() {
			var id int64
			var st string
			if err := rows.Scan(&id, &st); err != nil {
				t.Fatal(err)
			}
			out = append(out, fmt.Sprintf("%d:%s", id, st))
		}
		slices.Sort(out)
		return out
	}
	check := func(when string) {
		t.Helper()
		got := states("SELECT id, state FROM millrace.live_jobs()")
		want := states(fullLiveJobs)
		if !slices.Equal(got, want) {
			t.Fatalf("%s: live_jobs lists %v; a scan of every row lists %v", when, got, want)
		}
	}
	enqueue := func(queue string, prio int16, n int) {
		t.Helper()
		for range n {
			if _, err := s.Enqueue(ctx, pool, NewJob{Queue: queue, Kind: "k", Args: []byte(`{}`), Priority: prio, MaxAttempts: 3}, false); err != nil {
				t.Fatal(err)
			}
		}
	}
	claim := func(queue string, n int) {
		t.Helper()
		if _, err := s.Claim(ctx, queue, owner, time.Now().UnixNano(), false, Limits{MaxJobs: n, MaxBytes: 1 << 20}); err != nil {
			t.Fatal(err)
		}
	}
	check("empty")
	late, err := pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer late.Rollback(ctx)
	if _, err := s.Enqueue(ctx, late, NewJob{Queue: "a", Kind: "k", Args: []byte(`{}`), Priority: 1, MaxAttempts: 3}, false); err != nil {
		t.Fatal(err)
	}
	enqueue("a", 1, 12)
	enqueue("a", 2, 3)
	enqueue("b", 1, 4)
	enqueue("never", 1, 2)
	check("enqueued, one job uncommitted")
	claim("a", 5)
	check("a claim of 5 of queue a")
	claim("a", 5)
	check("a second claim of 5")
	if err := late.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	check("the late job committed")
	enqueue("a", 1, 3)
	claim("a", 4)
	check("a third claim")
	claim("b", 10)
	check("queue b claimed whole")
	for range 5 {
		claim("a", 10)
	}
	check("queue a drained")
}
