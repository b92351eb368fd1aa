package maint

import (
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/millrace/millrace/internal/storage"
	"github.com/millrace/millrace/internal/testkit"
)

// TestTallyOncePerTallyEvery: a round tallies history counts when the
// newest tally round is TallyEvery old, and says so; the leader's next
// round within TallyEvery does not ask again, and another leader's round
// finds it tallied and writes no round.
func TestTallyOncePerTallyEvery(t *testing.T) {
	ctx := context.Background()
	pool := testkit.DB(t)
	s := &storage.Store{Pool: pool}
	// The newest round (made with the schema) an hour old.
	if _, err := pool.Exec(ctx, "UPDATE millrace.tally_round SET at = at - interval '1 hour'"); err != nil {
		t.Fatal(err)
	}
	rounds := func() (n int) {
		t.Helper()
		if err := pool.QueryRow(ctx, "SELECT count(*) FROM millrace.tally_round").Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	before := rounds()
	var logs lockedBuffer
	m := New(Config{Store: s, Logger: slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
		TallyEvery: time.Hour})
	if err := m.Step(ctx); err != nil {
		t.Fatal(err)
	}
	if n := rounds(); n != before+1 {
		t.Fatalf("%d tally rounds after a round, want %d", n, before+1)
	}
	if !strings.Contains(logs.String(), "history tallied") {
		t.Fatalf("the tally round is not logged:\n%s", logs.String())
	}
	// The round's own gate: the same leader does not call tally again.
	if _, err := pool.Exec(ctx, "UPDATE millrace.tally_round SET at = at - interval '2 hours'"); err != nil {
		t.Fatal(err)
	}
	if err := m.Step(ctx); err != nil {
		t.Fatal(err)
	}
	if n := rounds(); n != before+1 {
		t.Fatalf("%d tally rounds after a second round within TallyEvery, want %d", n, before+1)
	}
	// The database's gate: another leader finds the newest round recent.
	if _, err := pool.Exec(ctx, "UPDATE millrace.tally_round SET at = at + interval '2 hours'"); err != nil {
		t.Fatal(err)
	}
	if err := New(Config{Store: s, Logger: slog.New(slog.DiscardHandler), TallyEvery: time.Hour}).Step(ctx); err != nil {
		t.Fatal(err)
	}
	if n := rounds(); n != before+1 {
		t.Fatalf("%d tally rounds after another leader's round within TallyEvery, want %d", n, before+1)
	}
}
