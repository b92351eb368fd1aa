package maint

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/millrace/millrace/internal/storage"
	"github.com/millrace/millrace/internal/testkit"
)

// TestShortLeaderLeaseHeld: a leader term of 1 s (the shortest a client
// allows) with rounds every second (the default) is held, round after
// round, and through a first round that takes 1.5 s (a trigger sleeps in
// its promotion): another live process never gets it, and Run does not
// give it up. Renewed only by the rounds, it ran out at every round; renewed
// between rounds but not during one, it ran out in a slow round.
func TestShortLeaderLeaseHeld(t *testing.T) {
	ctx := context.Background()
	pool := testkit.DB(t)
	s := &storage.Store{Pool: pool}
	if _, err := pool.Exec(ctx, `CREATE FUNCTION public.slow_round() RETURNS trigger LANGUAGE plpgsql AS $$
		BEGIN PERFORM pg_sleep(1.5); RETURN NEW; END $$;
		CREATE TRIGGER slow_round BEFORE INSERT ON millrace.promote FOR EACH ROW EXECUTE FUNCTION public.slow_round()`); err != nil {
		t.Fatal(err)
	}
	p1, err := s.Register(ctx, "leader", "h", 1, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	p2, err := s.Register(ctx, "other", "h", 2, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	term, err := s.Lead(ctx, p1, 0, time.Second)
	if err != nil || term == 0 {
		t.Fatalf("the first process did not get a term: %d, %v", term, err)
	}
	rctx, stop := context.WithCancel(ctx)
	ran := make(chan error, 1)
	go func() {
		ran <- Run(rctx, Config{Store: s, Logger: slog.New(slog.DiscardHandler), Owner: p1, Term: term,
			LeaderLease: time.Second, Every: time.Second})
	}()
	// Four leases long, every 250 ms: the other process asks for the term.
	tick := time.NewTicker(250 * time.Millisecond)
	defer tick.Stop()
	for i := 0; i < 16; i++ {
		select {
		case err := <-ran:
			t.Fatalf("Run returned after %d checks: %v", i, err)
		case <-tick.C:
		}
		if got, err := s.Lead(ctx, p2, 0, time.Second); err != nil {
			t.Fatal(err)
		} else if got != 0 {
			t.Fatalf("after %.2fs another process took a new term (%d): the leader's 1 s term ran out", float64(i+1)/4, got)
		}
	}
	stop()
	if err := <-ran; err != context.Canceled {
		t.Errorf("Run ended with %v, want context.Canceled", err)
	}
}

// TestLeaderStepsDownWhenItsTermIsOver: the wiring a client's session
// runs for a term (Leader.Lead: the rounds and the promoter) returns once
// the term is over (here, resigned as another process would find it run
// out), and says so in the log.
func TestLeaderStepsDownWhenItsTermIsOver(t *testing.T) {
	ctx := context.Background()
	pool := testkit.DB(t)
	s, owner, term := leaderOf(t, pool)
	var logs lockedBuffer
	var rounds atomicCounter
	l := NewLeader(Config{Store: s, Logger: slog.New(slog.NewTextHandler(&logs, nil)), Every: 20 * time.Millisecond,
		LeaderLease: 10 * time.Second, OnRotate: func([]storage.RingAction) { rounds.add() }})
	done := make(chan struct{})
	go func() {
		defer close(done)
		l.Lead(ctx, owner, term)
	}()
	testkit.WaitFor(t, "two rounds under the term", 10*time.Second, func() bool { return rounds.get() >= 2 })
	select {
	case <-done:
		t.Fatal("Lead returned while its term ran")
	default:
	}
	if err := s.Resign(ctx, owner, term); err != nil {
		t.Fatal(err)
	}
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("Lead did not return after its term was over")
	}
	if out := logs.String(); !strings.Contains(out, "this process no longer leads") || !strings.Contains(out, fmt.Sprintf("term=%d", term)) {
		t.Fatalf("the leader did not say it steps down from term %d:\n%s", term, out)
	}
}
