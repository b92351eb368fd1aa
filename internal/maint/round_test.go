package maint

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"

	"github.com/millrace/millrace/internal/storage"
	"github.com/millrace/millrace/internal/testkit"
)

// TestARoundRunsItsStepsInOrder: a round runs every step of its table in
// order; a step's error is logged with the step's name and the round goes
// on; a step refused for the term ends the round with ErrLostLead, and no
// step after it runs.
func TestARoundRunsItsStepsInOrder(t *testing.T) {
	var logs lockedBuffer
	m := New(Config{Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	var ran []string
	mark := func(name string, err error) step {
		return step{name, func(_ *Maintainer, _ context.Context, _ *round) error {
			ran = append(ran, name)
			return err
		}}
	}
	err := m.run(context.Background(), []step{
		mark("first", nil),
		mark("breaking", errors.New("boom")),
		mark("third", nil),
		mark("fenced", storage.ErrFenced),
		mark("never", nil),
	})
	if !errors.Is(err, ErrLostLead) {
		t.Fatalf("a round with a fenced step returned %v, want ErrLostLead", err)
	}
	if got := strings.Join(ran, ","); got != "first,breaking,third,fenced" {
		t.Fatalf("steps run: %s; want first,breaking,third,fenced", got)
	}
	if out := logs.String(); !strings.Contains(out, `msg="millrace: breaking failed" err=boom`) {
		t.Fatalf("the failed step is not logged by name:\n%s", out)
	}
}

// TestAStepRefusedForTheTermEndsTheRound: the leader's term ends while a
// round runs (after its renewal: here, as the periodic step builds its
// job). The periodic slot is refused for the term, Step returns
// ErrLostLead, and the rotation, later in the round, does not run; the
// next round is refused at its renewal.
func TestAStepRefusedForTheTermEndsTheRound(t *testing.T) {
	ctx := context.Background()
	pool := testkit.DB(t)
	s, owner, term := leaderOf(t, pool)
	per := []Periodic{{Name: "resigns", Schedule: monthly{}, RunOnStart: true, Job: func() (storage.NewJob, error) {
		if err := s.Resign(ctx, owner, term); err != nil {
			t.Error(err)
		}
		return storage.NewJob{Queue: "q", Kind: "resigns", Args: []byte(`{}`), MaxAttempts: 1}, nil
	}}}
	rotated := false
	m := New(Config{Store: s, Logger: slog.New(slog.DiscardHandler), Owner: owner, Term: term, Periodic: per,
		OnRotate: func([]storage.RingAction) { rotated = true }})
	if err := m.Step(ctx); !errors.Is(err, ErrLostLead) {
		t.Fatalf("Step returned %v once its term ended, want ErrLostLead", err)
	}
	if rotated {
		t.Fatal("the round went on to rotate after a step was refused for its term")
	}
	var n int
	if err := pool.QueryRow(ctx, "SELECT count(*) FROM millrace.periodic WHERE name = 'resigns'").Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n != 0 {
		t.Fatalf("%d periodic slots enqueued under a term that was over", n)
	}
	if err := m.Step(ctx); !errors.Is(err, ErrLostLead) || rotated {
		t.Fatalf("the next round returned %v (rotated %t), want ErrLostLead at its renewal", err, rotated)
	}
}
