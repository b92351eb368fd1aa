package storage

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// slotsHeld returns, per slot, the partitions of the ring (millrace.slot_tables)
// on which backend pid holds a lock: what keeps that slot from being
// reclaimed while pid's transaction is open.
func slotsHeld(t *testing.T, pool *pgxpool.Pool, pid int) map[int][]string {
	t.Helper()
	rows, err := pool.Query(context.Background(), `
		SELECT DISTINCT s.slot, c.relname || ' (' || l.mode || ')' FROM pg_locks l
		JOIN pg_class c ON c.oid = l.relation
		JOIN (SELECT g AS slot, x::regclass::oid AS rel FROM generate_series(0, millrace.slots() - 1) g,
		      unnest(millrace.slot_tables(g)) x) s ON s.rel = l.relation
		WHERE l.locktype = 'relation' AND l.pid = $1
		ORDER BY 1, 2`, pid)
	if err != nil {
		t.Fatal(err)
	}
	held := map[int][]string{}
	for rows.Next() {
		var slot int
		var rel string
		if err := rows.Scan(&slot, &rel); err != nil {
			t.Fatal(err)
		}
		held[slot] = append(held[slot], rel)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return held
}

func describeHeld(held map[int][]string) string {
	var slots []int
	for s := range held {
		slots = append(slots, s)
	}
	sort.Ints(slots)
	var b strings.Builder
	for _, s := range slots {
		fmt.Fprintf(&b, "slot %d: %s; ", s, strings.Join(held[s], ", "))
	}
	return b.String()
}

// turnRing rotates and reclaims until slot want is current and every other
// slot has been current once and holds rows (so that no statement is
// spared opening a partition because it never existed in a plan).
func turnRing(t *testing.T, s *Store, pool *pgxpool.Pool, want int16) {
	t.Helper()
	ctx := context.Background()
	for i := 0; i < 12; i++ {
		st, err := Ring(ctx, pool)
		if err != nil {
			t.Fatal(err)
		}
		if i >= 4 && st.Current == want {
			return
		}
		enqueue(t, s, pool, "filler")
		rotate(t, s, 0)
	}
	t.Fatalf("slot %d never became current", want)
}

// TestWritePathsHoldOneSlot: a transaction that enqueues, enqueues a
// unique job, or completes a claimed job (CompleteTx) and stays open must
// keep at most one slot of the ring from being reclaimed (DESIGN.md P15:
// no write path holds more than the slot it writes; issue 20.3). Each path
// runs in its own transaction, left open while the test lists the slot
// partitions its backend holds locks on.
func TestWritePathsHoldOneSlot(t *testing.T) {
	ctx := context.Background()
	s, pool := newStore(t)
	turnRing(t, s, pool, 2)
	// A unique key of an older job, so that the unique insert finds a key
	// row (in another slot) and decides on it.
	if _, err := Insert(ctx, pool, []NewJob{{Queue: "u", Kind: "k", Args: []byte(`{}`), MaxAttempts: 1, UniqueKey: "old"}}, false); err != nil {
		t.Fatal(err)
	}
	rotate(t, s, 0)
	enqueue(t, s, pool, "done")
	batch, err := s.claimBatch(ctx, "done", 7, 1, false, noLimit)
	if err != nil || batch == nil {
		t.Fatalf("claim: %v %v", batch, err)
	}
	rotate(t, s, 0) // the batch's tick and the ack go to different slots

	paths := []struct {
		name string
		run  func(tx pgx.Tx) error
	}{
		{"plain enqueue", func(tx pgx.Tx) error {
			_, err := s.Enqueue(ctx, tx, NewJob{Queue: "q", Kind: "k", Args: []byte(`{}`), MaxAttempts: 1}, false)
			return err
		}},
		{"unique enqueue, new key", func(tx pgx.Tx) error {
			_, err := Insert(ctx, tx, []NewJob{{Queue: "u", Kind: "k", Args: []byte(`{}`), MaxAttempts: 1, UniqueKey: "k1"}}, false)
			return err
		}},
		{"unique enqueue, duplicate key", func(tx pgx.Tx) error {
			r, err := Insert(ctx, tx, []NewJob{{Queue: "u", Kind: "k", Args: []byte(`{}`), MaxAttempts: 1, UniqueKey: "old"}}, false)
			if err == nil && !r[0].Duplicate {
				err = fmt.Errorf("the key's job is unfinished: want a duplicate, got %+v", r[0])
			}
			return err
		}},
		{"CompleteTx", func(tx pgx.Tx) error {
			return Complete(ctx, tx, 7, batch, &batch.Jobs[0], time.Now())
		}},
	}
	for _, p := range paths {
		t.Run(p.name, func(t *testing.T) {
			tx, err := pool.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.ReadCommitted})
			if err != nil {
				t.Fatal(err)
			}
			defer tx.Rollback(ctx)
			var pid int
			if err := tx.QueryRow(ctx, "SELECT pg_backend_pid()").Scan(&pid); err != nil {
				t.Fatal(err)
			}
			if err := p.run(tx); err != nil {
				t.Fatal(err)
			}
			held := slotsHeld(t, pool, pid)
			t.Logf("%s holds %s", p.name, describeHeld(held))
			if len(held) > 1 {
				t.Errorf("an open transaction that did a %s holds %d slots of the ring (want at most 1): %s",
					p.name, len(held), describeHeld(held))
			}
		})
	}
}
