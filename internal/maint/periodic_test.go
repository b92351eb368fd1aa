package maint

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/millrace/millrace/internal/storage"
	"github.com/millrace/millrace/internal/testkit"
)

// monthly is a schedule whose slots are the first instant of each month,
// UTC.
type monthly struct{}

func (monthly) Next(t time.Time) time.Time {
	t = t.UTC()
	return time.Date(t.Year(), t.Month()+1, 1, 0, 0, 0, 0, time.UTC)
}

// TestRunOnStartRemembersOldSlots: a monthly job with RunOnStart runs this
// month's slot once; when history's expiry has forgotten every slot older
// than a week, a leader that starts later still knows the job ran this
// month and does not run it again.
func TestRunOnStartRemembersOldSlots(t *testing.T) {
	ctx := context.Background()
	pool := testkit.DB(t)
	s := &storage.Store{Pool: pool}
	per := []Periodic{{Name: "monthly", Schedule: monthly{}, RunOnStart: true, Job: func() (storage.NewJob, error) {
		return storage.NewJob{Queue: "q", Kind: "monthly", Args: []byte(`{}`), MaxAttempts: 1}, nil
	}}}
	jobs := func() (n int) {
		t.Helper()
		if err := pool.QueryRow(ctx, "SELECT count(*) FROM millrace.periodic WHERE name = 'monthly'").Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	first := New(Config{Store: s, Logger: slog.New(slog.DiscardHandler), Periodic: per})
	if err := first.runPeriodic(ctx, &round{}); err != nil {
		t.Fatal(err)
	}
	if n := jobs(); n != 1 {
		t.Fatalf("RunOnStart enqueued %d slots, want this month's", n)
	}
	// The slot was enqueued more than a week ago, as for a monthly job
	// late in its month; expiry forgets old slots.
	if _, err := pool.Exec(ctx, "UPDATE millrace.periodic SET at = now() - interval '20 days'"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.ExpireHistory(ctx, 0); err != nil {
		t.Fatal(err)
	}
	again := New(Config{Store: s, Logger: slog.New(slog.DiscardHandler), Periodic: per})
	if err := again.runPeriodic(ctx, &round{}); err != nil {
		t.Fatal(err)
	}
	var enqueued int
	if err := pool.QueryRow(ctx, "SELECT count(*) FROM millrace.job WHERE kind = 'monthly'").Scan(&enqueued); err != nil {
		t.Fatal(err)
	}
	if enqueued != 1 {
		t.Fatalf("the monthly job was enqueued %d times for one month; a restart after expiry ran its slot again", enqueued)
	}
}
