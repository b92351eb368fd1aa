package maint

import (
	"context"
	"log/slog"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/millrace/millrace/internal/storage"
	"github.com/millrace/millrace/internal/testkit"
)

// TestRotationHeldBackIsLogged: a producer transaction left open holds its
// slot; the leader keeps rotating the other slots and says, once per
// LogEvery, which backend holds the slot it cannot reclaim.
func TestRotationHeldBackIsLogged(t *testing.T) {
	ctx := context.Background()
	pool, err := pgxpool.New(ctx, testkit.DBURL(t))
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	s := &storage.Store{Pool: pool}
	tx, err := pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx)
	if _, err := s.Enqueue(ctx, tx, storage.NewJob{Queue: "q", Kind: "k", Args: []byte(`{}`), MaxAttempts: 1}, false); err != nil {
		t.Fatal(err)
	}
	var pid int
	tx.QueryRow(ctx, "SELECT pg_backend_pid()").Scan(&pid)
	var logs lockedBuffer
	var rounds [][]storage.RingAction
	m := New(Config{Store: s, Logger: slog.New(slog.NewTextHandler(&logs, nil)), RotateAfter: time.Nanosecond, LogEvery: time.Hour,
		OnRotate: func(a []storage.RingAction) { rounds = append(rounds, a) }})
	for i := 0; i < 8; i++ {
		m.Step(ctx)
	}
	st, err := storage.Ring(ctx, pool)
	if err != nil {
		t.Fatal(err)
	}
	if st.Rotations < 6 {
		t.Fatalf("%d rotations in 8 rounds with one slot held: the ring must turn on the others", st.Rotations)
	}
	out := logs.b.String()
	if n := strings.Count(out, "rotation is held back"); n != 1 {
		t.Fatalf("%d warnings in 8 rounds with LogEvery 1h; want 1:\n%s", n, out)
	}
	if !strings.Contains(out, "slot 0 cannot be reclaimed: in use by pid "+strconv.Itoa(pid)) {
		t.Fatalf("the warning does not name the holder, pid %d:\n%s", pid, out)
	}
}

// loopReader reads the queue's tables in back-to-back statements of 0.3 s
// on a connection of its own until ctx ends (then done closes), counting
// the reads that ended and those the leader cancelled (57014).
func loopReader(ctx context.Context, pool *pgxpool.Pool) (reads, cancelled *atomicCounter, done chan struct{}) {
	reads, cancelled, done = new(atomicCounter), new(atomicCounter), make(chan struct{})
	go func() {
		defer close(done)
		conn, err := pgx.Connect(ctx, pool.Config().ConnConfig.ConnString())
		if err != nil {
			return
		}
		defer conn.Close(context.Background())
		for ctx.Err() == nil {
			_, err := conn.Exec(ctx, "SELECT (SELECT count(*) FROM millrace.job), pg_sleep(0.3)")
			switch {
			case err == nil:
				reads.add()
			case strings.Contains(err.Error(), "57014"):
				cancelled.add()
			}
		}
	}()
	return reads, cancelled, done
}

