package maint

import (
	"context"
	"fmt"
	"log/slog"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/millrace/millrace/internal/storage"
	"github.com/millrace/millrace/internal/testkit"
)

// TestRingReaderLimit: a session reads the queue's tables in a
// transaction it leaves open (BEGIN; SELECT count(*) FROM millrace.jobs),
// which holds every slot of the ring. With RingReaderLimit off, the leader
// names it (pid, the slots it holds) and leaves it alone: it still runs
// after several rounds past what the limit would have been. With the
// limit set, the leader says when it will end it, ends it once its
// transaction is older than the limit (it was idle in its transaction:
// terminated), logs that at level Error, and the ring is reclaimed.
func TestRingReaderLimit(t *testing.T) {
	const limit = time.Second
	ctx := context.Background()
	url, pool, s := turnedRing(t, true) // every slot has been current and holds a job
	// reader opens a session holding the ring and returns it with its pid.
	reader := func() (*pgx.Conn, int32) {
		conn, err := pgx.Connect(ctx, url)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { conn.Close(context.Background()) })
		var pid int32
		if err := conn.QueryRow(ctx, "SELECT pg_backend_pid()").Scan(&pid); err != nil {
			t.Fatal(err)
		}
		if _, err := conn.Exec(ctx, "BEGIN; SELECT count(*) FROM millrace.jobs"); err != nil {
			t.Fatal(err)
		}
		return conn, pid
	}
	// xactAge is how long pid's transaction has been open (0: none).
	xactAge := func(pid int32) time.Duration {
		var secs *float64
		if err := pool.QueryRow(ctx, "SELECT extract(epoch FROM clock_timestamp() - xact_start)::float8 FROM pg_stat_activity WHERE pid = $1", pid).Scan(&secs); err != nil && err != pgx.ErrNoRows {
			t.Fatal(err)
		}
		if secs == nil {
			return 0
		}
		return time.Duration(*secs * float64(time.Second))
	}

	t.Run("off", func(t *testing.T) {
		conn, pid := reader()
		var logs lockedBuffer
		m := New(Config{Store: s, Logger: slog.New(slog.NewTextHandler(&logs, nil)), RotateAfter: time.Nanosecond, LogEvery: time.Nanosecond})
		var out string
		testkit.WaitFor(t, "the reader's transaction to be 3 limits old while the leader names it", 30*time.Second, func() bool {
			if err := m.Step(ctx); err != nil {
				t.Fatal(err)
			}
			logs.mu.Lock()
			out = logs.b.String()
			logs.mu.Unlock()
			return xactAge(pid) > 3*limit && strings.Contains(out, fmt.Sprintf("pid %d (", pid))
		}, func() string { return "the log:\n" + out })
		if !strings.Contains(out, "a reader of the queue's tables") || !strings.Contains(out, "RingReaderLimit bounds it; it is off") {
			t.Fatalf("the warning does not say pid %d reads the ring and that nothing bounds it:\n%s", pid, out)
		}
		if strings.Contains(out, "level=ERROR") {
			t.Fatalf("the leader ended something with RingReaderLimit off:\n%s", out)
		}
		var n int
		if err := conn.QueryRow(ctx, "SELECT count(*) FROM millrace.jobs").Scan(&n); err != nil {
			t.Fatalf("the reader was ended with RingReaderLimit off: %v", err)
		}
		conn.Exec(ctx, "ROLLBACK")
	})

	t.Run("on", func(t *testing.T) {
		conn, pid := reader()
		var logs lockedBuffer
		var ended []Ended
		var reclaimedAfter bool
		m := New(Config{Store: s, Logger: slog.New(slog.NewTextHandler(&logs, nil)), RotateAfter: time.Nanosecond, LogEvery: time.Nanosecond,
			RingReaderLimit: limit,
			OnEndReader: func(p int32, how Ended) {
				if p == pid {
					ended = append(ended, how)
				}
			},
			OnRotate: func(as []storage.RingAction) {
				for _, a := range as {
					if a.Action == storage.RingReclaimed && len(ended) > 0 {
						reclaimedAfter = true
					}
				}
			}})
		start := time.Now()
		var out string
		testkit.WaitFor(t, "the reader to be ended and the ring reclaimed", limit+15*time.Second, func() bool {
			if err := m.Step(ctx); err != nil {
				t.Fatal(err)
			}
			logs.mu.Lock()
			out = logs.b.String()
			logs.mu.Unlock()
			return reclaimedAfter
		}, func() string { return fmt.Sprintf("ended %v; the log:\n%s", ended, out) })
		t.Logf("reader ended (%v) and ring reclaimed %s after it began holding (limit %s)", ended, time.Since(start).Round(time.Millisecond), limit)
		if len(ended) != 1 || ended[0] != Terminated {
			t.Fatalf("the reader idle in its transaction was %v; want terminated once", ended)
		}
		if !strings.Contains(out, fmt.Sprintf("pid %d (", pid)) || !strings.Contains(out, "it is ended once its transaction is 1s old") {
			t.Fatalf("the warning before the end does not name pid %d and when it is ended:\n%s", pid, out)
		}
		if !regexp.MustCompile(fmt.Sprintf(`level=ERROR msg="millrace: terminated a reader of the queue's tables[^"]*" pid=%d role=\S+ application=\S* state="idle in transaction" transaction_age=\S+`, pid)).MatchString(out) {
			t.Fatalf("no Error line naming pid %d, its role, application, state and age:\n%s", pid, out)
		}
		testkit.WaitFor(t, "the reader's backend to be gone", 10*time.Second, func() bool { return xactAge(pid) == 0 })
		if _, err := conn.Exec(ctx, "SELECT 1"); err == nil {
			t.Fatal("the reader's session still runs statements after it was terminated")
		}
	})
}

