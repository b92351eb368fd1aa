package maint

import (
	"context"
	"log/slog"
	"testing"
	"time"

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

	p := NewPromoter(s, logger)
	p.MaxWait = time.Hour // asleep: nothing is scheduled
	pctx, stop := context.WithCancel(ctx)
	ran := make(chan error, 1)
	go func() { ran <- p.Run(pctx, 0) }()
	defer func() {
		stop()
		if err := <-ran; err != context.Canceled {
			t.Errorf("the promoter ended with %v, want context.Canceled", err)
		}
	}()
	schedule("kicked", 500*time.Millisecond)
	p.Kick()
	testkit.WaitFor(t, "the kicked promoter to promote the job", 10*time.Second, func() bool { return ready("kicked") })
}
