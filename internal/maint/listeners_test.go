package maint

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/millrace/millrace/internal/schema"
	"github.com/millrace/millrace/internal/storage"
	"github.com/millrace/millrace/internal/testkit"
)

// TestStoppedListenerIsEnded: the session connection of a millrace
// process (named storage.SessionName of its process, it LISTENs) stops
// reading: its process is stopped.
// Notifications fill its socket and its backend blocks writing them, and
// PostgreSQL's notification queue cannot be emptied past it. The leader
// (the same role) names it and ends it once it has been blocked for
// ListenerStuckAfter; the queue empties.
func TestStoppedListenerIsEnded(t *testing.T) {
	ctx := context.Background()
	base := testkit.EmptyDBURL(t)
	owner, err := pgxpool.New(ctx, base)
	if err != nil {
		t.Fatal(err)
	}
	defer owner.Close()
	if _, err := schema.Up(ctx, owner, 0); err != nil {
		t.Fatal(err)
	}
	workerURL := loginRole(t, owner, base, "w", "millrace_worker")
	// The stopped process's session: it names itself as the session of
	// process 987654 and listens, then nothing on this side reads from it.
	stopped, err := pgx.Connect(ctx, workerURL)
	if err != nil {
		t.Fatal(err)
	}
	defer stopped.Close(ctx)
	if _, err := stopped.Exec(ctx, "SELECT set_config('application_name', $1, false)", storage.SessionName(987654)); err != nil {
		t.Fatal(err)
	}
	if _, err := stopped.Exec(ctx, "LISTEN millrace"); err != nil {
		t.Fatal(err)
	}
	pid := int32(stopped.PgConn().PID())
	// Notify until its backend is blocked writing and the queue is in use.
	deadline := time.Now().Add(60 * time.Second)
	for {
		var wait *string
		var usage float64
		if err := owner.QueryRow(ctx, "SELECT (SELECT wait_event FROM pg_stat_activity WHERE pid = $1), pg_notification_queue_usage()", pid).Scan(&wait, &usage); err != nil {
			t.Fatal(err)
		}
		if wait != nil && *wait == "ClientWrite" && usage > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the listener's backend is not blocked writing (wait event %v, queue usage %v)", wait, usage)
		}
		if _, err := owner.Exec(ctx, "SELECT pg_notify('millrace', g || repeat('x', 7000)) FROM generate_series(1, 100) g"); err != nil {
			t.Fatal(err)
		}
	}
	pool, err := pgxpool.New(ctx, workerURL)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	var logs lockedBuffer
	ended := make(chan int32, 1)
	m := New(Config{Store: &storage.Store{Pool: pool}, Logger: slog.New(slog.NewTextHandler(&logs, nil)),
		ListenerStuckAfter: time.Second, OnEndListener: func(p int32) { ended <- p }})
	deadline = time.Now().Add(30 * time.Second)
	for done := false; !done; {
		m.Step(ctx)
		select {
		case p := <-ended:
			if p != pid {
				t.Fatalf("ended backend %d, want %d", p, pid)
			}
			done = true
		case <-time.After(100 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("the stopped listener was not ended:\n%s", logs.b.String())
		}
	}
	logs.mu.Lock()
	out := logs.b.String()
	logs.mu.Unlock()
	if !strings.Contains(out, fmt.Sprintf("pid=%d", pid)) || !strings.Contains(out, "process=987654") {
		t.Fatalf("the log does not name the backend and its process:\n%s", out)
	}
	var usage float64
	testkit.WaitFor(t, "the notification queue to empty", 30*time.Second, func() bool {
		owner.QueryRow(ctx, "SELECT pg_notification_queue_usage()").Scan(&usage)
		return usage == 0
	}, func() string { return fmt.Sprintf("usage %v", usage) })
}
