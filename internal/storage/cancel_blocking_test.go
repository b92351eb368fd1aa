package storage

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/millrace/millrace/internal/testkit"
)

// TestCancelBlockingSparesWriters: the leader names the readers of the
// ring at its round's start and cancels, while its reclaim waits, those of
// them that block it. A pooled session named then may since run a write
// (an insert holds one slot) that blocks the reclaim, held or queued ahead
// of it; cancelling it failed that write (an enqueue of the bench's mix
// failed with 57014 at 800 jobs/s). Only a backend that holds partitions
// of two slots or more when the cancel is sent is cancelled. Reading what
// a backend holds must not wait behind the reclaim either.
func TestCancelBlockingSparesWriters(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	url := testkit.DBURL(t)
	pool, err := pgxpool.New(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	s := &Store{Pool: pool}

	// hold opens a transaction that locks tables, then runs a long
	// statement; it returns the backend's pid and the statement's error.
	hold := func(tables ...string) (int32, <-chan error) {
		t.Helper()
		c, err := pgx.Connect(ctx, url)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close(context.Background()) })
		tx, err := c.Begin(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, tb := range tables {
			if _, err := tx.Exec(ctx, "LOCK TABLE millrace."+tb+" IN ACCESS SHARE MODE"); err != nil {
				t.Fatal(err)
			}
		}
		done := make(chan error, 1)
		go func() {
			_, err := tx.Exec(ctx, "SELECT pg_sleep(20)")
			done <- err
		}()
		return int32(c.PgConn().PID()), done
	}
	reader, readerDone := hold("job_0", "job_1") // two slots: a reader
	writer, writerDone := hold("job_0")          // one slot: a write path

	w, err := pool.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Release()
	var waiter int32
	if err := w.QueryRow(ctx, "SELECT pg_backend_pid()").Scan(&waiter); err != nil {
		t.Fatal(err)
	}
	locked := make(chan error, 1)
	go func() {
		tx, err := w.Begin(ctx)
		if err == nil {
			_, err = tx.Exec(ctx, "LOCK TABLE millrace.job_0 IN ACCESS EXCLUSIVE MODE")
			tx.Rollback(ctx)
		}
		locked <- err
	}()
	for { // until the reclaim's stand-in waits on both
		var n int
		if err := pool.QueryRow(ctx, "SELECT cardinality(pg_blocking_pids($1))", waiter).Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n >= 2 {
			break
		}
		select {
		case err := <-locked:
			t.Fatalf("the waiter stopped waiting: %v", err)
		default:
		}
		if ctx.Err() != nil {
			t.Fatal("the waiter never waited on both sessions")
		}
	}

	// Counting what each holds opens no partition: it does not queue
	// behind the waiting reclaim (it did, through pg_get_expr).
	hctx, hcancel := context.WithTimeout(ctx, 5*time.Second)
	hs, err := s.SlotHolders(hctx, []int32{reader, writer})
	hcancel()
	if err != nil {
		t.Fatalf("reading the holders while a reclaim waits: %v", err)
	}
	for _, h := range hs {
		if want := map[int32]int{reader: 2, writer: 1}[h.PID]; h.Slots != want {
			t.Fatalf("backend %d holds %d slots; want %d", h.PID, h.Slots, want)
		}
	}
	got, err := s.CancelBlocking(ctx, waiter, []int32{reader, writer})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got, []int32{reader}) {
		t.Fatalf("cancelled %v; want only the reader %d (the writer %d holds one slot)", got, reader, writer)
	}
	var pgErr *pgconn.PgError
	if err := <-readerDone; !errors.As(err, &pgErr) || pgErr.Code != "57014" {
		t.Fatalf("the reader's statement ended with %v; want a cancel (57014)", err)
	}
	select {
	case err := <-writerDone:
		t.Fatalf("the writer's statement ended (%v); it must run on", err)
	default:
	}
	if _, err := pool.Exec(ctx, "SELECT pg_cancel_backend($1)", writer); err != nil {
		t.Fatal(err)
	}
	<-writerDone
	if err := <-locked; err != nil {
		t.Fatalf("the waiter: %v", err)
	}
}
