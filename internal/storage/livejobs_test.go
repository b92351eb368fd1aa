package storage

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/millrace/millrace/internal/testkit"
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
		// The counts come from the same keys, without the rows.
		counted := map[string]int64{}
		for _, w := range want {
			counted[w[strings.IndexByte(w, ':')+1:]]++
		}
		var a, r, sc int64
		if err := pool.QueryRow(ctx, `SELECT coalesce(sum(available), 0), coalesce(sum(running), 0), coalesce(sum(scheduled), 0)
			FROM millrace.live_counts()`).Scan(&a, &r, &sc); err != nil {
			t.Fatal(err)
		}
		if a != counted["available"] || r != counted["running"] || sc != counted["scheduled"] {
			t.Fatalf("%s: live_counts counts %d available, %d running, %d scheduled; a scan of every row lists %v", when, a, r, sc, want)
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

// TestLiveCountsReadWhatWaits: the live counts read the job rows that
// wait and run, not the rows a lane's frontier has claimed, even while a
// transaction open since before those rows pins every snapshot's xmin (a
// frontier's xmin then lies below every row of the ring). 2,000 jobs
// claimed and finished and 10 waiting: before, a read of the counts went
// through all 2,010 rows of the lane index from the pinned xmin up, and
// fetched each row's payload.
func TestLiveCountsReadWhatWaits(t *testing.T) {
	ctx := context.Background()
	pool := oneSession(t, nil)
	s := &Store{Pool: pool}
	owner, err := s.Register(ctx, "p", "h", 1, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	pin, err := pgx.Connect(ctx, pool.Config().ConnConfig.ConnString())
	if err != nil {
		t.Fatal(err)
	}
	defer pin.Close(ctx)
	if _, err := pin.Exec(ctx, "BEGIN; SELECT pg_current_xact_id()"); err != nil {
		t.Fatal(err)
	}
	if _, err := pool.Exec(ctx, `SELECT millrace.enqueue('k', '{}', 'q') FROM generate_series(1, 2000)`); err != nil {
		t.Fatal(err)
	}
	for req := int64(1); ; req++ {
		bs, err := s.Claim(ctx, "q", owner, req, false, Limits{MaxJobs: 500, MaxBytes: 1 << 30})
		if err != nil {
			t.Fatal(err)
		}
		if len(bs) == 0 {
			break
		}
		now := time.Now()
		var acks []Ack
		for _, b := range bs {
			for i := range b.Jobs {
				acks = append(acks, Ack{Batch: b, Job: &b.Jobs[i], State: AckCompleted, Started: now, Finished: now})
			}
		}
		if fenced, err := s.Flush(ctx, owner, req, true, acks, bs); err != nil || len(fenced) != 0 {
			t.Fatalf("flush: fenced %v, %v", fenced, err)
		}
	}
	for range 10 {
		enqueue(t, s, pool, "q")
	}
	read := func() int64 {
		t.Helper()
		flushStats(t, pool)
		var n int64
		if err := pool.QueryRow(ctx, `SELECT coalesce(sum(coalesce(idx_tup_fetch, 0) + coalesce(seq_tup_read, 0)), 0)
			FROM pg_stat_user_tables WHERE schemaname = 'millrace' AND relname ~ '^job_[0-9]+$'`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	var available, running int64
	if err := pool.QueryRow(ctx, "SELECT available, running FROM millrace.live_counts() WHERE queue = 'q'").Scan(&available, &running); err != nil {
		t.Fatal(err)
	}
	before := read()
	if err := pool.QueryRow(ctx, "SELECT available, running FROM millrace.live_counts() WHERE queue = 'q'").Scan(&available, &running); err != nil {
		t.Fatal(err)
	}
	if d := read() - before; d > 100 {
		t.Errorf("a read of the live counts read %d job rows; want about the 10 waiting rows", d)
	}
	if available != 10 || running != 0 {
		t.Errorf("live counts: %d available, %d running; want 10 and 0", available, running)
	}
}

// TestReadsRacingAReclaimNeverLie (issue 31.1): a read of the live jobs
// that waits for a reclaim's locks answers from after the reclaim. A job
// that was scheduled, promoted and completed keeps its schedule row until
// the schedule is compacted; only the newest promote round says it left
// the schedule. A reclaim moves that round forward and truncates its old
// slot: a read whose snapshot was taken before the reclaim committed and
// that reads after it sees neither the round nor its copy, and showed the
// finished job as scheduled.
func TestReadsRacingAReclaimNeverLie(t *testing.T) {
	ctx := context.Background()
	s, pool := newStore(t)
	var due time.Time
	if err := pool.QueryRow(ctx, "SELECT now() + interval '20 ms'").Scan(&due); err != nil {
		t.Fatal(err)
	}
	id, err := s.Enqueue(ctx, pool, NewJob{Queue: "q", Kind: "k", Args: []byte(`{}`), Priority: 1, MaxAttempts: 3, RunAt: due}, false)
	if err != nil {
		t.Fatal(err)
	}
	testkit.WaitFor(t, "the scheduled job to be promoted", 10*time.Second, func() bool {
		n, err := s.Promote(ctx, 0, 10000)
		if err != nil {
			t.Fatal(err)
		}
		return n == 1
	})
	b, err := s.claimBatch(ctx, "q", 1, 1, false, noLimit)
	if err != nil || b == nil || len(b.Jobs) != 1 {
		t.Fatalf("claim: %v %v", b, err)
	}
	if _, err := s.Flush(ctx, 1, 1, false, []Ack{{Batch: b, Job: &b.Jobs[0], State: AckCompleted}}, []*Batch{b}); err != nil {
		t.Fatal(err)
	}
	rotate(t, s, 0) // slot 1 is current; slot 0 holds the promote round
	reads := map[string]string{
		"the jobs view":       "SELECT count(*)::text FROM millrace.jobs WHERE id = $1",
		"job_state":           "SELECT coalesce(millrace.job_state($1), 'none')",
		"live_counts":         "SELECT coalesce(sum(scheduled), 0)::text FROM millrace.live_counts() WHERE $1::bigint IS NOT NULL",
		"queue_counts":        "SELECT coalesce(sum(scheduled), 0)::text FROM millrace.queue_counts() WHERE $1::bigint IS NOT NULL",
		"live_job":            "SELECT count(*)::text FROM millrace.live_job($1)",
		"the view, at RR":     "RR SELECT count(*)::text FROM millrace.jobs WHERE id = $1",
		"job_state, at RR":    "RR SELECT coalesce(millrace.job_state($1), 'none')",
		"queue_counts, at RR": "RR SELECT coalesce(sum(scheduled), 0)::text FROM millrace.queue_counts() WHERE $1::bigint IS NOT NULL",
	}
	tx, err := pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx)
	lockSlot(t, tx, 0)
	type answer struct {
		name, got string
		err       error
	}
	answers := make(chan answer, len(reads))
	for name, q := range reads {
		go func() {
			conn, err := pgx.ConnectConfig(ctx, pool.Config().ConnConfig.Copy()) // the pool holds 4
			if err != nil {
				answers <- answer{name, "", err}
				return
			}
			defer conn.Close(ctx)
			var got string
			if rr, ok := strings.CutPrefix(q, "RR "); ok {
				err = pgx.BeginTxFunc(ctx, conn, pgx.TxOptions{IsoLevel: pgx.RepeatableRead}, func(tx pgx.Tx) error {
					return tx.QueryRow(ctx, rr, id).Scan(&got)
				})
			} else {
				err = conn.QueryRow(ctx, q, id).Scan(&got)
			}
			answers <- answer{name, got, err}
		}()
	}
	testkit.WaitFor(t, "every read to wait for the reclaim", 10*time.Second, func() bool {
		var n int
		if err := pool.QueryRow(ctx, "SELECT count(DISTINCT pid) FROM pg_locks WHERE NOT granted").Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n == len(reads)
	})
	var moved int64
	if err := tx.QueryRow(ctx, "SELECT millrace.reclaim_slot(0::smallint, 1::smallint, 1::smallint)").Scan(&moved); err != nil {
		t.Fatal(err)
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	wantOf := func(name string) string {
		if strings.HasPrefix(name, "job_state") {
			return "completed"
		}
		return "0"
	}
	for range reads {
		a := <-answers
		switch {
		case a.err != nil && strings.HasSuffix(a.name, "at RR"):
			// A read at REPEATABLE READ whose snapshot a reclaim overtook
			// may refuse, with a one-line error that says to retry.
			var pe *pgconn.PgError
			if !errors.As(a.err, &pe) || pe.Code != "40001" || strings.Contains(pe.Message, "\n") {
				t.Errorf("%s: %v; want the answer or a serialization failure to retry", a.name, a.err)
			}
		case a.err != nil:
			t.Errorf("%s: %v", a.name, a.err)
		case a.got != wantOf(a.name):
			t.Errorf("%s of job %d (completed) during a reclaim: %s; want %s", a.name, id, a.got, wantOf(a.name))
		}
	}
}
