package maint

import (
	"bytes"
	"context"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/millrace/millrace/internal/storage"
	"github.com/millrace/millrace/internal/testkit"
)

func TestMain(m *testing.M) { testkit.Main(m) }

type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

// TestRotationHeldBackIsLogged: a producer transaction left open holds its
// slot; the leader keeps rotating the other slots and says, once per
// LogEvery, which backend holds the slot it cannot reclaim.
func TestRotationHeldBackIsLogged(t *testing.T) {
	ctx := context.Background()
	pool, err := pgxpool.New(ctx, testkit.DBURL(t))
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	s := &storage.Store{Pool: pool}
	tx, err := pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx)
	if _, err := s.Enqueue(ctx, tx, storage.NewJob{Queue: "q", Kind: "k", Args: []byte(`{}`), MaxAttempts: 1}, false); err != nil {
		t.Fatal(err)
	}
	var pid int
	tx.QueryRow(ctx, "SELECT pg_backend_pid()").Scan(&pid)
	var logs lockedBuffer
	var rounds [][]storage.RingAction
	m := New(Config{Store: s, Logger: slog.New(slog.NewTextHandler(&logs, nil)), RotateAfter: time.Nanosecond, LogEvery: time.Hour,
		OnRotate: func(a []storage.RingAction) { rounds = append(rounds, a) }})
	for i := 0; i < 8; i++ {
		m.Step(ctx)
	}
	st, err := storage.Ring(ctx, pool)
	if err != nil {
		t.Fatal(err)
	}
	if st.Rotations < 6 {
		t.Fatalf("%d rotations in 8 rounds with one slot held: the ring must turn on the others", st.Rotations)
	}
	out := logs.b.String()
	if n := strings.Count(out, "rotation is held back"); n != 1 {
		t.Fatalf("%d warnings in 8 rounds with LogEvery 1h; want 1:\n%s", n, out)
	}
	if !strings.Contains(out, "slot 0 cannot be reclaimed: in use by pid "+strconv.Itoa(pid)) {
		t.Fatalf("the warning does not name the holder, pid %d:\n%s", pid, out)
	}
}
