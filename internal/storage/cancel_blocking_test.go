package storage

import (
	"context"
	"errors"
	"slices"
	"strconv"
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
	// The test's bound, on a slow and loaded machine; the held statements
	// sleep far longer, so none ends on its own before it is cancelled.
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	url := testkit.DBURL(t)
	pool, err := pgxpool.New(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	s := &Store{Pool: pool}

	// waitFor polls cond until it holds; it fails the test at ctx's end.
	waitFor := func(what string, cond func() bool) {
		t.Helper()
		for !cond() {
			select {
			case <-ctx.Done():
				t.Fatalf("%s: not before the test's deadline", what)
			case <-time.After(10 * time.Millisecond):
			}
		}
	}

	// hold opens a transaction that locks tables, then runs a long
	// statement; it returns the backend's pid and the statement's error
	// once the server runs the statement. A cancel that reaches a backend
	// between statements is ignored by the server: sent before the
	// statement arrived, it would be lost and the statement run on.
	hold := func(wrote bool, tables ...string) (int32, <-chan error) {
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
		if wrote {
			// An xid, as a transaction that wrote has: a flush or a claim.
			if _, err := tx.Exec(ctx, "SELECT pg_current_xact_id()"); err != nil {
				t.Fatal(err)
			}
		}
		for _, tb := range tables {
			if _, err := tx.Exec(ctx, "LOCK TABLE millrace."+tb+" IN ACCESS SHARE MODE"); err != nil {
				t.Fatal(err)
			}
		}
		pid := int32(c.PgConn().PID())
		done, exited := make(chan error, 1), make(chan struct{})
		t.Cleanup(func() { // before the Close: a running statement ends with ctx
			cancel()
			<-exited
		})
		go func() {
			defer close(exited)
			_, err := tx.Exec(ctx, "SELECT pg_sleep(3600)")
			done <- err
		}()
		waitFor("the statement of backend "+strconv.Itoa(int(pid))+" sleeping", func() bool {
			var sleeping bool
			if err := pool.QueryRow(ctx, `SELECT coalesce(bool_or(state = 'active' AND wait_event = 'PgSleep'), false)
				FROM pg_stat_activity WHERE pid = $1`, pid).Scan(&sleeping); err != nil {
				t.Fatal(err)
			}
			select {
			case err := <-done:
				t.Fatalf("the statement of backend %d ended (%v) before the test went on", pid, err)
			default:
			}
			return sleeping
		})
		return pid, done
	}
	reader, readerDone := hold(false, "job_0", "job_1")  // two slots: a reader
	writer, writerDone := hold(false, "job_0")           // one slot: a write path
	flusher, flusherDone := hold(true, "job_0", "job_1") // two slots, and it wrote: a flush, a claim

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
	waitFor("the reclaim's stand-in waiting on both sessions", func() bool {
		var n int
		if err := pool.QueryRow(ctx, "SELECT cardinality(pg_blocking_pids($1))", waiter).Scan(&n); err != nil {
			t.Fatal(err)
		}
		select {
		case err := <-locked:
			t.Fatalf("the waiter stopped waiting: %v", err)
		default:
		}
		return n >= 3
	})

	// Counting what each holds opens no partition: it does not queue
	// behind the waiting reclaim (it did, through pg_get_expr).
	// Queued behind the reclaim it would wait as long as the reclaim does
	// (here: until the test ends); the bound only keeps a failure short.
	hctx, hcancel := context.WithTimeout(ctx, 20*time.Second)
	hs, err := s.SlotHolders(hctx, []int32{reader, writer, flusher})
	hcancel()
	if err != nil {
		t.Fatalf("reading the holders while a reclaim waits: %v", err)
	}
	for _, h := range hs {
		if want := map[int32]int{reader: 2, writer: 1, flusher: 2}[h.PID]; h.Slots != want {
			t.Fatalf("backend %d holds %d slots; want %d", h.PID, h.Slots, want)
		}
	}
	got, err := s.CancelBlocking(ctx, waiter, []int32{reader, writer, flusher})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got, []int32{reader}) {
		t.Fatalf("cancelled %v; want only the reader %d (the writer %d holds one slot, the flusher %d wrote)", got, reader, writer, flusher)
	}
	var pgErr *pgconn.PgError
	if err := <-readerDone; !errors.As(err, &pgErr) || pgErr.Code != "57014" {
		t.Fatalf("the reader's statement ended with %v; want a cancel (57014)", err)
	}
	for _, w := range []struct {
		pid  int32
		done <-chan error
	}{{writer, writerDone}, {flusher, flusherDone}} {
		select {
		case err := <-w.done:
			t.Fatalf("the statement of backend %d ended (%v); it must run on", w.pid, err)
		default:
		}
	}
	for _, w := range []struct {
		pid  int32
		done <-chan error
	}{{writer, writerDone}, {flusher, flusherDone}} {
		if _, err := pool.Exec(ctx, "SELECT pg_cancel_backend($1)", w.pid); err != nil {
			t.Fatal(err)
		}
		<-w.done
	}
	if err := <-locked; err != nil {
		t.Fatalf("the waiter: %v", err)
	}
}
