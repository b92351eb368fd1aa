package pool

import (
	"context"
	"github.com/millrace/millrace/internal/testkit"
	"io"
	"log/slog"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/millrace/millrace/internal/pgtest"
	"github.com/millrace/millrace/internal/schema"
	"github.com/millrace/millrace/internal/storage"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

// TestNoJobStartsWhileTheLeaseIsInDoubt: a job waits in the process's
// buffer (claimed while another runs) when the process stops being sure
// it is alive (Fresh says no: its lease was last renewed half a lease ago
// or more, as after a SIGSTOP). The job does not start, even once its
// worker is free, until a heartbeat says the process is alive; then it
// runs.
func TestNoJobStartsWhileTheLeaseIsInDoubt(t *testing.T) {
	ctx := context.Background()
	db, err := pgxpool.New(ctx, pgtest.NewDatabase(t))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := schema.Up(ctx, db, 0); err != nil {
		t.Fatal(err)
	}
	s := &storage.Store{Pool: db}
	owner, err := s.Register(ctx, "p", "h", 1, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	enqueue := func() int64 {
		t.Helper()
		id, err := s.Enqueue(ctx, db, storage.NewJob{Queue: "q", Kind: "k", Args: []byte(`{}`), Priority: 1, MaxAttempts: 3}, false)
		if err != nil {
			t.Fatal(err)
		}
		return id
	}
	var fresh atomic.Bool
	fresh.Store(true)
	var claimed atomic.Int64
	started := make(chan int64, 4)
	release := make(chan struct{})
	first := enqueue()
	p := New(Config{Store: s, Queues: map[string]int{"q": 1}, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
		Fresh: fresh.Load, OnClaim: func(string, time.Duration, int) { claimed.Add(1) },
		Handle: func(ctx context.Context, run *Run) error {
			started <- run.Job.ID
			if run.Job.ID == first {
				<-release
			}
			return nil
		}})
	p.SetOwner(owner)
	p.Start()
	defer p.Stop(ctx)
	wait := func(what string, cond func() bool) {
		t.Helper()
		testkit.WaitFor(t, what, 30*time.Second, cond)
	}
	if id := <-started; id != first {
		t.Fatalf("job %d started first, want %d", id, first)
	}
	second := enqueue()
	p.Wake("q")
	wait("the second job to be claimed into the buffer", func() bool { return claimed.Load() == 2 })
	fresh.Store(false)
	close(release)
	wait("the first job's outcome", func() bool {
		var n int
		db.QueryRow(ctx, "SELECT count(*) FROM millrace.history WHERE id = $1", first).Scan(&n)
		return n == 1
	})
	// The worker is free; the second job must still wait.
	select {
	case id := <-started:
		t.Fatalf("job %d started while the process's lease was in doubt", id)
	case <-time.After(300 * time.Millisecond):
	}
	fresh.Store(true)
	select {
	case id := <-started:
		if id != second {
			t.Fatalf("job %d started, want %d", id, second)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the second job did not start once the lease was renewed")
	}
}
