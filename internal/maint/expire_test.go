package maint

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/millrace/millrace/internal/storage"
	"github.com/millrace/millrace/internal/testkit"
)

// TestExpiryOncePerMinute: a round expires history: a periodic job's slot
// older than a week, not its newest, is forgotten. The leader's rounds
// within the next minute expire nothing.
func TestExpiryOncePerMinute(t *testing.T) {
	ctx := context.Background()
	pool := testkit.DB(t)
	s := &storage.Store{Pool: pool}
	job := storage.NewJob{Queue: "q", Kind: "p", Args: []byte(`{}`), MaxAttempts: 1}
	day := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	slot := func(n int) {
		t.Helper()
		if _, _, err := s.PeriodicRun(ctx, 0, "daily", day.AddDate(0, 0, n), job); err != nil {
			t.Fatal(err)
		}
		// Enqueued three weeks ago, like every slot before it.
		if _, err := pool.Exec(ctx, "UPDATE millrace.periodic SET at = now() - interval '21 days'"); err != nil {
			t.Fatal(err)
		}
	}
	slots := func() (n int) {
		t.Helper()
		if err := pool.QueryRow(ctx, "SELECT count(*) FROM millrace.periodic WHERE name = 'daily'").Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	slot(0)
	slot(1)
	m := New(Config{Store: s, Logger: slog.New(slog.DiscardHandler)})
	if err := m.Step(ctx); err != nil {
		t.Fatal(err)
	}
	if n := slots(); n != 1 {
		t.Fatalf("%d slots of the periodic job after a round, want its newest only", n)
	}
	slot(2)
	if err := m.Step(ctx); err != nil {
		t.Fatal(err)
	}
	if n := slots(); n != 2 {
		t.Fatalf("%d slots after a second round within the minute, want 2: it expired again", n)
	}
}
