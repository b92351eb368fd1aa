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

// TestRescueReleasesADeadHoldersBatch: a process claims a batch and dies
// (its lease runs out). A round releases the batch to other claimers,
// says so, and reports it (OnRelease) as the dead holder's; another
// process then claims the job.
func TestRescueReleasesADeadHoldersBatch(t *testing.T) {
	ctx := context.Background()
	pool := testkit.DB(t)
	s := &storage.Store{Pool: pool}
	id, err := s.Enqueue(ctx, pool, storage.NewJob{Queue: "q", Kind: "k", Args: []byte(`{}`), MaxAttempts: 3}, false)
	if err != nil {
		t.Fatal(err)
	}
	lim := storage.Limits{MaxJobs: 10, MaxBytes: 1 << 20}
	dead, err := s.Register(ctx, "dead", "h", 1, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	bs, err := s.Claim(ctx, "q", dead, 1, false, lim)
	if err != nil || len(bs) != 1 || len(bs[0].Jobs) != 1 || bs[0].Jobs[0].ID != id {
		t.Fatalf("claim: %v %+v", err, bs)
	}
	var logs lockedBuffer
	var released []storage.Released
	m := New(Config{Store: s, Logger: slog.New(slog.NewTextHandler(&logs, nil)),
		OnRelease: func(r storage.Released) { released = append(released, r) }})
	testkit.WaitFor(t, "the dead holder's batch to be released", 30*time.Second, func() bool {
		if err := m.Step(ctx); err != nil {
			t.Fatal(err)
		}
		return len(released) > 0
	}, logs.String)
	r := released[0]
	if len(released) != 1 || r.Reason != storage.ReleaseDead || r.Owner != dead || r.TickID != bs[0].TickID || r.Queue != "q" {
		t.Fatalf("released %+v; want the batch of tick %d held by %d, dead", released, bs[0].TickID, dead)
	}
	if out := logs.String(); !strings.Contains(out, "released a batch to other claimers") || !strings.Contains(out, "reason=dead") {
		t.Fatalf("the release is not logged:\n%s", out)
	}
	other, err := s.Register(ctx, "other", "h", 2, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	bs, err = s.Claim(ctx, "q", other, 2, false, lim)
	if err != nil || len(bs) != 1 || len(bs[0].Jobs) != 1 || bs[0].Jobs[0].ID != id {
		t.Fatalf("another process's claim after the release: %v %+v; want job %d", err, bs, id)
	}
}