// TestRingTurnsUnderALoopOfShortReaders (issue 31.8): a session reads the
// queue's tables in back-to-back statements of 0.3 s. No single
// transaction is old, yet one always holds every slot when a NOWAIT
// comes: the ring turned 2 times in 20 s against 12 without it (here, at
// a round every 100 ms, 2-4 reclaims in 60 rounds). Once a
// slot has been blocked a rotation period past its time, the leader's
// round waits for its locks and cancels the reader's statement: the ring
// turns, at the cost of the reader's statements that block it.
func TestRingTurnsUnderALoopOfShortReaders(t *testing.T) {
	ctx := context.Background()
	pool := testkit.DB(t)
	s := &storage.Store{Pool: pool}
	var logs lockedBuffer
	m := New(Config{Store: s, Logger: slog.New(slog.NewTextHandler(&logs, nil)), RotateAfter: 200 * time.Millisecond,
		LogEvery: time.Nanosecond})
	rctx, stop := context.WithCancel(ctx)
	reads, cancelled, readerDone := loopReader(rctx, pool)
	defer stop()
	testkit.WaitFor(t, "the reader to hold the ring", 10*time.Second, func() bool { return reads.get() > 0 })
	ledger := func() int64 {
		var n int64
		if err := pool.QueryRow(ctx, "SELECT count(*) FROM millrace.reclaim").Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	start := ledger()
	for i := 0; i < 3; i++ {
		if _, err := s.Enqueue(ctx, pool, storage.NewJob{Queue: "q", Kind: "k", Args: []byte(`{}`), Priority: 1, MaxAttempts: 1}, false); err != nil {
			t.Fatal(err)
		}
	}
	// Sixty rounds at a leader's cadence (every 100 ms here, every second
	// by default): a slot is due 200 ms after it leaves use.
	rounds := func(m *Maintainer) {
		tick := time.NewTicker(100 * time.Millisecond)
		defer tick.Stop()
		for i := 0; i < 60; i++ {
			<-tick.C
			if err := m.Step(ctx); err != nil {
				t.Fatal(err)
			}
		}
	}
	rounds(m)
	n := ledger() - start
	t.Logf("%d reclaims; the reader: %d reads, %d cancelled", n, reads.get(), cancelled.get())
	// The same rounds without the reader: the reader's must be at least
	// half as many (issue 31's acceptance).
	stop()
	<-readerDone
	start = ledger()
	rounds(New(Config{Store: s, Logger: slog.New(slog.NewTextHandler(&logs, nil)), RotateAfter: 200 * time.Millisecond}))
	clean := ledger() - start
	t.Logf("without the reader: %d reclaims", clean)
	if n*2 < clean {
		t.Errorf("%d reclaims in 60 rounds with the reader looping, %d without; want at least half", n, clean)
	}
	if c := int64(cancelled.get()); c > n+1 {
		t.Errorf("%d of the reader's statements cancelled for %d reclaims; want at most one a reclaim", c, n)
	}
	if !strings.Contains(logs.String(), "cancelled the statement of a reader") {
		t.Errorf("the leader did not say it cancelled the reader:\n%s", logs.String())
	}
}

// TestNoWaitBehindASessionIdleInItsTransaction: a session idle in its
// transaction holds one slot (a writer, which the leader never ends) and
// a reader loops over the queue's tables. Waiting for the slot's locks
// cannot reclaim it while the idle session holds it: the leader's rounds
// must not queue for them, ahead of every statement that reads the ring
// (the queue's own claims: under load, a clean-clone CI run of
// TestRotationUnderLoadAndLock saw completions fall from 366 to 119 a
// second). A sampler looks for the leader's lock request waiting on the
// slot's partition. Once the idle session lets go, the reader alone holds
// the slot, and the rounds wait and cancel as
// TestRingTurnsUnderALoopOfShortReaders shows.
func TestNoWaitBehindASessionIdleInItsTransaction(t *testing.T) {
	ctx := context.Background()
	pool := testkit.DB(t)
	s := &storage.Store{Pool: pool}
	var logs lockedBuffer
	m := New(Config{Store: s, Logger: slog.New(slog.NewTextHandler(&logs, nil)), RotateAfter: 200 * time.Millisecond,
		LogEvery: time.Nanosecond})

	var slot int
	if err := pool.QueryRow(ctx, "SELECT segment FROM millrace.rotation ORDER BY id DESC LIMIT 1").Scan(&slot); err != nil {
		t.Fatal(err)
	}
	idle, err := pgx.Connect(ctx, pool.Config().ConnConfig.ConnString())
	if err != nil {
		t.Fatal(err)
	}
	defer idle.Close(ctx)
	itx, err := idle.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := itx.Exec(ctx, "LOCK TABLE millrace.job_"+strconv.Itoa(slot)+" IN ACCESS SHARE MODE"); err != nil {
		t.Fatal(err)
	}

	rctx, stop := context.WithCancel(ctx)
	defer stop()
	reads, cancelled, readerDone := loopReader(rctx, pool)
	testkit.WaitFor(t, "the reader to hold the ring", 10*time.Second, func() bool { return reads.get() > 0 })

	reclaimed := func() bool {
		var ok bool
		if err := pool.QueryRow(ctx, `SELECT coalesce((SELECT max(id) FROM millrace.reclaim WHERE segment = $1), 0)
			> (SELECT max(id) FROM millrace.rotation WHERE segment = $1)`, slot).Scan(&ok); err != nil {
			t.Fatal(err)
		}
		return ok
	}
	// The sampler: a lock request on the slot's job partition in ACCESS
	// EXCLUSIVE mode, not granted, is the leader's round waiting for it.
	var samples, waiting atomicCounter
	sampleDone := make(chan struct{})
	go func() {
		defer close(sampleDone)
		conn, err := pgx.Connect(rctx, pool.Config().ConnConfig.ConnString())
		if err != nil {
			return
		}
		defer conn.Close(context.Background())
		tick := time.NewTicker(10 * time.Millisecond)
		defer tick.Stop()
		for {
			var n int
			if err := conn.QueryRow(rctx, `SELECT count(*) FROM pg_locks WHERE locktype = 'relation' AND NOT granted
				AND mode = 'AccessExclusiveLock' AND relation = to_regclass('millrace.job_' || $1::int)`, slot).Scan(&n); err == nil {
				samples.add()
				if n > 0 {
					waiting.add()
				}
			}
			select {
			case <-rctx.Done():
				return
			case <-tick.C:
			}
		}
	}()
	// Rounds every 100 ms: the slot leaves use at the first rotation and
	// is due 200 ms later; from there on it is blocked, and overdue after
	// another 200 ms. Thirty rounds are three seconds of it. The rounds
	// run on a leader's cadence (a ticker, as the leader's loop).
	rounds := time.NewTicker(100 * time.Millisecond)
	defer rounds.Stop()
	blocked := 0
	for i := 0; i < 30; i++ {
		<-rounds.C
		if err := m.Step(ctx); err != nil {
			t.Fatal(err)
		}
		if strings.Contains(logs.String(), "slot "+strconv.Itoa(slot)+" cannot be reclaimed") {
			blocked++
		}
	}
	if blocked == 0 {
		t.Fatalf("slot %d was never blocked in 30 rounds: the test held nothing\n%s", slot, logs.String())
	}
	if reclaimed() {
		t.Fatalf("slot %d was reclaimed while a session held it", slot)
	}
	t.Logf("%d rounds blocked; %d of %d samples saw the leader wait for the slot's lock; the reader: %d reads, %d cancelled",
		blocked, waiting.get(), samples.get(), reads.get(), cancelled.get())
	if samples.get() == 0 {
		t.Fatal("the sampler read nothing")
	}
	if w := waiting.get(); w > 0 {
		t.Errorf("in %d of %d samples the leader waited for the lock of slot %d, which a session idle in its transaction held: the wait could not reclaim it and held back every reader of the ring", w, samples.get(), slot)
	}

	// The idle session lets go: the reader alone keeps the slot, and the
	// rounds wait for it and cancel the reader's statement.
	if err := itx.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 60 && !reclaimed(); i++ {
		<-rounds.C
		if err := m.Step(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if !reclaimed() {
		t.Errorf("slot %d not reclaimed in 60 rounds once only the reader held it; the reader: %d reads, %d cancelled", slot, reads.get(), cancelled.get())
	}
	stop()
	<-readerDone
	<-sampleDone
}
