package storage

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/millrace/millrace/internal/testkit"
)

func TestMain(m *testing.M) { testkit.Main(m) }

// newStore makes a migrated database and a Store on it.
func newStore(t *testing.T) (*Store, *pgxpool.Pool) { return newStoreB(t) }

// newStoreB is newStore for tests and benchmarks.
func newStoreB(t testing.TB) (*Store, *pgxpool.Pool) {
	t.Helper()
	pool, err := pgxpool.New(context.Background(), testkit.DBURL(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	return &Store{Pool: pool}, pool
}

var noLimit = Limits{MaxJobs: 1 << 30, MaxBytes: 1 << 40}

func enqueue(t *testing.T, s *Store, q Querier, queue string) int64 {
	t.Helper()
	id, err := s.Enqueue(context.Background(), q, NewJob{Queue: queue, Kind: "k", Args: []byte(`{}`), Priority: 1, MaxAttempts: 3}, false)
	if err != nil {
		t.Fatal(err)
	}
	return id
}

// claimAll claims until a claim returns nothing and returns every job id.
func claimAll(t *testing.T, s *Store, queue string, owner int32, lim Limits) map[int64]int {
	t.Helper()
	got := map[int64]int{}
	for req := int64(1); ; req++ {
		b, err := s.claimBatch(context.Background(), queue, owner, req, false, lim)
		if err != nil {
			t.Fatal(err)
		}
		if b == nil {
			return got
		}
		for _, j := range b.Jobs {
			got[j.ID]++
		}
	}
}

// lockSlot holds ACCESS EXCLUSIVE on every partition of slot in tx, as a
// reclaim does.
func lockSlot(t *testing.T, tx pgx.Tx, slot int) {
	t.Helper()
	if _, err := tx.Exec(context.Background(), "DO $$ BEGIN EXECUTE 'LOCK TABLE ' || array_to_string(millrace.slot_tables("+
		fmt.Sprint(slot)+"), ', ') || ' IN ACCESS EXCLUSIVE MODE'; END $$"); err != nil {
		t.Fatal(err)
	}
}

// waitBlocked waits until some backend waits for a lock.
func waitBlocked(t *testing.T, pool *pgxpool.Pool) {
	t.Helper()
	testkit.WaitFor(t, "a backend to wait for a lock", 10*time.Second, func() bool {
		var waiting bool
		if err := pool.QueryRow(context.Background(), "SELECT EXISTS (SELECT 1 FROM pg_locks WHERE NOT granted)").Scan(&waiting); err != nil {
			t.Fatal(err)
		}
		return waiting
	})
}

// waitDead waits until process p's lease has run out.
func waitDead(t *testing.T, pool *pgxpool.Pool, p int32) {
	t.Helper()
	testkit.WaitFor(t, fmt.Sprintf("process %d to be dead", p), 10*time.Second, func() bool {
		var alive bool
		if err := pool.QueryRow(context.Background(), "SELECT millrace.process_alive($1)", p).Scan(&alive); err != nil {
			t.Fatal(err)
		}
		return !alive
	})
}

func rotate(t *testing.T, s *Store, after time.Duration) []RingAction {
	t.Helper()
	a, err := s.Rotate(context.Background(), 0, after, 0)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// A claim that waits for a slot being reclaimed must find the jobs the
// reclaim moved into the current slot: the claim's statements take their
// snapshots after their locks, and moved rows keep their txid.
func TestClaimRacingReclaimLosesNoJob(t *testing.T) {
	ctx := context.Background()
	s, pool := newStore(t)
	enqueue(t, s, pool, "q")
	if got := claimAll(t, s, "q", 1, noLimit); len(got) != 1 {
		t.Fatalf("first claim: %v", got)
	}
	late := enqueue(t, s, pool, "q") // in slot 0, not yet claimed
	rotate(t, s, 0)                  // slot 1 is current
	tx, err := pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx)
	lockSlot(t, tx, 0)
	type result struct {
		b   *Batch
		err error
	}
	claimed := make(chan result, 1)
	go func() {
		b, err := s.claimBatch(ctx, "q", 1, 100, false, noLimit)
		claimed <- result{b, err}
	}()
	waitBlocked(t, pool)
	var moved int64
	if err := tx.QueryRow(ctx, "SELECT millrace.reclaim_slot(0::smallint, 1::smallint, 1::smallint)").Scan(&moved); err != nil {
		t.Fatal(err)
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	r := <-claimed
	if r.err != nil {
		t.Fatal(r.err)
	}
	got := claimAll(t, s, "q", 1, noLimit)
	if r.b != nil {
		for _, j := range r.b.Jobs {
			got[j.ID]++
		}
	}
	if got[late] != 1 {
		t.Fatalf("job %d, moved by a reclaim during the claim, claimed %d times; want 1", late, got[late])
	}
}

// TestBatchCapSharesABulkInsert: one transaction of 2,500 jobs is claimed in
// capped batches by several owners, each job exactly once.
func TestBatchCapSharesABulkInsert(t *testing.T) {
	ctx := context.Background()
	s, pool := newStore(t)
	jobs := make([]NewJob, 2500)
	for i := range jobs {
		jobs[i] = NewJob{Queue: "q", Kind: "k", Args: []byte(`{"pad":"` + strings.Repeat("x", 100) + `"}`), Priority: 1, MaxAttempts: 3}
	}
	ids, err := EnqueueMany(ctx, pool, jobs)
	if err != nil || len(ids) != len(jobs) {
		t.Fatalf("enqueue: %v (%d ids)", err, len(ids))
	}
	got := map[int64]int{}
	per := map[int32]int{}
	for req, owner := int64(1), int32(1); ; req, owner = req+1, owner%3+1 {
		b, err := s.claimBatch(ctx, "q", owner, req, false, Limits{MaxJobs: 400, MaxBytes: 1 << 30})
		if err != nil {
			t.Fatal(err)
		}
		if b == nil {
			break
		}
		if len(b.Jobs) > 400 {
			t.Fatalf("a claim took %d jobs; the cap is 400", len(b.Jobs))
		}
		per[owner] += len(b.Jobs)
		for _, j := range b.Jobs {
			got[j.ID]++
		}
	}
	for _, id := range ids {
		if got[id] != 1 {
			t.Fatalf("job %d claimed %d times", id, got[id])
		}
	}
	for o := int32(1); o <= 3; o++ {
		if per[o] < 400 {
			t.Fatalf("owner %d got %d jobs; a bulk insert must be shared (%v)", o, per[o], per)
		}
	}
	// The byte cap: each job's args take about 120 bytes.
	enqueue(t, s, pool, "b")
	enqueue(t, s, pool, "b")
	b, err := s.claimBatch(ctx, "b", 1, 1, false, Limits{MaxJobs: 100, MaxBytes: 1})
	if err != nil || b == nil || len(b.Jobs) != 1 {
		t.Fatalf("claim with a 1-byte cap: %v, %+v; want exactly one job", err, b)
	}
	if rest := claimAll(t, s, "b", 2, noLimit); len(rest) != 1 {
		t.Fatalf("the rest of a byte-capped range: %v; want the other job", rest)
	}
}

// TestLostClaimReplyIsReturnedOnRetry: a claim that committed is found
// again by the same owner and request id.
func TestLostClaimReplyIsReturnedOnRetry(t *testing.T) {
	ctx := context.Background()
	s, pool := newStore(t)
	id := enqueue(t, s, pool, "q")
	first, err := s.claimBatch(ctx, "q", 1, 7, false, noLimit)
	if err != nil || first == nil {
		t.Fatal(err)
	}
	// The reply of that call is "lost": the same call again, retried.
	again, err := s.claimBatch(ctx, "q", 1, 7, true, noLimit)
	if err != nil || again == nil || again.TickID != first.TickID || len(again.Jobs) != 1 || again.Jobs[0].ID != id {
		t.Fatalf("retried claim: %v, %+v; want tick %d with job %d", err, again, first.TickID, id)
	}
	// A retry for a request that never committed claims normally.
	enqueue(t, s, pool, "q")
	next, err := s.claimBatch(ctx, "q", 1, 8, true, noLimit)
	if err != nil || next == nil || next.TickID == first.TickID {
		t.Fatalf("retry of an uncommitted request: %v, %+v", err, next)
	}
}

// TestFlushReplayIsIdempotent: a flush replayed after a lost reply writes
// nothing twice (a failed job is retried once, not twice).
func TestFlushReplayIsIdempotent(t *testing.T) {
	ctx := context.Background()
	s, pool := newStore(t)
	enqueue(t, s, pool, "q")
	b, err := s.claimBatch(ctx, "q", 1, 1, false, noLimit)
	if err != nil || b == nil {
		t.Fatal(err)
	}
	acks := []Ack{{Batch: b, Job: &b.Jobs[0], State: AckRetried, Err: "boom", RetryAt: time.Now()}}
	for i := 0; i < 2; i++ {
		if _, err := s.Flush(ctx, 1, 42, true, acks, []*Batch{b}); err != nil {
			t.Fatal(err)
		}
	}
	var sched, ack, done int
	pool.QueryRow(ctx, "SELECT (SELECT count(*) FROM millrace.sched), (SELECT count(*) FROM millrace.ack), (SELECT count(*) FROM millrace.done)").Scan(&sched, &ack, &done)
	if sched != 1 || ack != 1 || done != 1 {
		t.Fatalf("after a replayed flush: %d retries, %d acks, %d done; want 1 each", sched, ack, done)
	}
}

// TestFlushShiftNamesTheServersDueTime: a worker whose clock is an hour
// behind flushes a retry; the flush stores its due time shifted to the
// server's clock, and FlushShift returns that shift (RetryAt plus it is
// the stored due time, to within the flush's wait for its lock, never
// later).
func TestFlushShiftNamesTheServersDueTime(t *testing.T) {
	ctx := context.Background()
	s, pool := newStore(t)
	enqueue(t, s, pool, "q")
	b, err := s.claimBatch(ctx, "q", 1, 1, false, noLimit)
	if err != nil || b == nil {
		t.Fatal(err)
	}
	local := time.Now().Add(-time.Hour) // the worker's skewed clock
	acks := []Ack{{Batch: b, Job: &b.Jobs[0], State: AckRetried, Err: "boom", Started: local.Add(-time.Millisecond),
		Finished: local, RetryAt: local.Add(300 * time.Millisecond)}}
	_, shift, err := s.FlushShift(ctx, 1, 1, false, acks, []*Batch{b})
	if err != nil {
		t.Fatal(err)
	}
	var due time.Time
	if err := pool.QueryRow(ctx, "SELECT due_at FROM millrace.sched").Scan(&due); err != nil {
		t.Fatal(err)
	}
	if got := acks[0].RetryAt.Add(shift); got.After(due) || due.Sub(got) > time.Second {
		t.Fatalf("RetryAt plus the shift %v is %v; the stored due time is %v (want it or a little sooner)", shift, got, due)
	}
}

// TestFlushStoresAnyErrorText: NUL bytes and invalid UTF-8 in a job's error
// are made storable.
func TestFlushStoresAnyErrorText(t *testing.T) {
	ctx := context.Background()
	s, pool := newStore(t)
	enqueue(t, s, pool, "q")
	b, _ := s.claimBatch(ctx, "q", 1, 1, false, noLimit)
	acks := []Ack{{Batch: b, Job: &b.Jobs[0], State: AckRetried, Err: "bad\x00byte \xff\xfe end", RetryAt: time.Now()}}
	if _, err := s.Flush(ctx, 1, 1, true, acks, []*Batch{b}); err != nil {
		t.Fatalf("flush of an error with NUL and invalid UTF-8: %v", err)
	}
	var e string
	pool.QueryRow(ctx, "SELECT last_error FROM millrace.sched").Scan(&e)
	if e != "bad\\0byte \uFFFD end" {
		t.Fatalf("stored error %q", e)
	}
}

// TestRescueOfClaimCommittedAfterItsProcessDied: a claim that waited on the
// queue's claim lock commits after its process was declared dead and
// forgotten; the batch is still released and adopted by another process.
func TestRescueOfClaimCommittedAfterItsProcessDied(t *testing.T) {
	ctx := context.Background()
	s, pool := newStore(t)
	id := enqueue(t, s, pool, "q")
	// A process registers with a lease of a second.
	p5, err := s.Register(ctx, "p5", "h", 1, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	// Someone holds the queue's claim lock, so its claim waits.
	blocker, _ := pool.Begin(ctx)
	defer blocker.Rollback(ctx)
	blocker.Exec(ctx, "SELECT pg_advisory_xact_lock(millrace.claim_space(), hashtext('q'))")
	claimed := make(chan *Batch, 1)
	go func() {
		b, _ := s.claimBatch(ctx, "q", p5, 1, false, noLimit)
		claimed <- b
	}()
	waitBlocked(t, pool)
	waitDead(t, pool, p5) // it dies: no heartbeat renews its lease
	if _, err := s.Rescue(ctx, 0, time.Hour); err != nil {
		t.Fatal(err)
	}
	var procs int
	pool.QueryRow(ctx, "SELECT count(*) FROM millrace.process").Scan(&procs)
	if procs != 0 {
		t.Fatalf("the dead process is still registered")
	}
	blocker.Rollback(ctx)
	if b := <-claimed; b == nil || len(b.Jobs) != 1 {
		t.Fatalf("the late claim returned %+v", b)
	}
	rel, err := s.Rescue(ctx, 0, time.Hour)
	if err != nil || len(rel) != 1 || rel[0].Reason != "dead" {
		t.Fatalf("rescue after the late claim: %v, %+v; want the batch released", err, rel)
	}
	b, err := s.claimBatch(ctx, "q", 9, 1, false, noLimit)
	if err != nil || b == nil || len(b.Jobs) != 1 || b.Jobs[0].ID != id || b.Token <= b.TickID {
		t.Fatalf("adoption by process 9: %v, %+v", err, b)
	}
}

// TestStuckBatchIsReleased: a batch whose live holder keeps it longer than
// the stuck limit is released; the old holder's acks are then fenced.
func TestStuckBatchIsReleased(t *testing.T) {
	ctx := context.Background()
	s, pool := newStore(t)
	enqueue(t, s, pool, "q")
	live, err := s.Register(ctx, "live", "h", 1, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	old, _ := s.claimBatch(ctx, "q", live, 1, false, noLimit)
	if rel, _ := s.Rescue(ctx, 0, time.Hour); len(rel) != 0 {
		t.Fatalf("a fresh batch of a live process was released: %+v", rel)
	}
	rel, err := s.Rescue(ctx, 0, time.Nanosecond)
	if err != nil || len(rel) != 1 || rel[0].Reason != "stuck" {
		t.Fatalf("rescue of a stuck batch: %v %+v", err, rel)
	}
	adopted, _ := s.claimBatch(ctx, "q", 6, 1, false, noLimit)
	if adopted == nil || adopted.TickID != old.TickID {
		t.Fatalf("adoption: %+v", adopted)
	}
	fenced, err := s.Flush(ctx, live, 1, true, []Ack{{Batch: old, Job: &old.Jobs[0], State: AckCompleted}}, []*Batch{old})
	if err != nil || len(fenced) != 1 || fenced[0] != old.TickID {
		t.Fatalf("the stuck holder's late flush: %v, fenced %v; want its tick fenced", err, fenced)
	}
	if _, err := s.Flush(ctx, 6, 1, true, []Ack{{Batch: adopted, Job: &adopted.Jobs[0], State: AckCompleted}}, []*Batch{adopted}); err != nil {
		t.Fatal(err)
	}
	// The adopter's flush finished the batch: its completion is the batch's
	// done row and the job's history row, and no ack row.
	var acks, done int
	var owners []int32
	pool.QueryRow(ctx, "SELECT (SELECT count(*) FROM millrace.ack), (SELECT count(*) FROM millrace.done WHERE tick_id = $1)", old.TickID).Scan(&acks, &done)
	pool.QueryRow(ctx, "SELECT array_agg(owner) FROM millrace.job_history($1)", old.Jobs[0].ID).Scan(&owners)
	if acks != 0 || done != 1 || len(owners) != 1 || owners[0] != 6 {
		t.Fatalf("%d acks, %d done rows, history written by %v; want only the adopter's completion (process 6)", acks, done, owners)
	}
}

// TestRotationNeverWaitsOnAConsumer: an open batch (a long job), a queue
// nobody works and a producer transaction that stays open do not stop the
// ring; what they hold is carried forward and nothing is lost.
func TestRotationNeverWaitsOnAConsumer(t *testing.T) {
	ctx := context.Background()
	s, pool := newStore(t)
	enqueue(t, s, pool, "long")
	long, _ := s.claimBatch(ctx, "long", 1, 1, false, noLimit) // held open for the whole test
	unserved := enqueue(t, s, pool, "typo")
	producer, _ := pool.Begin(ctx)
	defer producer.Rollback(ctx)
	late := enqueue(t, s, producer, "q") // into slot 0, committed at the end
	var reclaims, blocked int
	for i := 0; i < 8; i++ {
		enqueue(t, s, pool, "q")
		claimAll(t, s, "q", 2, noLimit)
		for _, a := range rotate(t, s, 0) {
			switch a.Action {
			case "reclaimed":
				reclaims++
			case "blocked":
				blocked++
				if !strings.Contains(a.Detail, "pid") {
					t.Fatalf("a blocked reclaim does not name who holds it: %q", a.Detail)
				}
			}
		}
	}
	st, err := Ring(ctx, pool)
	if err != nil {
		t.Fatal(err)
	}
	if st.Rotations < 6 || reclaims < 5 || blocked == 0 {
		t.Fatalf("rotations %d, reclaims %d, blocked %d: the ring must keep turning around the open producer", st.Rotations, reclaims, blocked)
	}
	if err := producer.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	got := claimAll(t, s, "q", 2, noLimit)
	if got[late] != 1 {
		t.Fatalf("the late producer's job was claimed %d times", got[late])
	}
	if got := claimAll(t, s, "typo", 3, noLimit); got[unserved] != 1 {
		t.Fatalf("the unserved queue's job was claimed %d times after 8 rotations", got[unserved])
	}
	// The long job's batch is still open and its ack is accepted.
	fenced, err := s.Flush(ctx, 1, 1, true, []Ack{{Batch: long, Job: &long.Jobs[0], State: AckCompleted}}, []*Batch{long})
	if err != nil || len(fenced) != 0 {
		t.Fatalf("ack of the long job after the rotations: %v, fenced %v", err, fenced)
	}
	var open int
	pool.QueryRow(ctx, "SELECT count(*) FROM millrace.open_batches()").Scan(&open)
	if open != 3 { // the late producer's, the typo queue's and the last q batch are still open (never acked here)
		t.Logf("open batches: %d", open)
	}
}

// TestRotationSerializedBetweenLeaders: a rotation that starts while
// another is under way does nothing and says so; after it commits the next
// round sees its result.
func TestRotationSerializedBetweenLeaders(t *testing.T) {
	ctx := context.Background()
	s, pool := newStore(t)
	tx, _ := pool.Begin(ctx)
	defer tx.Rollback(ctx)
	var action string
	if err := tx.QueryRow(ctx, "SELECT action FROM millrace.rotate('0s') WHERE action = 'rotated'").Scan(&action); err != nil {
		t.Fatal(err)
	}
	a := rotate(t, s, time.Hour)
	if len(a) != 1 || a[0].Action != "busy" {
		t.Fatalf("second leader's rotation during the first: %+v; want busy", a)
	}
	tx.Commit(ctx)
	if a := rotate(t, s, time.Hour); len(a) != 0 {
		t.Fatalf("after the first rotation, with a young current slot: %+v; want nothing", a)
	}
	st, _ := Ring(ctx, pool)
	if st.Rotations != 1 || st.Current != 1 {
		t.Fatalf("ring %+v; want one rotation, slot 1 current", st)
	}
}

// TestRotationIgnoresScheduledJobs: thousands of jobs scheduled a day ahead
// are never copied by rotations or promotion rounds.
func TestRotationIgnoresScheduledJobs(t *testing.T) {
	ctx := context.Background()
	s, pool := newStore(t)
	testkit.RequireServerVersion(t, pool, 150000) // pg_stat_force_next_flush
	const n = 20000
	jobs := make([]NewJob, n)
	for i := range jobs {
		jobs[i] = NewJob{Queue: "q", Kind: "k", Args: []byte(`{}`), Priority: 1, MaxAttempts: 3, RunAt: time.Now().Add(24 * time.Hour)}
	}
	if _, err := EnqueueMany(ctx, pool, jobs); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 6; i++ {
		if _, err := s.Promote(ctx, 0, 1); err != nil {
			t.Fatal(err)
		}
		rotate(t, s, 0)
	}
	var inserted int64
	pool.Exec(ctx, "SELECT pg_stat_force_next_flush()")
	if err := pool.QueryRow(ctx, "SELECT sum(n_tup_ins) FROM pg_stat_user_tables WHERE schemaname = 'millrace' AND relname IN ('sched_0', 'sched_1')").Scan(&inserted); err != nil {
		t.Fatal(err)
	}
	if inserted != n {
		t.Fatalf("%d rows inserted into the schedule for %d scheduled jobs: rotations or promotions copied them", inserted, n)
	}
}

// TestLostEnqueueInOldRepeatableReadSnapshot: a REPEATABLE READ transaction
// whose snapshot predates several rotations and reclaims enqueues; the job
// runs.
func TestLostEnqueueInOldRepeatableReadSnapshot(t *testing.T) {
	ctx := context.Background()
	s, pool := newStore(t)
	tx, err := pool.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.RepeatableRead})
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx)
	tx.Exec(ctx, "SELECT 1 FROM millrace.rotation") // takes the snapshot
	for i := 0; i < 6; i++ {
		enqueue(t, s, pool, "q")
		claimAll(t, s, "q", 1, noLimit)
		rotate(t, s, 0)
	}
	id := enqueue(t, s, tx, "q")
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 4; i++ {
		rotate(t, s, 0)
	}
	if got := claimAll(t, s, "q", 1, noLimit); got[id] != 1 {
		t.Fatalf("job %d enqueued in an old REPEATABLE READ snapshot claimed %d times", id, got[id])
	}
}

// TestLostAdoptionReplyIsReturnedOnRetry: a claim that adopted a released
// batch and lost its reply gets that batch back on retry, instead of
// leaving it leased to a live process that never got it.
func TestLostAdoptionReplyIsReturnedOnRetry(t *testing.T) {
	ctx := context.Background()
	s, pool := newStore(t)
	id := enqueue(t, s, pool, "q")
	first, err := s.claimBatch(ctx, "q", 5, 1, false, noLimit) // owner 5 holds no liveness lock: dead
	if err != nil || first == nil {
		t.Fatal(err)
	}
	if rel, err := s.Rescue(ctx, 0, time.Hour); err != nil || len(rel) != 1 {
		t.Fatalf("rescue: %v %+v", err, rel)
	}
	adopted, err := s.claimBatch(ctx, "q", 6, 3, false, noLimit)
	if err != nil || adopted == nil || adopted.TickID != first.TickID {
		t.Fatalf("adoption: %v %+v", err, adopted)
	}
	// Its reply is "lost": the same call again, retried.
	again, err := s.claimBatch(ctx, "q", 6, 3, true, noLimit)
	if err != nil || again == nil || again.TickID != first.TickID || again.Token != adopted.Token || len(again.Jobs) != 1 || again.Jobs[0].ID != id {
		t.Fatalf("retried adoption: %v, %+v; want tick %d under token %d", err, again, first.TickID, adopted.Token)
	}
}

// TestRotationLateFlushAfterReclaimIsFenced: a holder whose batch was
// released and finished elsewhere flushes late, after the slots with the
// batch's leases were reclaimed: its acks are still fenced.
func TestRotationLateFlushAfterReclaimIsFenced(t *testing.T) {
	ctx := context.Background()
	s, pool := newStore(t)
	enqueue(t, s, pool, "q")
	old, _ := s.claimBatch(ctx, "q", 5, 1, false, noLimit) // owner 5 is dead: no liveness lock
	if rel, err := s.Rescue(ctx, 0, time.Hour); err != nil || len(rel) != 1 {
		t.Fatalf("rescue: %v %+v", err, rel)
	}
	adopted, _ := s.claimBatch(ctx, "q", 6, 1, false, noLimit)
	if _, err := s.Flush(ctx, 6, 1, true, []Ack{{Batch: adopted, Job: &adopted.Jobs[0], State: AckCompleted}}, []*Batch{adopted}); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 6; i++ {
		rotate(t, s, 0)
	}
	fenced, err := s.Flush(ctx, 5, 1, true, []Ack{{Batch: old, Job: &old.Jobs[0], State: AckRetried, Err: "late", RetryAt: time.Now()}}, []*Batch{old})
	if err != nil || len(fenced) != 1 {
		t.Fatalf("late flush of the released holder: %v, fenced %v; want its tick fenced", err, fenced)
	}
	var sched int
	pool.QueryRow(ctx, "SELECT count(*) FROM millrace.sched").Scan(&sched)
	if sched != 0 {
		t.Fatalf("the fenced late ack scheduled a retry of a completed job")
	}
}

// TestFlushReplayAfterItsRowWasReclaimed: a flush replayed after the slot
// holding its idempotence row was reclaimed still writes nothing twice.
func TestFlushReplayAfterItsRowWasReclaimed(t *testing.T) {
	ctx := context.Background()
	s, pool := newStore(t)
	enqueue(t, s, pool, "q")
	enqueue(t, s, pool, "q")
	b, _ := s.claimBatch(ctx, "q", 1, 1, false, noLimit)
	acks := []Ack{{Batch: b, Job: &b.Jobs[0], State: AckRetried, Err: "boom", RetryAt: time.Now().Add(time.Hour)}}
	if _, err := s.Flush(ctx, 1, 7, true, acks, nil); err != nil { // the batch stays open: one job has no ack
		t.Fatal(err)
	}
	for i := 0; i < 6; i++ {
		rotate(t, s, 0)
	}
	var rows int
	pool.QueryRow(ctx, "SELECT count(*) FROM millrace.flush").Scan(&rows)
	if rows != 0 {
		t.Fatalf("the flush row survived six reclaims; the test needs it gone")
	}
	if _, err := s.Flush(ctx, 1, 7, true, acks, nil); err != nil {
		t.Fatal(err)
	}
	var sched int
	pool.QueryRow(ctx, "SELECT count(*) FROM millrace.sched").Scan(&sched)
	if sched != 1 {
		t.Fatalf("%d retries scheduled after a late replay; want 1", sched)
	}
}

// TestLostClaimReplyAfterClosingAndAdopting: one claim call closed a
// released batch that was fully acked and adopted another; its reply is
// lost; the retry returns the adopted one.
func TestLostClaimReplyAfterClosingAndAdopting(t *testing.T) {
	ctx := context.Background()
	s, pool := newStore(t)
	enqueue(t, s, pool, "q")
	first, _ := s.claimBatch(ctx, "q", 5, 1, false, noLimit) // dead owner 5
	enqueue(t, s, pool, "q")
	second, _ := s.claimBatch(ctx, "q", 5, 2, false, noLimit)
	// Batch one was fully acked before 5 died; its done mark never came.
	if _, err := s.Flush(ctx, 5, 1, true, []Ack{{Batch: first, Job: &first.Jobs[0], State: AckCompleted}}, nil); err != nil {
		t.Fatal(err)
	}
	if rel, err := s.Rescue(ctx, 0, time.Hour); err != nil || len(rel) != 2 {
		t.Fatalf("rescue: %v %+v", err, rel)
	}
	got, err := s.claimBatch(ctx, "q", 6, 9, false, noLimit)
	if err != nil || got == nil || got.TickID != second.TickID {
		t.Fatalf("claim: %v %+v; want batch %d adopted", err, got, second.TickID)
	}
	again, err := s.claimBatch(ctx, "q", 6, 9, true, noLimit)
	if err != nil || again == nil || again.TickID != second.TickID || again.Token != got.Token {
		t.Fatalf("retried claim: %v %+v; want batch %d again", err, again, second.TickID)
	}
}

// claimBatch is Claim for tests that expect at most one batch (one lane).
func (s *Store) claimBatch(ctx context.Context, queue string, owner int32, req int64, retry bool, lim Limits) (*Batch, error) {
	bs, err := s.Claim(ctx, queue, owner, req, retry, lim)
	if err != nil || len(bs) == 0 {
		return nil, err
	}
	if len(bs) > 1 {
		return nil, fmt.Errorf("claim returned %d batches, want at most 1", len(bs))
	}
	return bs[0], nil
}

// TestClaimBytesAtMostTheCapPlusOneJob (issue 31.11): a claim stops at the
// job whose arguments reach MaxBytes, across lanes too: the jobs before
// that last one hold less than the cap, so a batch holds at most the cap
// plus one job (8 MiB measured 9,141 kB with a job of about 1 MB), and a
// job larger than the cap is still claimed.
func TestClaimBytesAtMostTheCapPlusOneJob(t *testing.T) {
	ctx := context.Background()
	s, pool := newStore(t)
	// One lane (the claim takes its range itself) and two (lane_take).
	for _, lanes := range []int{1, 2} {
		queue := fmt.Sprintf("q%d", lanes)
		var jobs []NewJob
		for i := 0; i < 30; i++ {
			pad := strings.Repeat("x", 500+(i*337)%2500) // 0.5-3 kB
			if i == 17 {
				pad = strings.Repeat("y", 12000) // larger than the cap
			}
			jobs = append(jobs, NewJob{Queue: queue, Kind: "k", Args: []byte(`{"p":"` + pad + `"}`), Priority: int16(1 + i%lanes), MaxAttempts: 3})
		}
		if _, err := EnqueueMany(ctx, pool, jobs); err != nil {
			t.Fatal(err)
		}
		const capBytes = 8000
		seen := 0
		for req := int64(1); ; req++ {
			bs, err := s.Claim(ctx, queue, 1, req, false, Limits{MaxJobs: 1000, MaxBytes: capBytes})
			if err != nil {
				t.Fatal(err)
			}
			if len(bs) == 0 {
				break
			}
			var sizes []int
			for _, b := range bs {
				for _, j := range b.Jobs {
					sizes = append(sizes, len(j.Args))
				}
			}
			total := 0
			for _, n := range sizes {
				total += n
			}
			last := sizes[len(sizes)-1]
			if total-last >= capBytes || total > capBytes+last {
				t.Errorf("%d lanes: claim %d took %d bytes in %d jobs (last %d); want less than %d before the last job", lanes, req, total, len(sizes), last, capBytes)
			}
			seen += len(sizes)
		}
		if seen != len(jobs) {
			t.Fatalf("%d lanes: claimed %d jobs of %d", lanes, seen, len(jobs))
		}
	}
}

// An insert runs in its own READ COMMITTED transaction on a pool, or in
// the caller's transaction: a connection, whose transaction state the
// call cannot know, is refused instead of silently taking the caller's
// transaction path (a unique key under a REPEATABLE READ default).
func TestInsertOnAConnectionIsRefused(t *testing.T) {
	ctx := context.Background()
	s, pool := newStore(t)
	conn, err := pool.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Release()
	_, err = s.Enqueue(ctx, conn, NewJob{Queue: "q", Kind: "k", Args: []byte(`{}`), MaxAttempts: 1}, false)
	if err == nil || !strings.Contains(err.Error(), "pgx.Tx") {
		t.Fatalf("insert on a *pgxpool.Conn: %v; want it refused", err)
	}
	var n int
	if err := pool.QueryRow(ctx, "SELECT count(*) FROM millrace.job").Scan(&n); err != nil || n != 0 {
		t.Fatalf("%d jobs after a refused insert (%v)", n, err)
	}
}

// TestFlushTakesNoNotificationLock: a flush holding a retry due at once
// sends no NOTIFY. A NOTIFY in its transaction took the server's one
// notification lock and held it through the commit's WAL flush, so every
// other notifying commit waited behind each flush (11% of the server's
// busy samples in the full mix at 800 jobs/s); the client announces the
// retry from its Sender once the flush has committed. Notifications come
// in commit order: a marker sent after the flush arrives first only if the
// flush sent none.
func TestFlushTakesNoNotificationLock(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	s, pool := newStore(t)
	l, err := pool.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Release()
	if _, err := l.Exec(ctx, "LISTEN millrace_sched"); err != nil {
		t.Fatal(err)
	}
	enqueue(t, s, pool, "q")
	b, err := s.claimBatch(ctx, "q", 1, 1, false, noLimit)
	if err != nil || b == nil {
		t.Fatal(err)
	}
	acks := []Ack{{Batch: b, Job: &b.Jobs[0], State: AckRetried, Err: "boom", RetryAt: time.Now()}}
	if _, err := s.Flush(ctx, 1, 1, false, acks, []*Batch{b}); err != nil {
		t.Fatal(err)
	}
	if _, err := pool.Exec(ctx, "SELECT pg_notify('millrace_sched', 'marker')"); err != nil {
		t.Fatal(err)
	}
	n, err := l.Conn().WaitForNotification(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if n.Payload != "marker" {
		t.Fatalf("the flush of a retry due now sent a NOTIFY on %s (%q) in its transaction; want none", n.Channel, n.Payload)
	}
}

// TestPromoteDueSendsNoNotify: the promoter's round (promote_due) sends no
// NOTIFY in its transaction, which would hold the server's one
// notification lock through the round's durable commit and make every
// other announcement wait; it returns the queues it moved jobs into, for
// the promoter to announce after the commit, and the next due time, which
// took a second call. promote, for a caller with no announcer of its own,
// still notifies. Notifications come in commit order: a marker sent after
// the round arrives first only if the round sent none.
func TestPromoteDueSendsNoNotify(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s, pool := newStore(t)
	l, err := pool.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Release()
	if _, err := l.Exec(ctx, "LISTEN millrace"); err != nil {
		t.Fatal(err)
	}
	scheduleIn := func(queue, in string) time.Time {
		t.Helper()
		var id int64
		var due time.Time
		if err := pool.QueryRow(ctx, "SELECT millrace.enqueue('k', '{}', $1, p_run_at => clock_timestamp() + $2::interval, p_notify => false)",
			queue, in).Scan(&id); err != nil {
			t.Fatal(err)
		}
		if err := pool.QueryRow(ctx, "SELECT s.due_at FROM millrace.sched s WHERE s.id = $1", id).Scan(&due); err != nil {
			t.Fatal(err)
		}
		return due
	}
	schedule := func(queue, in string) time.Time {
		t.Helper()
		due := scheduleIn(queue, in)
		testkit.WaitFor(t, "the job scheduled in "+queue+" to fall due", 10*time.Second, func() bool {
			var past bool
			return pool.QueryRow(ctx, "SELECT clock_timestamp() >= $1", due).Scan(&past) == nil && past
		})
		return due
	}
	later := scheduleIn("later", "1 hour")
	first := func(what string) string {
		t.Helper()
		if _, err := pool.Exec(ctx, "SELECT pg_notify('millrace', 'marker')"); err != nil {
			t.Fatal(err)
		}
		n, err := l.Conn().WaitForNotification(ctx)
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		return n.Payload
	}

	schedule("due", "50 ms")
	r, err := s.PromoteDue(ctx, 0, 10000)
	if err != nil {
		t.Fatal(err)
	}
	if r.N != 1 || len(r.Queues) != 1 || r.Queues[0] != "due" || !r.Next.Equal(later) {
		t.Fatalf("promote_due: %+v; want 1 job into queue due, next due %v", r, later)
	}
	if p := first("promote_due"); p != "marker" {
		t.Fatalf("promote_due sent a NOTIFY (%q) in its transaction; want none", p)
	}

	schedule("sql", "50 ms")
	if n, err := s.Promote(ctx, 0, 10000); err != nil || n != 1 {
		t.Fatalf("promote: %d, %v; want 1 job", n, err)
	}
	if p := first("promote"); p != "sql" {
		t.Fatalf("promote's first notification: %q; want one for queue sql, sent at its commit", p)
	}
}

// TestInsertMixedBatchKeepsItsOrder: a batch with unique keys writes its
// rows without a key together after its keyed ones, but every row keeps
// its place: ids in the batch's order, a duplicate of a key taken earlier
// in the same batch reported as such, scheduled rows in the schedule and
// the others claimable, in order.
func TestInsertMixedBatchKeepsItsOrder(t *testing.T) {
	ctx := context.Background()
	s, pool := newStore(t)
	later := time.Now().Add(time.Hour)
	job := func(key string, at time.Time) NewJob {
		return NewJob{Queue: "mix", Kind: "k", Args: []byte(`{}`), Priority: 1, MaxAttempts: 1, UniqueKey: key, RunAt: at}
	}
	rs, err := Insert(ctx, pool, []NewJob{
		job("", time.Time{}), job("a", time.Time{}), job("", later), job("a", time.Time{}), job("", time.Time{}), job("b", later),
	}, false)
	if err != nil {
		t.Fatal(err)
	}
	got := make([]string, len(rs))
	for i, r := range rs {
		got[i] = r.State
		if r.Duplicate {
			got[i] = "dup"
		}
	}
	if fmt.Sprint(got) != "[available available scheduled dup available scheduled]" {
		t.Fatalf("states %v; want [available available scheduled dup available scheduled]", got)
	}
	if rs[3].ID != rs[1].ID {
		t.Fatalf("the duplicate names job %d; want %d, the batch's first of key a", rs[3].ID, rs[1].ID)
	}
	ids := []int64{rs[0].ID, rs[1].ID, rs[2].ID, rs[4].ID, rs[5].ID}
	if !slices.IsSorted(ids) || len(slices.Compact(slices.Clone(ids))) != len(ids) {
		t.Fatalf("ids %v; want them rising in the batch's order", ids)
	}
	for i, want := range map[int]string{0: "available", 1: "available", 2: "scheduled", 4: "available", 5: "scheduled"} {
		var st string
		if err := pool.QueryRow(ctx, "SELECT millrace.job_state($1)", rs[i].ID).Scan(&st); err != nil || st != want {
			t.Fatalf("row %d, job %d: state %q (%v); want %q", i, rs[i].ID, st, err, want)
		}
	}
	var claimed []int64
	for id := range claimAll(t, s, "mix", 1, noLimit) {
		claimed = append(claimed, id)
	}
	slices.Sort(claimed)
	if want := []int64{rs[0].ID, rs[1].ID, rs[4].ID}; !slices.Equal(claimed, want) {
		t.Fatalf("claimed %v; want %v (the available rows, not the scheduled ones)", claimed, want)
	}
}