// TestRingReaderLimitCancelsARunningRead: a reader of the ring that is
// running a statement when its transaction passes RingReaderLimit is
// cancelled, not terminated: the statement fails, its transaction aborts
// and lets go of the ring, and the session lives on.
func TestRingReaderLimitCancelsARunningRead(t *testing.T) {
	const limit = time.Second
	ctx := context.Background()
	url, _, s := turnedRing(t, false)
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var pid int32
	if err := conn.QueryRow(ctx, "SELECT pg_backend_pid()").Scan(&pid); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Exec(ctx, "BEGIN; SELECT count(*) FROM millrace.jobs"); err != nil {
		t.Fatal(err)
	}
	read := make(chan error, 1)
	go func() {
		_, err := conn.Exec(ctx, "SELECT pg_sleep(60)") // a long read, in the transaction that holds the ring
		read <- err
	}()
	var ended []Ended
	var logs lockedBuffer
	m := New(Config{Store: s, Logger: slog.New(slog.NewTextHandler(&logs, nil)), RotateAfter: time.Nanosecond, LogEvery: time.Nanosecond,
		RingReaderLimit: limit, OnEndReader: func(p int32, how Ended) {
			if p == pid {
				ended = append(ended, how)
			}
		}})
	testkit.WaitFor(t, "the reader to be ended", limit+15*time.Second, func() bool {
		if err := m.Step(ctx); err != nil {
			t.Fatal(err)
		}
		return len(ended) > 0
	}, func() string { logs.mu.Lock(); defer logs.mu.Unlock(); return logs.b.String() })
	if ended[0] != Cancelled {
		t.Fatalf("the running reader was %v; want cancelled", ended)
	}
	if err := <-read; err == nil || !strings.Contains(err.Error(), "canceling statement") {
		t.Fatalf("the cancelled read returned %v", err)
	}
	if _, err := conn.Exec(ctx, "ROLLBACK"); err != nil {
		t.Fatal(err)
	}
	var one int
	if err := conn.QueryRow(ctx, "SELECT 1").Scan(&one); err != nil {
		t.Fatalf("the cancelled reader's session is gone: %v", err)
	}
	var reclaimed bool
	testkit.WaitFor(t, "a reclaim after the cancel", 10*time.Second, func() bool {
		as, err := s.Rotate(ctx, 0, 0, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, a := range as {
			reclaimed = reclaimed || a.Action == storage.RingReclaimed
		}
		return reclaimed
	})
}
