package maint

import (
	"context"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/millrace/millrace/internal/storage"
	"github.com/millrace/millrace/internal/testkit"
)

// TestPromotion: a scheduled job that has fallen due is left alone by a
// round when a Promoter runs beside the rounds (PromoterRuns), and
// promoted by a round otherwise. A Promoter asleep for longer than a job
// takes to fall due promotes it once kicked (as NOTIFY millrace_sched
// kicks it).
func TestPromotion(t *testing.T) {
	ctx := context.Background()
	pool := testkit.DB(t)
	s := &storage.Store{Pool: pool}
	logger := slog.New(slog.DiscardHandler)
	ready := func(kind string) bool {
		t.Helper()
		var n int
		if err := pool.QueryRow(ctx, "SELECT count(*) FROM millrace.job WHERE kind = $1", kind).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n == 1
	}
	schedule := func(kind string, in time.Duration) time.Time {
		t.Helper()
		ins, err := storage.Insert(ctx, pool, []storage.NewJob{{Queue: "q", Kind: kind, Args: []byte(`{}`), MaxAttempts: 1,
			RunAt: time.Now().Add(in)}}, false)
		if err != nil || len(ins) != 1 || !ins[0].Scheduled {
			t.Fatalf("scheduling %s: %v %+v", kind, err, ins)
		}
		return ins[0].RunAt
	}
	// Due far enough ahead to be scheduled, not available, when the insert
	// runs on a loaded machine (CI once took over 50 ms to send it).
	due := schedule("rounds", 500*time.Millisecond)
	testkit.WaitFor(t, "the server's clock to pass the job's due time", 10*time.Second, func() bool {
		now, err := s.Now(ctx)
		return err == nil && now.After(due)
	})
	if err := New(Config{Store: s, Logger: logger, PromoterRuns: true}).Step(ctx); err != nil {
		t.Fatal(err)
	}
	if ready("rounds") {
		t.Fatal("a round promoted a job while a Promoter runs beside the rounds")
	}
	if err := New(Config{Store: s, Logger: logger}).Step(ctx); err != nil {
		t.Fatal(err)
	}
	if !ready("rounds") {
		t.Fatal("a round did not promote a job that had fallen due")
	}

	p := sleepingPromoter(t, s)
	schedule("kicked", 500*time.Millisecond)
	p.Kick()
	testkit.WaitFor(t, "the kicked promoter to promote the job", 10*time.Second, func() bool { return ready("kicked") })
}

// sleepingPromoter runs a Promoter on s that sleeps up to an hour between
// rounds (nothing is scheduled: only a kick wakes it) until the test
// ends, and then checks that it ended as stopped.
func sleepingPromoter(t *testing.T, s *storage.Store) *Promoter {
	t.Helper()
	p := NewPromoter(s, slog.New(slog.DiscardHandler))
	p.MaxWait = time.Hour
	ctx, stop := context.WithCancel(context.Background())
	ran := make(chan error, 1)
	go func() { ran <- p.Run(ctx, 0) }()
	t.Cleanup(func() {
		stop()
		if err := <-ran; err != context.Canceled {
			t.Errorf("the promoter ended with %v, want context.Canceled", err)
		}
	})
	return p
}

// roundCounter counts the promote rounds (promote_due calls) a store's
// pool runs.
type roundCounter struct{ n atomic.Int32 }

func (c *roundCounter) TraceQueryStart(ctx context.Context, _ *pgx.Conn, d pgx.TraceQueryStartData) context.Context {
	if strings.Contains(d.SQL, "millrace.promote_due(") {
		c.n.Add(1)
	}
	return ctx
}

func (c *roundCounter) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}

// The store sends most of its statements in a pipeline (storage.RunTx).
func (c *roundCounter) TraceBatchStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceBatchStartData) context.Context {
	return ctx
}

func (c *roundCounter) TraceBatchQuery(_ context.Context, _ *pgx.Conn, d pgx.TraceBatchQueryData) {
	if strings.Contains(d.SQL, "millrace.promote_due(") {
		c.n.Add(1)
	}
}

func (c *roundCounter) TraceBatchEnd(context.Context, *pgx.Conn, pgx.TraceBatchEndData) {}

// TestAKickWithADueTimeRunsNoRoundToLearnIt: an insert's NOTIFY says when
// its scheduled job falls due (KickAt); the promoter, asleep, then runs
// its next round at that time, and none before it only to read the next
// due time. A kick that names a later time than the planned round changes
// nothing; a kick without a time (a retry) runs a round soon.
func TestAKickWithADueTimeRunsNoRoundToLearnIt(t *testing.T) {
	ctx := context.Background()
	cfg, err := pgxpool.ParseConfig(testkit.DBURL(t))
	if err != nil {
		t.Fatal(err)
	}
	rounds := &roundCounter{}
	cfg.ConnConfig.Tracer = rounds
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close) // after the promoter stops (cleanups run last first)
	s := &storage.Store{Pool: pool}
	p := sleepingPromoter(t, s)
	testkit.WaitFor(t, "the promoter's first round", 10*time.Second, func() bool { return rounds.n.Load() == 1 })

	ins, err := storage.Insert(ctx, pool, []storage.NewJob{{Queue: "q", Kind: "k", Args: []byte(`{}`), MaxAttempts: 1,
		RunAt: time.Now().Add(700 * time.Millisecond)}}, false)
	if err != nil || len(ins) != 1 || !ins[0].Scheduled {
		t.Fatalf("scheduling: %v %+v", err, ins)
	}
	p.KickAt(ins[0].RunAt)
	p.KickAt(ins[0].RunAt.Add(time.Minute)) // later than the planned round: nothing
	promoted := func() bool {
		var n int
		if err := pool.QueryRow(ctx, "SELECT count(*) FROM millrace.job WHERE id = $1", ins[0].ID).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n == 1
	}
	testkit.WaitFor(t, "the job to be promoted", 10*time.Second, promoted)
	if n := rounds.n.Load(); n != 2 {
		t.Fatalf("%d promote rounds, want 2: the first, and one at the kicked due time", n)
	}
	now, err := s.Now(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if now.Before(ins[0].RunAt) {
		t.Fatalf("the job was promoted at %v, before its due time %v", now, ins[0].RunAt)
	}

	p.Kick() // no time: a round soon
	testkit.WaitFor(t, "a round after a kick without a time", 10*time.Second, func() bool { return rounds.n.Load() == 3 })
}
